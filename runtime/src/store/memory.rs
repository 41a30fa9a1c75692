//! The in-memory store: every thread's record behind one lock, each
//! request applied in one short critical section (one transaction). Lease
//! expiry reads the store's own clock (SPEC K2).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::engine;
use super::protocol::{Store, StoreFuture, StoreRequest};
use super::record::StoreError;
use super::reply::{AdminReply, StoreReply};
use super::thread::ThreadRec;
use crate::clock::{Clock, Millis};
use crate::future::HookFuture;

/// Threads kept in this process's memory. Several runtimes ("workers") may
/// share one: each request is a transaction, and run writes are fenced by
/// their lease tokens.
pub struct MemoryStore {
    threads: Mutex<BTreeMap<String, ThreadRec>>,
    clock: Option<Arc<dyn Clock>>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new(None)
    }
}

impl Store for MemoryStore {
    fn call(&self, request: StoreRequest) -> StoreFuture<'_> {
        HookFuture::ready(self.apply(request))
    }
}

impl MemoryStore {
    /// A store whose leases expire by `clock` (without one, leases never expire).
    pub fn new(clock: Option<Arc<dyn Clock>>) -> MemoryStore {
        MemoryStore {
            threads: Mutex::new(BTreeMap::new()),
            clock,
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, ThreadRec>> {
        // A panic while holding the lock cannot leave a half-applied commit:
        // every operation mutates only after all its checks pass.
        self.threads.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> Millis {
        self.clock.as_ref().map_or(0, |c| c.now())
    }

    /// Applies one request as one transaction: a server hosting this store
    /// for remote workers calls this for each request it receives.
    pub fn apply(&self, request: StoreRequest) -> Result<StoreReply, StoreError> {
        let now = self.now();
        let mut map = self.lock();
        match request {
            StoreRequest::ThreadIds => Ok(StoreReply::Admin(AdminReply::Ids(
                map.iter()
                    .filter(|(_, rec)| !rec.is_deleted())
                    .map(|(id, _)| id.into())
                    .collect(),
            ))),
            StoreRequest::ClaimAny { worker, ttl } => {
                let claimed = map
                    .iter_mut()
                    .find_map(|(id, rec)| engine::claim_first(rec, id, &worker, ttl, now));
                Ok(StoreReply::Admin(AdminReply::Claimed(claimed)))
            }
            StoreRequest::On { thread, op } => match map.get_mut(thread.as_str()) {
                Some(rec) => engine::apply_existing(rec, &thread, op, now),
                None => {
                    let (reply, created) = engine::apply_missing(&thread, op);
                    if let Some(rec) = created {
                        map.insert(thread.to_string(), rec);
                    }
                    reply
                }
            },
        }
    }
}
