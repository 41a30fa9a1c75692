//! What the page shows, collected from a report before anything is
//! rendered: lanes of workers (with several), lanes of runs grouped by
//! thread, lanes of watchers, each a few rows of marks and spans placed at
//! axis positions. Pure data; `html` renders it.

use pai_runtime::store::StoredThread;

use super::axis::{Axis, Pos};

/// What an item stands for; its name is the item's `data-kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Episode,
    Step,
    Phase,
    Hook,
    Attempt,
    Tool,
    Commit,
    End,
    LiveText,
    Live,
    /// A fault the simulator carried out on a worker or its link.
    Fault,
    /// How long a fault lasted (down, cut off, held, paused).
    Outage,
    /// An episode, on the lane of the worker that held it.
    Held,
    /// A worker's event its run's story leaves out (it no longer held the
    /// run), or a write of it the store refused.
    Stale,
}

impl Kind {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Kind::Episode => "episode",
            Kind::Step => "step",
            Kind::Phase => "phase",
            Kind::Hook => "hook",
            Kind::Attempt => "attempt",
            Kind::Tool => "tool",
            Kind::Commit => "commit",
            Kind::End => "end",
            Kind::LiveText => "live-text",
            Kind::Live => "live",
            Kind::Fault => "fault",
            Kind::Outage => "outage",
            Kind::Held => "held",
            Kind::Stale => "stale",
        }
    }
}

/// A mark (`end == None`) or a span on a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Item {
    pub(super) kind: Kind,
    /// How it went (`ok`, `failed`, `output`, an outcome…), a CSS class.
    pub(super) status: &'static str,
    pub(super) start: Pos,
    pub(super) end: Option<Pos>,
    pub(super) label: String,
    /// The full story, shown on hover.
    pub(super) detail: String,
    /// The worker whose event it is (`data-worker`), among workers.
    pub(super) worker: Option<String>,
    /// More `data-*` attributes: name (without `data-`) and value.
    pub(super) data: Vec<(&'static str, String)>,
}

impl Item {
    /// A mark or span with no worker and no more data.
    pub(super) fn new(
        kind: Kind,
        status: &'static str,
        (start, end): (Pos, Option<Pos>),
        label: String,
        detail: String,
    ) -> Item {
        Item {
            kind,
            status,
            start,
            end,
            label,
            detail,
            worker: None,
            data: Vec::new(),
        }
    }
}

/// One row of a lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Row {
    pub(super) name: String,
    /// The row's CSS class (its height, mostly).
    pub(super) class: &'static str,
    pub(super) items: Vec<Item>,
}

/// One worker's turn at holding a run: its name and the episodes in a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Holder {
    pub(super) worker: String,
    pub(super) episodes: Vec<u32>,
}

/// One run, and who held it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RunLane {
    pub(super) run: String,
    /// The workers that held the run's episodes, in order (`local` for
    /// every episode while there is one process).
    pub(super) holders: Vec<Holder>,
    /// How the run ended, in words (or that it did not).
    pub(super) ending: String,
    pub(super) rows: Vec<Row>,
}

/// The runs of one thread, in the order they first appear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ThreadLanes {
    pub(super) thread: String,
    pub(super) summary: String,
    pub(super) runs: Vec<RunLane>,
}

/// One stretch of text a watcher received for one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Segment {
    pub(super) run: String,
    pub(super) step: u32,
    pub(super) start: Pos,
    pub(super) end: Pos,
    pub(super) text: String,
    /// How the stretch ended: `finish stop`, `aborted: reason`, or nothing.
    pub(super) note: Option<String>,
}

/// What one watcher received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct WatcherLane {
    pub(super) name: String,
    pub(super) thread: Option<String>,
    pub(super) segments: Vec<Segment>,
    pub(super) rows: Vec<Row>,
}

/// One worker of several: faults, the episodes it held, what it did
/// without a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct WorkerLane {
    pub(super) name: String,
    pub(super) summary: String,
    pub(super) rows: Vec<Row>,
}

/// Everything on the timeline, and its axis.
#[derive(Debug)]
pub(super) struct Model {
    /// Empty while there is one process.
    pub(super) workers: Vec<WorkerLane>,
    pub(super) threads: Vec<ThreadLanes>,
    pub(super) watchers: Vec<WatcherLane>,
    pub(super) axis: Axis,
}

impl Model {
    /// How many run lanes there are.
    pub(super) fn runs(&self) -> usize {
        self.threads.iter().map(|t| t.runs.len()).sum()
    }
}

/// A thread's facts for its group header.
pub(super) fn thread_summary(t: &StoredThread) -> String {
    format!(
        "agent {} · owner {} · incarnation {} · version {} · {} messages",
        t.agent,
        t.owner,
        t.incarnation,
        t.version,
        t.messages.len()
    )
}
