//! Rewrite facts waiting for `history_rewritten` (SPEC R3), by thread: at
//! most one delivery task per thread, at most a bounded number at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use crate::lifecycle::RewriteFact;

/// Facts waiting for delivery, by thread.
#[derive(Debug)]
pub(crate) struct Deliveries {
    state: Mutex<Pending>,
    /// One permit per thread being delivered to.
    pub(crate) permits: Arc<Semaphore>,
    /// How many threads have a delivery task, for those who wait until
    /// every fact was delivered.
    tasks: tokio::sync::watch::Sender<usize>,
}

#[derive(Debug, Default)]
struct Pending {
    facts: BTreeMap<String, Vec<RewriteFact>>,
    /// Threads with a delivery task.
    active: BTreeSet<String>,
}

impl Deliveries {
    /// At most `threads` threads' hooks run at once (at least one).
    pub(crate) fn new(threads: usize) -> Deliveries {
        Deliveries {
            state: Mutex::default(),
            permits: Arc::new(Semaphore::new(threads.max(1))),
            tasks: tokio::sync::watch::channel(0).0,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a fact; `true` if the thread has no delivery task yet, so the
    /// caller must start one.
    pub(crate) fn push(&self, thread: &str, fact: RewriteFact) -> bool {
        let mut p = self.lock();
        p.facts.entry(thread.to_string()).or_default().push(fact);
        let start = p.active.insert(thread.to_string());
        if start {
            self.tasks.send_modify(|n| *n += 1);
        }
        start
    }

    /// Resolves once no thread has facts waiting or being delivered.
    pub(crate) async fn idle(&self) {
        let mut rx = self.tasks.subscribe();
        // The sender lives as long as this value.
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Every fact pending for `thread`; when there is none, the thread's
    /// task ends (in the same critical section as `push`, so no fact is
    /// left behind).
    pub(crate) fn take(&self, thread: &str) -> Option<Vec<RewriteFact>> {
        let mut p = self.lock();
        match p.facts.remove(thread) {
            Some(facts) if !facts.is_empty() => Some(facts),
            _ => {
                if p.active.remove(thread) {
                    self.tasks.send_modify(|n| *n = n.saturating_sub(1));
                }
                None
            }
        }
    }
}
