//! Delivering rewrite facts to `history_rewritten` (SPEC R3): after
//! commit, best effort; one delivery task per thread at a time (serialized
//! per thread), at most a bounded number of threads at once, and the facts
//! that pile up for a thread while its hooks run are coalesced into the
//! next call. A delivery can fail; the rewrite stays.

use std::sync::Arc;

use crate::event::EventKind;
use crate::lifecycle::{HookCx, Phase, RewriteFact};
use crate::shared::Shared;

impl<C: Send + Sync + 'static> Shared<C> {
    /// Hands a committed rewrite's fact to `history_rewritten` (R3), if
    /// any hook listens.
    pub(crate) fn deliver_rewrite(&self, thread: &str, fact: RewriteFact) {
        if !self
            .agent
            .lifecycle
            .phases()
            .contains(Phase::HistoryRewritten)
        {
            return;
        }
        if !self.rewrites.push(thread, fact) {
            return;
        }
        let (Some(sh), Ok(handle)) = (self.me.upgrade(), tokio::runtime::Handle::try_current())
        else {
            tracing::warn!(thread_id = %thread, "history_rewritten not delivered: no runtime");
            self.rewrites.take(thread);
            return;
        };
        handle.spawn(deliver(sh, thread.to_string()));
    }
}

/// One thread's delivery task: takes the pending facts, calls the hooks
/// with them, and again until none is left.
async fn deliver<C: Send + Sync + 'static>(sh: Arc<Shared<C>>, thread: String) {
    let Ok(_permit) = sh.rewrites.permits.clone().acquire_owned().await else {
        return;
    };
    // Bounded: each round delivers at least one fact, and facts come from
    // commits, of which there are finitely many.
    while let Some(facts) = sh.rewrites.take(&thread) {
        let cx = HookCx::new(&sh.context, "", &thread, 0, sh.clock.now());
        let called = crate::future::guarded(|| sh.agent.lifecycle.history_rewritten(&cx, &facts));
        let error = match called.await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(panic) => Some(format!("panicked: {panic}")),
        };
        if let Some(e) = &error {
            tracing::warn!(thread_id = %thread, error = %e, "history_rewritten failed");
        }
        sh.emit(&thread, "", || EventKind::RewriteDelivered {
            versions: facts.iter().map(|f| f.version).collect(),
            error,
        });
    }
}
