//! The store's change feed (SPEC H1, H5, T7 among workers): a watcher
//! among workers cannot sit in the process that drives its thread (a run
//! moves between workers), so it subscribes at the store. The store host
//! pushes, in the order it applied its requests: one `Committed` per commit
//! on the thread (version order, none skipped, none invented), a run's
//! waits and ends as the store recorded them, and closes the feed when the
//! thread is deleted. The frames are the runtime's own `LiveEvent`s, over
//! turmoil TCP on a port of their own. Stream parts never cross it: live
//! text is released by the worker that streams it, which no watcher among
//! workers is attached to (see README, "Several workers").
//!
//! [`Feeds`] is the store's side (its subscribers, what it told each) and
//! the world's record of what each watcher's client received, for the
//! oracles and the transcript.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pai_runtime::{
    Clock as _, StoreError,
    event::LiveEvent,
    message::Outcome,
    store::{
        AdminOp, AdminReply, CancelTarget, ClientReply, Finish, Op, RunOp, RunReply, RunStatus,
        StoreReply, StoreRequest,
    },
};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use turmoil::net::TcpStream;

use super::wire::{STORE_HOST, read_frame, write_frame};
use crate::world::{VirtualClock, reported};

/// The feed's port on the store host.
pub(super) const FEED_PORT: u16 = 7071;

/// What a watcher's client sends first: its name and the `Open` request
/// that checks its scope (and creates the thread if needed, as `watch`
/// does in one process).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Subscribe {
    pub(super) name: String,
    pub(super) open: StoreRequest,
}

/// What every watcher received (watcher by watcher), and when each saw
/// its feed closed.
pub type Received = (Vec<(String, LiveEvent)>, Vec<(String, u64)>);

/// Both sides of every feed.
#[derive(Debug, Default)]
pub struct Feeds {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The last version told on each thread (whoever listened).
    told: BTreeMap<String, u64>,
    /// Each thread's subscribers: watcher name and its channel.
    subs: BTreeMap<String, Vec<(String, mpsc::UnboundedSender<LiveEvent>)>>,
    /// Per watcher, in subscription order: what the store sent and whether
    /// it closed the feed, and what the client received and when it saw
    /// the close.
    board: Vec<(String, Board)>,
}

#[derive(Debug, Default)]
struct Board {
    sent: usize,
    closed: bool,
    received: Vec<LiveEvent>,
    closed_seen: Option<u64>,
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl State {
    fn board(&mut self, name: &str) -> Option<&mut Board> {
        self.board
            .iter_mut()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b)
    }

    fn push(&mut self, thread: &str, event: &LiveEvent) {
        let Some(subs) = self.subs.get(thread) else {
            return;
        };
        let names: Vec<String> = subs
            .iter()
            .filter(|(_, tx)| tx.send(event.clone()).is_ok())
            .map(|(n, _)| n.clone())
            .collect();
        for n in names {
            if let Some(b) = self.board(&n) {
                b.sent += 1;
            }
        }
    }
}

/// What the store learned from one request, for its feed.
pub struct Note {
    thread: Option<String>,
    run: Option<String>,
}

impl Note {
    pub fn of(request: &StoreRequest) -> Note {
        let run = match request.op() {
            Some(Op::Run {
                run,
                op: RunOp::Wait { .. } | RunOp::Finish { .. },
                ..
            }) => Some(run.to_string()),
            Some(Op::Admin(AdminOp::Finish { run, .. })) => Some(run.to_string()),
            _ => None,
        };
        Note {
            thread: request.thread().map(str::to_string),
            run,
        }
    }
}

