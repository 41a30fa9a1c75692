//! What the oracles observe of one run, and what they report.

use pai_runtime::{
    Event, Millis, ModelRequest, event::LiveEvent, message::ModelMessage, store::StoredThread,
};

use crate::hooks::{HistoryRead, SummaryCall};
use crate::scenario::{OracleId, OracleName, Scenario};
use crate::world::{ActionRecord, Calls, ClientView, CommitRecord, TapLog};

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The oracle that found it: a built-in one (it names the SPEC rules
    /// it judges, [`OracleId::judges`]) or one a harness registered.
    pub oracle: OracleName,
    /// The run it concerns, by run id; `None` for a violation about a thread,
    /// the store or the whole scenario (printed as `-`).
    pub run: Option<String>,
    /// What was broken, in words: the evidence the oracle saw, written for a
    /// reader of the transcript.
    pub message: String,
}

impl Violation {
    pub(super) fn new(
        oracle: OracleId,
        run: Option<&str>,
        message: impl Into<String>,
    ) -> Violation {
        Violation {
            oracle: oracle.into(),
            run: run.map(str::to_string),
            message: message.into(),
        }
    }
}

/// Everything the oracles (and the transcript) observe of one run.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    pub scenario: &'a Scenario,
    pub seed: u64,
    pub events: &'a [Event],
    pub threads: &'a [StoredThread],
    pub calls: &'a Calls,
    /// What each watcher received, in order.
    pub live: &'a [(String, LiveEvent)],
    /// What the clients did and what the runtime answered.
    pub actions: &'a [ActionRecord],
    /// What history probes read, as they read it.
    pub reads: &'a [HistoryRead],
    /// What compaction's summary model was asked, in order.
    pub summaries: &'a [SummaryCall],
    /// What the store tap saw (one process only; empty among workers).
    pub tap: &'a TapLog,
    /// Every commit the store reported, in the order it answered (both
    /// modes: the tap's in one process, the store host's among workers).
    pub commits: &'a [CommitRecord],
    /// Each thread as its owner's client read it at the end (one process only).
    pub client_views: &'a [ClientView],
    /// The virtual-time limit stopped the scenario before it went idle:
    /// runs still going then are not judged for never ending.
    pub cut_short: bool,
    /// With several workers: the raw log, the store's lease log, the bounds.
    pub cluster: Option<&'a ClusterObs>,
}

/// The observation API's view of a run ([`crate::observe::Observation`]).
impl crate::observe::View for Observed<'_> {
    fn scenario(&self) -> &str {
        &self.scenario.name
    }

    fn seed(&self) -> u64 {
        self.seed
    }

    fn events(&self) -> &[Event] {
        self.events
    }

    fn threads(&self) -> &[StoredThread] {
        self.threads
    }

    fn live(&self) -> &[(String, LiveEvent)] {
        self.live
    }

    fn cut_short(&self) -> bool {
        self.cut_short
    }

    fn hook_count(&self) -> usize {
        self.scenario.hooks.len()
    }

    fn hook(&self, index: usize) -> crate::observe::HookInfo<'_> {
        let h = &self.scenario.hooks[index];
        let user = match &h.source {
            crate::scenario::HookSource::User(u) => Some(u),
            crate::scenario::HookSource::Library(_) => None,
        };
        crate::observe::HookInfo {
            name: &h.name,
            registered_as: user.map(|u| u.use_name.as_str()),
            config: user.map(|u| &u.config),
        }
    }

    fn registered_tools(&self) -> Vec<(&str, &str, &serde_json::Map<String, serde_json::Value>)> {
        let tools = self.scenario.agent.tools.iter();
        tools
            .filter_map(|t| match &t.behaviour {
                crate::scenario::Behaviour::Registered(u) => {
                    Some((t.name.as_str(), u.use_name.as_str(), &u.config))
                }
                _ => None,
            })
            .collect()
    }

    fn calls(&self) -> usize {
        self.calls.len()
    }

    fn call(&self, index: usize) -> (Millis, &ModelRequest, &[ModelMessage]) {
        let c = &self.calls[index];
        (c.at, &c.request, self.calls.messages(c))
    }
}

/// What one run left behind, owned: the data an [`Observed`] view borrows.
/// Planted faults edit it before anyone judges it.
#[derive(Debug, Clone, Default)]
pub struct Observations {
    pub events: Vec<Event>,
    pub threads: Vec<StoredThread>,
    pub calls: Calls,
    pub live: Vec<(String, LiveEvent)>,
    pub actions: Vec<ActionRecord>,
    pub reads: Vec<HistoryRead>,
    pub summaries: Vec<SummaryCall>,
    pub tap: TapLog,
    pub commits: Vec<CommitRecord>,
    pub client_views: Vec<ClientView>,
    pub cut_short: bool,
    /// With several workers: what the store and the simulator saw.
    pub cluster: Option<ClusterObs>,
}

/// What a run with several workers leaves beside the per-run event log.
#[derive(Debug, Clone, Default)]
pub struct ClusterObs {
    /// Every worker's events as they happened, stale workers' included.
    pub raw_events: Vec<Event>,
    /// Faults carried out, and what the store did with leases.
    pub log: Vec<crate::world::ClusterRecord>,
    /// How long a lease lasts unless renewed.
    pub lease_ms: u64,
    /// When the last fault ended.
    pub healed_at: u64,
    /// The liveness bound after that.
    pub liveness_ms: u64,
    /// When every run was over or waiting, if by the bound.
    pub settled_at: Option<u64>,
    /// Faults placed at a store request that never fired, by their index
    /// in the scenario's faults, with why.
    pub unfired: std::collections::BTreeMap<usize, String>,
    /// Each watcher whose change feed the store closed (H5), and when its
    /// client saw the close.
    pub watch_closed: Vec<(String, u64)>,
    /// Each deleted incarnation as it was just before its deletion, in
    /// the order of the deletions (what the twin compares of it).
    pub retired: Vec<StoredThread>,
}

impl Observations {
    /// The view oracles and the transcript read.
    pub fn view<'a>(&'a self, scenario: &'a Scenario, seed: u64) -> Observed<'a> {
        Observed {
            scenario,
            seed,
            events: &self.events,
            threads: &self.threads,
            calls: &self.calls,
            live: &self.live,
            actions: &self.actions,
            reads: &self.reads,
            summaries: &self.summaries,
            tap: &self.tap,
            commits: &self.commits,
            client_views: &self.client_views,
            cut_short: self.cut_short,
            cluster: self.cluster.as_ref(),
        }
    }
}

/// What the oracles found.
#[derive(Debug, Clone, Default)]
pub struct Verdicts {
    pub violations: Vec<Violation>,
    /// Requests that differ from their turn's `expect`: call index and difference.
    pub mismatches: Vec<(usize, String)>,
    /// With runtime faults: whether and how the fault-free twin judged
    /// the run, as the transcript's `twin:` line says.
    pub twin: Option<String>,
}
