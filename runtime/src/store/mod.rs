//! Durable thread state and the in-memory store that holds it. Nothing
//! here lives only in the process that drives a thread (stop signals,
//! watchers, the driver task): that is `process.rs`. `record.rs` holds
//! what is recorded, `thread.rs` the thread record and its invariants,
//! `waiting.rs` the waiting calls and the answer rule.

mod record;
mod thread;
mod waiting;

use std::collections::BTreeMap;
use std::sync::Mutex;

pub(crate) use record::{Appended, CancelMiss, CancelTarget, RunEnd, Started};
pub use record::{RunRecord, RunStatus, StoreError, StoredThread};
pub(crate) use thread::ThreadRec;
pub(crate) use waiting::AnswerMiss;
pub use waiting::{Answer, WaitingCall};

/// The in-memory store: every thread's durable record behind one lock.
/// Every operation is one short critical section (one "transaction").
#[derive(Debug, Default)]
pub(crate) struct Store {
    threads: Mutex<BTreeMap<String, ThreadRec>>,
}

impl Store {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, ThreadRec>> {
        // A panic while holding the lock cannot leave a half-applied commit:
        // every operation mutates only after all its checks pass.
        self.threads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads one thread.
    pub(crate) fn read<T>(
        &self,
        id: &str,
        f: impl FnOnce(&ThreadRec) -> T,
    ) -> Result<T, StoreError> {
        let map = self.lock();
        let rec = map
            .get(id)
            .ok_or_else(|| StoreError::NoThread(id.to_string()))?;
        Ok(f(rec))
    }

    /// Changes one existing thread.
    pub(crate) fn write<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut ThreadRec) -> T,
    ) -> Result<T, StoreError> {
        let mut map = self.lock();
        let rec = map
            .get_mut(id)
            .ok_or_else(|| StoreError::NoThread(id.to_string()))?;
        Ok(f(rec))
    }

    /// Changes one thread, creating it for `owner` and `agent` if it does not
    /// exist; refused if it belongs to someone else (SPEC H4).
    pub(crate) fn open<T>(
        &self,
        id: &str,
        agent: &str,
        owner: &str,
        f: impl FnOnce(&mut ThreadRec) -> T,
    ) -> Result<T, StoreError> {
        let mut map = self.lock();
        let rec = map
            .entry(id.to_string())
            .or_insert_with(|| ThreadRec::new(agent, owner));
        rec.check_scope(id, owner, agent)?;
        Ok(f(rec))
    }

    /// Ids of every stored thread, in order.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }
}
