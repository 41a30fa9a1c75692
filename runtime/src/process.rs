//! What lives only in the process that drives a thread, never in the store:
//! whether a driver task is draining its queue, the current run's stop
//! signal, and its live watchers. A store shared by several workers holds
//! none of this.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::live::WatcherSlot;
use crate::stop::StopSignal;

/// One thread as this process has it attached.
#[derive(Debug)]
pub(crate) struct Attached {
    /// `true` while a driver task drains the thread's queue; clients wait
    /// for it to turn `false` (idle).
    driving: watch::Sender<bool>,
    /// The current run and its stop signal (SPEC T8).
    stop: Option<(String, Arc<StopSignal>)>,
    /// Live watchers (SPEC S2, H1).
    pub(crate) watchers: Vec<WatcherSlot>,
}

impl Default for Attached {
    fn default() -> Self {
        Attached {
            driving: watch::channel(false).0,
            stop: None,
            watchers: Vec::new(),
        }
    }
}

impl Attached {
    /// Marks the thread driven; returns `true` if no driver ran before, so
    /// the caller must start one.
    pub(crate) fn claim_driver(&mut self) -> bool {
        !self.driving.send_replace(true)
    }

    /// The driver found the queue empty and stopped.
    pub(crate) fn release_driver(&mut self) {
        self.driving.send_replace(false);
    }

    /// A receiver that sees the driver flag change.
    pub(crate) fn driving(&self) -> watch::Receiver<bool> {
        self.driving.subscribe()
    }

    /// A fresh stop signal for `run`, now the current run.
    pub(crate) fn start_run(&mut self, run: &str) -> Arc<StopSignal> {
        let stop = Arc::new(StopSignal::new());
        self.stop = Some((run.to_string(), stop.clone()));
        stop
    }

    /// Forgets `run`'s stop signal.
    pub(crate) fn end_run(&mut self, run: &str) {
        if self.stop.as_ref().is_some_and(|(r, _)| r == run) {
            self.stop = None;
        }
    }

    /// Sets `run`'s stop signal, if this process drives it.
    pub(crate) fn stop(&self, run: &str) {
        if let Some((current, stop)) = &self.stop
            && current == run
        {
            stop.trigger();
        }
    }
}

/// Every thread this process has attached, by id; each behind its own
/// async lock, held while a commit and its watcher notices happen (H1).
#[derive(Debug, Default)]
pub(crate) struct Process {
    threads: Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<Attached>>>>,
}

/// A thread's process side, locked.
pub(crate) type AttachedGuard = tokio::sync::OwnedMutexGuard<Attached>;

impl Process {
    /// Locks a thread's process side, attaching it first if needed. Lock
    /// order: the process side before the store, so a commit and its
    /// watcher notices happen in one critical section (H1).
    pub(crate) async fn attach(&self, thread: &str) -> AttachedGuard {
        let slot = {
            let mut map = self.threads.lock().unwrap_or_else(|e| e.into_inner());
            match map.get(thread) {
                Some(slot) => slot.clone(),
                None => map.entry(thread.to_string()).or_default().clone(),
            }
        };
        slot.lock_owned().await
    }
}