impl Feeds {
    /// Tells a thread's subscribers what one applied request did: its
    /// commit, the wait it recorded, the runs it ended (each read back
    /// from the store by `ended`), or the deletion that closes them.
    pub fn after(
        &self,
        note: Note,
        reply: &Result<StoreReply, StoreError>,
        at: u64,
        ended: impl Fn(&str, &str) -> Option<LiveEvent>,
    ) {
        let Some((thread, version)) = reported(note.thread.as_deref(), reply) else {
            return;
        };
        let mut st = lock(&self.state);
        let prev = st.told.get(&thread).copied().unwrap_or(0);
        st.told.insert(thread.clone(), version.max(prev));
        let watched = st.subs.get(&thread).is_some_and(|s| !s.is_empty());
        if let Ok(StoreReply::Admin(AdminReply::Deleted(Some(d)))) = reply {
            // As in one process: the runs the deletion ended at once are
            // told, then the watchers close (SPEC H5).
            for (run, status) in &d.cancelled {
                if *status != RunStatus::Running {
                    st.push(&thread, &deleted_end(at, run));
                }
            }
            for (name, _) in st.subs.remove(&thread).unwrap_or_default() {
                if let Some(b) = st.board(&name) {
                    b.closed = true;
                }
            }
            return;
        }
        if !watched {
            return;
        }
        if version > prev {
            st.push(&thread, &LiveEvent::Committed { at, version });
        }
        let told = match (reply, note.run) {
            (Ok(StoreReply::Run(RunReply::Waited(Some((calls, _))))), Some(run)) => {
                Some(LiveEvent::RunWaiting {
                    at,
                    run_id: run.into(),
                    calls: calls.clone(),
                })
            }
            (Ok(StoreReply::Run(RunReply::Finished(Finish::Stored { .. }))), Some(run)) => {
                ended(&thread, &run)
            }
            (Ok(StoreReply::Client(ClientReply::Cancelled(Ok(c)))), _) => match &c.target {
                CancelTarget::Queued(run) => ended(&thread, run),
                _ => None,
            },
            _ => None,
        };
        if let Some(e) = told {
            st.push(&thread, &e);
        }
    }

    pub(super) fn subscribe(&self, name: &str, thread: &str) -> mpsc::UnboundedReceiver<LiveEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut st = lock(&self.state);
        st.subs
            .entry(thread.to_string())
            .or_default()
            .push((name.to_string(), tx));
        st.board.push((name.to_string(), Board::default()));
        rx
    }

    fn received(&self, name: &str, event: Option<LiveEvent>, at: u64) {
        let mut st = lock(&self.state);
        if let Some(b) = st.board(name) {
            match event {
                Some(e) => b.received.push(e),
                None => b.closed_seen = Some(at),
            }
        }
    }

    /// Whether every watcher's client has received all the store sent it
    /// (and its close, if the store closed it).
    pub fn caught_up(&self) -> bool {
        lock(&self.state)
            .board
            .iter()
            .all(|(_, b)| b.received.len() == b.sent && (!b.closed || b.closed_seen.is_some()))
    }

    /// What each watcher received, watcher by watcher, and when each saw
    /// its feed closed.
    pub fn take(&self) -> Received {
        let st = lock(&self.state);
        let mut live = Vec::new();
        let mut closed = Vec::new();
        for (name, b) in &st.board {
            live.extend(b.received.iter().map(|e| (name.clone(), e.clone())));
            closed.extend(b.closed_seen.map(|at| (name.clone(), at)));
        }
        (live, closed)
    }
}

/// A run the deletion ended (SPEC H5: cancelled, reason `deleted`).
fn deleted_end(at: u64, run: &str) -> LiveEvent {
    LiveEvent::RunEnded {
        at,
        run_id: run.into(),
        status: RunStatus::Cancelled,
        outcome: Outcome::Cancelled,
        reason: Some("deleted".to_string()),
    }
}

/// A watcher's client: subscribes at the store, then records every event
/// pushed to it and the close, in a task of the client host.
pub async fn subscribe(
    feeds: Arc<Feeds>,
    name: &str,
    open: StoreRequest,
) -> Result<(), StoreError> {
    let mut stream = TcpStream::connect((STORE_HOST, FEED_PORT))
        .await
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let hello = Subscribe {
        name: name.to_string(),
        open,
    };
    let bytes = serde_json::to_vec(&hello).map_err(|e| StoreError::Protocol(e.to_string()))?;
    let exchange = async {
        write_frame(&mut stream, &bytes).await?;
        read_frame(&mut stream).await
    };
    // The client's link is never faulted; the bound only keeps a harness
    // bug from hanging the run.
    let answer = tokio::time::timeout(Duration::from_secs(60), exchange)
        .await
        .map_err(|_| StoreError::Unavailable("no answer in time".into()))?
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let reply: Result<StoreReply, StoreError> =
        serde_json::from_slice(&answer).map_err(|e| StoreError::Protocol(e.to_string()))?;
    reply?;
    let name = name.to_string();
    tokio::task::spawn_local(async move {
        // Bounded: ends when the store closes the feed or the run ends.
        while let Ok(frame) = read_frame(&mut stream).await {
            let Ok(event) = serde_json::from_slice::<LiveEvent>(&frame) else {
                break;
            };
            feeds.received(&name, Some(event), 0);
        }
        feeds.received(&name, None, VirtualClock::turmoil().now());
    });
    Ok(())
}
