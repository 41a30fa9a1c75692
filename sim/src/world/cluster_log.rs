//! What the simulator sees of the system of workers beside the runtime's
//! own events: the faults it injects and every lease-bearing request the
//! store answers (claims, fenced writes that land, stale ones refused,
//! deletions that retire a lease). It only records; oracles judge it.

use std::sync::{Arc, Mutex};

use pai_runtime::store::FencingToken;
use pai_runtime::store::Takeover;

use super::recorder::Recorder;
use crate::scenario::FaultAction;

/// A client's request the store log keeps, by what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientWrite {
    /// A user message landed (`submit`): its id.
    Message(String),
    /// An answer landed (`answer`): the call's id.
    Answer(String),
    /// A cancel was answered: the run it reached, if any (none, or no
    /// thread: where it happened matters to what it could have reached).
    Cancel(Option<String>),
    /// A step looked for a steer of this run (`has_steer`): its decision
    /// is made there.
    SteerLook(String),
}

/// One thing that happened to the system, at a virtual time.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterRecord {
    pub at: u64,
    /// How many runtime events had been recorded when this happened.
    pub after_event: usize,
    pub what: ClusterEvent,
}

/// What happened.
#[derive(Debug, Clone, PartialEq)]
pub enum ClusterEvent {
    /// The simulator did this to a worker or its link; `placed` says at
    /// which store request, for a fault placed at one ("at its wait #1,
    /// its answer in flight").
    Fault {
        action: FaultAction,
        worker: String,
        placed: Option<String>,
    },
    /// The store gave `from` a run's lease.
    Claimed {
        from: String,
        thread: String,
        run: String,
        token: FencingToken,
        episode: u32,
        takeover: Option<Takeover>,
    },
    /// A write under a lease token landed.
    Wrote {
        from: String,
        request: &'static str,
        thread: String,
        run: String,
        token: FencingToken,
        /// The token a new episode got.
        next_token: Option<FencingToken>,
        /// The write gave the lease up (a wait, a run's end).
        releases: bool,
        /// A run's end admitted the run a leftover steer starts (SPEC A4),
        /// with that steer.
        admitted: Option<(String, String)>,
        /// The ids of the messages it appended.
        messages: Vec<String>,
        /// A wait's calls.
        waits_on: Vec<String>,
        /// A run's own mutation (`mutate`) that committed a new version.
        committed: bool,
        /// The thread's version after the write, when its answer says.
        version: Option<u64>,
    },
    /// A client's write landed (a user message, an answer), a cancel was
    /// answered, or a step looked for a steer: what the store answered
    /// bears on what they could reach (K6, A3).
    Stored {
        from: String,
        thread: String,
        write: ClientWrite,
    },
    /// A claim found nothing because another worker's claim took the run
    /// in the same virtual millisecond: a claim race `from` lost to `to`
    /// (the tie is broken by the seed: hosts run in a seeded order).
    LostClaim {
        from: String,
        to: String,
        run: String,
    },
    /// A client deleted a thread's incarnation (SPEC H5): its lease is
    /// retired, and the runs it had not ended (`cancelled`) end with it.
    Deleted {
        from: String,
        thread: String,
        incarnation: u64,
        cancelled: Vec<String>,
    },
    /// A write under a stale token was refused (SPEC K2); `given` equals
    /// `current` when the token is the newest but its run no longer holds
    /// the lease.
    Refused {
        from: String,
        request: &'static str,
        thread: String,
        run: String,
        given: FencingToken,
        current: FencingToken,
    },
}

/// The log, shared by the store host and the simulator's loop.
#[derive(Debug)]
pub struct ClusterLog {
    records: Mutex<Vec<ClusterRecord>>,
    recorder: Arc<Recorder>,
}

impl ClusterLog {
    pub fn new(recorder: Arc<Recorder>) -> ClusterLog {
        ClusterLog {
            records: Mutex::new(Vec::new()),
            recorder,
        }
    }

    pub fn push(&self, at: u64, what: ClusterEvent) {
        let after_event = self.recorder.len();
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        records.push(ClusterRecord {
            at,
            after_event,
            what,
        });
    }

    /// How many runtime events have been recorded so far.
    pub fn after_event(&self) -> usize {
        self.recorder.len()
    }

    /// Reads the records so far (the log keeps them).
    pub fn read<T>(&self, f: impl FnOnce(&[ClusterRecord]) -> T) -> T {
        f(&self.records.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn take(&self) -> Vec<ClusterRecord> {
        std::mem::take(&mut *self.records.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
