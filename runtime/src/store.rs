//! The in-memory thread store: ordered messages, versions, leases, run records.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::event::RunStatus;
use crate::message::{Message, Outcome};

/// A store write that could not be applied. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("thread {0} does not exist")]
    NoThread(String),
    #[error("thread {thread} belongs to another identity or agent")]
    Forbidden { thread: String },
    #[error("stale lease token {given} (current {current})")]
    StaleLease { given: u64, current: u64 },
}

/// What watchers of a thread see change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ThreadSignal {
    pub(crate) version: u64,
    pub(crate) busy: bool,
}

/// A run as the store records it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub id: String,
    pub status: RunStatus,
    pub outcome: Option<Outcome>,
    pub reason: Option<String>,
    /// Model steps committed.
    pub steps: u32,
}

pub(crate) struct ThreadRec {
    pub(crate) agent: String,
    pub(crate) owner: String,
    pub(crate) incarnation: u64,
    pub(crate) version: u64,
    pub(crate) next_seq: u64,
    pub(crate) messages: Vec<Message>,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) private_metadata: Map<String, Value>,
    /// The newest fencing token handed out; only grows.
    pub(crate) fence: u64,
    pub(crate) lease_holder: Option<String>,
    pub(crate) runs: Vec<RunRecord>,
    pub(crate) queue: VecDeque<String>,
    pub(crate) driving: bool,
    /// The run being driven now, and its stop signal.
    pub(crate) active_run: Option<String>,
    pub(crate) active_stop: Option<std::sync::Arc<crate::stop::StopSignal>>,
    /// The newest steering message not yet taken by a step (SPEC A4).
    pub(crate) pending_steer: Option<String>,
    /// Live watchers of this thread (SPEC S2, H1).
    pub(crate) watchers: Vec<crate::live::WatcherSlot>,
    pub(crate) signal: watch::Sender<ThreadSignal>,
}

impl RunRecord {
    pub(crate) fn queued(id: &str) -> RunRecord {
        RunRecord {
            id: id.to_string(),
            status: RunStatus::Queued,
            outcome: None,
            reason: None,
            steps: 0,
        }
    }
}

impl ThreadRec {
    fn publish(&self) {
        let busy = self.driving || !self.queue.is_empty();
        self.signal.send_replace(ThreadSignal {
            version: self.version,
            busy,
        });
    }

    pub(crate) fn run_mut(&mut self, id: &str) -> Option<&mut RunRecord> {
        self.runs.iter_mut().find(|r| r.id == id)
    }

    pub(crate) fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }
}

#[derive(Default)]
pub(crate) struct Store {
    threads: Mutex<BTreeMap<String, ThreadRec>>,
}

impl Store {
    pub(crate) fn lock(&self) -> MutexGuard<'_, BTreeMap<String, ThreadRec>> {
        // A panic while holding the lock cannot leave a half-applied commit:
        // every commit mutates only after all its checks pass.
        self.threads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Returns the thread, creating it for `owner` if it does not exist.
    pub(crate) fn open<'a>(
        map: &'a mut BTreeMap<String, ThreadRec>,
        id: &str,
        agent: &str,
        owner: &str,
    ) -> Result<&'a mut ThreadRec, StoreError> {
        let rec = map.entry(id.to_string()).or_insert_with(|| ThreadRec {
            agent: agent.to_string(),
            owner: owner.to_string(),
            incarnation: 1,
            version: 0,
            next_seq: 1,
            messages: Vec::new(),
            metadata: Map::new(),
            private_metadata: Map::new(),
            fence: 0,
            lease_holder: None,
            runs: Vec::new(),
            queue: VecDeque::new(),
            driving: false,
            active_run: None,
            active_stop: None,
            pending_steer: None,
            watchers: Vec::new(),
            signal: watch::channel(ThreadSignal {
                version: 0,
                busy: false,
            })
            .0,
        });
        if rec.owner != owner || rec.agent != agent {
            return Err(StoreError::Forbidden {
                thread: id.to_string(),
            });
        }
        Ok(rec)
    }

    /// Appends messages in one commit: sequence numbers assigned, version bumped
    /// once (SPEC H1). With `fence`, the write is refused unless it carries the
    /// thread's current lease token (SPEC K2).
    pub(crate) fn commit(
        rec: &mut ThreadRec,
        fence: Option<u64>,
        at: crate::clock::Millis,
        messages: impl IntoIterator<Item = Message>,
    ) -> Result<u64, StoreError> {
        if let Some(token) = fence
            && token != rec.fence
        {
            return Err(StoreError::StaleLease {
                given: token,
                current: rec.fence,
            });
        }
        for mut m in messages {
            m.seq = rec.next_seq;
            rec.next_seq += 1;
            rec.messages.push(m);
        }
        rec.version += 1;
        rec.publish();
        if !rec.watchers.is_empty() {
            crate::live::committed(&mut rec.watchers, at, rec.version);
        }
        Ok(rec.version)
    }

    pub(crate) fn set_busy(rec: &mut ThreadRec, driving: bool) {
        rec.driving = driving;
        rec.publish();
    }
}
