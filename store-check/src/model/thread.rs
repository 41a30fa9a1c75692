//! The model's record of one thread, written from the SPEC (§0, §9), not
//! from any store's code, and deliberately not shaped like one: a list of
//! committed messages and a list of runs, with the queue and the current
//! run read off the runs' statuses instead of kept beside them. Helpers
//! keep its invariants: versions +1 per commit (H1), sequence numbers
//! consecutive and never reused, tokens only growing (K2).

use pai_runtime::store::FencingToken;
use pai_runtime::{
    Message, StoreError,
    message::{NewMessage, Outcome},
    store::{HandOver, HandedOver, RunStatus, WaitingCall},
};
use serde_json::{Map, Value};

pub(crate) const AGENT: &str = "agent";
pub(crate) const OWNER: &str = "owner";
pub(crate) const INTRUDER: &str = "intruder";

/// A run's reason as the model knows it. The SPEC names only `deleted`
/// (H5) and the reasons a run's own end gives; a store may word the others
/// (a queued run's cancel) as it likes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reason {
    Exact(Option<String>),
    Any,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunModel {
    pub(crate) id: String,
    pub(crate) status: RunStatus,
    pub(crate) outcome: Option<Outcome>,
    pub(crate) reason: Reason,
    pub(crate) steps: u32,
    pub(crate) trigger: String,
    pub(crate) episodes: u32,
    pub(crate) metadata: Option<Value>,
    pub(crate) waiting: Vec<WaitingCall>,
    pub(crate) cancel_requested: bool,
    /// The run gave its answerable calls up (A3, T9): answers are refused.
    pub(crate) calls_closed: bool,
    /// K3: the last step whose transition the store saw, and what it was:
    /// a steer the step took (A4), or a wait (T7). A taker goes on from it.
    pub(crate) handed_over: Option<HandedOver>,
}

impl RunModel {
    fn queued(id: &str, trigger: &str) -> RunModel {
        RunModel {
            id: id.to_string(),
            status: RunStatus::Queued,
            outcome: None,
            reason: Reason::Exact(None),
            steps: 0,
            trigger: trigger.to_string(),
            episodes: 0,
            metadata: None,
            waiting: Vec::new(),
            cancel_requested: false,
            calls_closed: false,
            handed_over: None,
        }
    }

    /// K3: the transition of the run's newest committed step was `how`
    /// (nothing to record before its first step).
    pub(crate) fn handed_over_by(&mut self, how: HandOver) {
        if self.steps > 0 {
            self.handed_over = Some(HandedOver {
                step: self.steps - 1,
                how,
            });
        }
    }

    pub(crate) fn ended(&self) -> bool {
        matches!(
            self.status,
            RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
        )
    }

    /// T9: a waiting run resumes when every call has its answer, or when a
    /// cancel reached it (it resumes to end cancelled, K6).
    pub(crate) fn resumable(&self) -> bool {
        self.status == RunStatus::Waiting
            && (self.cancel_requested || self.waiting.iter().all(|c| c.answer.is_some()))
    }
}

/// The lease (K2): holder run and worker, newest token, expiry.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LeaseModel {
    pub(crate) holder: Option<String>,
    pub(crate) worker: Option<String>,
    /// The newest token the store handed out for this thread, as last seen.
    pub(crate) token: FencingToken,
    /// False right after a delete: the store may have moved the token on
    /// (it must not go back); the next `Inspect` tells the model.
    pub(crate) token_known: bool,
    pub(crate) ttl: Option<u64>,
    pub(crate) expires: Option<u64>,
    /// Every token handed out, oldest first (the stale ones to write with).
    pub(crate) issued: Vec<FencingToken>,
}

/// Where a thread is in its life (H5): never created, live, or deleted
/// (its incarnation ended, no new one yet).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Life {
    Never,
    Live,
    Deleted,
}

/// One thread as the SPEC describes it: committed messages, metadata, and
/// its runs in admission order. Nothing else is kept that a run's status
/// already says: the queue is the runs whose status is `Queued` (K1), the
/// current run the one `Running` or `Waiting` (a claim makes a run
/// current, its end makes it not).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThreadModel {
    pub(crate) id: String,
    pub(crate) life: Life,
    pub(crate) owner: String,
    pub(crate) incarnation: u64,
    /// How many commits the thread has had (H1).
    pub(crate) version: u64,
    /// The newest sequence number handed out, in any incarnation.
    pub(crate) last_seq: u64,
    pub(crate) messages: Vec<Message>,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) private_metadata: Map<String, Value>,
    pub(crate) runs: Vec<RunModel>,
    pub(crate) lease: LeaseModel,
    /// Steering messages no step or `prepare_run` took yet, oldest first (A4).
    pub(crate) steers: Vec<String>,
    /// Runs of deleted incarnations, with their incarnation (H5).
    pub(crate) retired: Vec<(String, u64)>,
    /// Message ids in the order they entered the context (M1, `order.rs`).
    pub(crate) context: Vec<String>,
    /// Messages stored that no context took yet, each with the run whose
    /// first claim lets it in (K1, M1).
    pub(crate) unentered: Vec<(String, String)>,
}

