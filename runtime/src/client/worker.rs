//! The loop a worker runs among several sharing one store (SPEC K2, K3).

use std::sync::Arc;

use super::Runtime;

impl<C: Send + Sync + 'static> Runtime<C> {
    /// Works as one of several workers on a shared store: claims a queued
    /// run, a waiting run that can resume, or a run whose holder's lease
    /// expired, drives it, and looks again; when there is nothing to claim
    /// it waits [`crate::WorkerConfig::poll_every`]. Runs until the future is dropped.
    pub async fn work(&self) {
        let sh = Arc::clone(&self.shared);
        loop {
            if !crate::step_loop::work_once(&sh).await {
                sh.clock.sleep(sh.worker.poll_every).await;
            }
        }
    }

    /// One round of [`Runtime::work`]: `true` if a run was claimed and driven.
    pub async fn work_once(&self) -> bool {
        crate::step_loop::work_once(&self.shared).await
    }
}
