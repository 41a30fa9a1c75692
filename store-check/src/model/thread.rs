//! The model's record of one thread, written from the SPEC (§0, §9), not
//! from any store's code. Fields hold what the SPEC says a thread has;
//! helpers keep its invariants: versions +1 per commit (H1), sequence
//! numbers consecutive and never reused, tokens only growing (K2), the
//! run queue in arrival order (K1).

use std::collections::VecDeque;

use pai_runtime::{
    Message, StoreError,
    message::Outcome,
    store::{RunStatus, WaitingCall},
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
    pub(crate) token: u64,
    /// False right after a delete: the store may have moved the token on
    /// (it must not go back); the next `Inspect` tells the model.
    pub(crate) token_known: bool,
    pub(crate) ttl: Option<u64>,
    pub(crate) expires: Option<u64>,
    /// Every token handed out, oldest first (the stale ones to write with).
    pub(crate) issued: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThreadModel {
    pub(crate) id: String,
    /// Created once (and not necessarily live: see `deleted`).
    pub(crate) exists: bool,
    pub(crate) deleted: bool,
    pub(crate) agent: String,
    pub(crate) owner: String,
    pub(crate) incarnation: u64,
    pub(crate) version: u64,
    pub(crate) next_seq: u64,
    pub(crate) messages: Vec<Message>,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) private_metadata: Map<String, Value>,
    pub(crate) runs: Vec<RunModel>,
    pub(crate) queue: VecDeque<String>,
    pub(crate) current: Option<String>,
    pub(crate) lease: LeaseModel,
    /// Steering messages no step or `prepare_run` took yet, oldest first (A4).
    pub(crate) steers: Vec<String>,
    /// Runs of deleted incarnations, with their incarnation (H5).
    pub(crate) retired: Vec<(String, u64)>,
}

impl ThreadModel {
    pub(crate) fn new(id: String) -> ThreadModel {
        ThreadModel {
            id,
            exists: false,
            deleted: false,
            agent: AGENT.to_string(),
            owner: OWNER.to_string(),
            incarnation: 1,
            version: 0,
            next_seq: 1,
            messages: Vec::new(),
            metadata: Map::new(),
            private_metadata: Map::new(),
            runs: Vec::new(),
            queue: VecDeque::new(),
            current: None,
            lease: LeaseModel {
                token_known: true,
                ..LeaseModel::default()
            },
            steers: Vec::new(),
            retired: Vec::new(),
        }
    }

    /// Whether the thread can be read and written now.
    pub(crate) fn live(&self) -> bool {
        self.exists && !self.deleted
    }

    /// Creates the thread, or a new incarnation of a deleted one (H5).
    pub(crate) fn open(&mut self, owner: &str) {
        if !self.exists {
            self.exists = true;
            self.owner = owner.to_string();
        } else if self.deleted {
            self.deleted = false;
            self.incarnation += 1;
            self.owner = owner.to_string();
        }
    }

    pub(crate) fn scope(&self, owner: &str) -> Result<(), StoreError> {
        match self.owner == owner && self.agent == AGENT {
            true => Ok(()),
            false => Err(StoreError::Forbidden {
                thread: self.id.clone(),
            }),
        }
    }

    /// K2: a write under a token that is not the newest is refused.
    pub(crate) fn fenced(&self, token: Option<u64>) -> Result<(), StoreError> {
        match token {
            Some(given) if given != self.lease.token => Err(StoreError::StaleLease {
                given,
                current: self.lease.token,
            }),
            _ => Ok(()),
        }
    }

    /// Appends messages in one commit (H1): consecutive sequence numbers, +1 version.
    pub(crate) fn append(&mut self, messages: Vec<Message>) -> (u64, u64) {
        let first = self.next_seq;
        for mut m in messages {
            m.seq = self.next_seq;
            self.next_seq += 1;
            self.messages.push(m);
        }
        self.version += 1;
        (self.version, first)
    }

    /// K1: a new run queues behind the others.
    pub(crate) fn admit(&mut self, run: &str, trigger: &str) {
        self.runs.push(RunModel::queued(run, trigger));
        self.queue.push_back(run.to_string());
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

    /// A run ends: it is no longer current, holds no lease, waits on nothing.
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
        if self.current.as_deref() == Some(run) {
            self.current = None;
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
            .or_else(|| self.current.clone())
            .or_else(|| self.runs.last().map(|r| r.id.clone()))
            .unwrap_or_else(|| "r-none".to_string())
    }

    pub(crate) fn retired(&self, run: &str) -> Option<u64> {
        self.retired.iter().find(|(r, _)| r == run).map(|(_, i)| *i)
    }
}