impl ThreadModel {
    pub(crate) fn new(id: String) -> ThreadModel {
        ThreadModel {
            id,
            life: Life::Never,
            owner: OWNER.to_string(),
            incarnation: 1,
            version: 0,
            last_seq: 0,
            messages: Vec::new(),
            metadata: Map::new(),
            private_metadata: Map::new(),
            runs: Vec::new(),
            lease: LeaseModel {
                token_known: true,
                ..LeaseModel::default()
            },
            steers: Vec::new(),
            retired: Vec::new(),
            context: Vec::new(),
            unentered: Vec::new(),
        }
    }

    /// Whether the thread can be read and written now.
    pub(crate) fn live(&self) -> bool {
        self.life == Life::Live
    }

    /// Creates the thread, or a new incarnation of a deleted one (H5).
    pub(crate) fn open(&mut self, owner: &str) {
        match self.life {
            Life::Live => return,
            Life::Never => {}
            Life::Deleted => self.incarnation += 1,
        }
        self.life = Life::Live;
        self.owner = owner.to_string();
    }

    /// H4: every thread here is the agent's; only its owner reaches it.
    pub(crate) fn scope(&self, owner: &str) -> Result<(), StoreError> {
        match self.owner == owner {
            true => Ok(()),
            false => Err(StoreError::Forbidden {
                thread: self.id.clone().into(),
            }),
        }
    }

    /// K2: a write under a token that is not the newest is refused.
    pub(crate) fn fenced(&self, token: Option<FencingToken>) -> Result<(), StoreError> {
        match token {
            Some(given) if given != self.lease.token => Err(StoreError::StaleLease {
                given,
                current: self.lease.token,
            }),
            _ => Ok(()),
        }
    }

    /// One commit (H1): the new version.
    pub(crate) fn commit(&mut self) -> u64 {
        self.version += 1;
        self.version
    }

    /// Stores a message under the next sequence number (never reused).
    pub(crate) fn store(&mut self, message: NewMessage) -> String {
        self.last_seq += 1;
        let id = message.id.to_string();
        self.messages.push(message.stored(self.last_seq));
        id
    }

    /// Appends messages in one commit (H1): the new version and the first
    /// sequence number.
    pub(crate) fn append(&mut self, messages: Vec<NewMessage>) -> (u64, u64) {
        let first = self.last_seq + 1;
        for m in messages {
            self.store(m);
        }
        (self.commit(), first)
    }

    /// K1: a new run queues behind the others; its trigger enters a
    /// context when the run is first claimed (M1).
    pub(crate) fn admit(&mut self, run: &str, trigger: &str) {
        self.runs.push(RunModel::queued(run, trigger));
        self.hold_for(trigger, run);
    }

    /// The run being driven now: running or waiting.
    pub(crate) fn current(&self) -> Option<String> {
        let driven = |r: &&RunModel| matches!(r.status, RunStatus::Running | RunStatus::Waiting);
        self.runs.iter().find(driven).map(|r| r.id.clone())
    }

    /// The queued runs, oldest first (K1).
    pub(crate) fn queued(&self) -> Vec<String> {
        let runs = self.runs.iter();
        runs.filter(|r| r.status == RunStatus::Queued)
            .map(|r| r.id.clone())
            .collect()
    }

    pub(crate) fn run(&self, id: &str) -> Option<&RunModel> {
        self.runs.iter().find(|r| r.id == id)
    }

    pub(crate) fn run_mut(&mut self, id: &str) -> Option<&mut RunModel> {
        self.runs.iter_mut().find(|r| r.id == id)
    }

    pub(crate) fn release(&mut self, run: &str) {
        if self.lease.holder.as_deref() == Some(run) {
            self.lease.holder = None;
            self.lease.expires = None;
        }
    }

    /// A run ends: it holds no lease and waits on nothing (and, ended, is
    /// neither current nor queued).
    pub(crate) fn finish_run(
        &mut self,
        run: &str,
        status: RunStatus,
        outcome: Outcome,
        reason: Reason,
    ) {
        self.release(run);
        if let Some(r) = self.run_mut(run) {
            r.status = status;
            r.outcome = Some(outcome);
            r.reason = reason;
            r.waiting.clear();
        }
    }

    /// A landed write of a run extends the lease by its ttl. The SPEC says
    /// only that a holder renews; MemoryStore also counts every landed run
    /// write as a renewal (whoever wrote), and the model follows it.
    pub(crate) fn touch(&mut self, now: u64) {
        if self.lease.holder.is_some() {
            self.lease.expires = self.lease.ttl.map(|t| now + t);
        }
    }

    pub(crate) fn cancel_requested(&self, run: &str) -> bool {
        self.run(run).is_some_and(|r| r.cancel_requested)
    }

    /// The run a run's request speaks for: the holder, the current run, the newest run.
    pub(crate) fn acting_run(&self) -> String {
        self.lease
            .holder
            .clone()
            .or_else(|| self.current())
            .or_else(|| self.runs.last().map(|r| r.id.clone()))
            .unwrap_or_else(|| "r-none".to_string())
    }

    pub(crate) fn retired(&self, run: &str) -> Option<u64> {
        self.retired.iter().find(|(r, _)| r == run).map(|(_, i)| *i)
    }
}
