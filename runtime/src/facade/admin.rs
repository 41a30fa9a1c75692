//! The trusted admin API (SPEC H7: "an explicit trusted admin API"):
//! server code reading and writing any thread outside a run, through the
//! same facade transactions as hooks (versions, expectations, K4, watch
//! invalidations), never through the store itself.

use serde_json::Value;

use crate::clock::IdKind;
use crate::event::EventKind;
use crate::facade::{Committer, rewrite_writes};
use crate::id::MessageId;
use crate::lifecycle::{RewriteFact, RewriteKind};
use crate::message::Message;
use crate::message::Visibility;
use crate::shared::Shared;
use crate::staged::MutateError;
use crate::staged::Staged;
use crate::store::{
    DELETED, Deletion, Expect, HistoryRead, Mutation, Regeneration, RunEnd, RunStatus, StoreError,
    StoredThread, Writer,
};
use std::sync::Arc;

/// Trusted server code's access to every thread of a runtime's store.
pub struct Admin<C> {
    pub(crate) shared: Arc<Shared<C>>,
}

impl<C> std::fmt::Debug for Admin<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admin")
    }
}

impl<C: Send + Sync + 'static> Admin<C> {
    /// One thread, whichever incarnation each operation finds.
    pub fn thread(&self, id: impl Into<String>) -> AdminThread<C> {
        AdminThread {
            shared: self.shared.clone(),
            id: id.into(),
            incarnation: None,
        }
    }

    /// One thread, bound to the incarnation stored now (SPEC H5): once it
    /// is deleted, every operation through this handle is refused.
    pub async fn bind(&self, id: impl Into<String>) -> Result<AdminThread<C>, StoreError> {
        let mut t = self.thread(id);
        t.incarnation = Some(t.committer().read().await?.incarnation);
        Ok(t)
    }
}

/// One thread, for trusted code.
pub struct AdminThread<C> {
    shared: Arc<Shared<C>>,
    id: String,
    incarnation: Option<u64>,
}

impl<C> std::fmt::Debug for AdminThread<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminThread")
            .field("id", &self.id)
            .field("incarnation", &self.incarnation)
            .finish()
    }
}

impl<C: Send + Sync + 'static> AdminThread<C> {
    fn sh(&self) -> &Shared<C> {
        &self.shared
    }

    fn committer(&self) -> Committer<'_, C> {
        Committer {
            sh: self.sh(),
            thread: &self.id,
            writer: Writer::Trusted,
            incarnation: self.incarnation,
        }
    }

    /// The incarnation this handle is bound to, if it is.
    pub fn incarnation(&self) -> Option<u64> {
        self.incarnation
    }

    /// The whole thread, private metadata included.
    /// The read is logged (`read_thread`): what an expectation built from
    /// it was read from.
    pub async fn read(&self) -> Result<StoredThread, StoreError> {
        let t = self.committer().read().await?;
        self.sh().emit(&self.id, "", || EventKind::ThreadRead {
            version: t.version,
            incarnation: t.incarnation,
            messages: t.messages.len(),
        });
        Ok(t)
    }

    /// SPEC H2, H3: stages writes in `f` (which reads the stored thread,
    /// never its own staged writes) and commits them as one change if
    /// `expect` holds; an error or panic in `f` commits nothing.
    pub async fn mutate<T>(
        &self,
        expect: Expect,
        f: impl FnOnce(&mut Staged<'_>) -> Result<T, String>,
    ) -> Result<(T, Mutation), MutateError> {
        self.committer().mutate(expect, f).await
    }

    /// A visibility rewrite (SPEC R1, R2, K4): one commit, refused while a
    /// run is running or waiting on the thread.
    pub async fn set_visibility(
        &self,
        changes: Vec<(MessageId, Visibility)>,
        expect: Expect,
    ) -> Result<Mutation, MutateError> {
        let (_, done) = self
            .mutate(expect, |s| {
                for (message, visibility) in changes {
                    s.set_visibility(message, visibility);
                }
                Ok(())
            })
            .await?;
        Ok(done)
    }

    /// Sets one client-readable metadata key, whatever changed meanwhile.
    pub async fn set_metadata(&self, key: &str, value: Value) -> Result<Mutation, MutateError> {
        let (_, done) = self
            .mutate(Expect::Nothing, |s| {
                s.set_metadata(key, value);
                Ok(())
            })
            .await?;
        Ok(done)
    }

    /// SPEC R1, R2, K4: removes what the model reads after user message
    /// `from` (context order, M1; a kept call keeps its result), commits `prepare_history_rewrite`'s patches with it, and starts a
    /// new run from `from`. Refused while any run is running, waiting or
    /// queued on the thread; a conflict if the thread changed between the
    /// read the hooks saw and the commit.
    pub async fn regenerate(&self, from: &str) -> Result<Regeneration, MutateError> {
        let c = self.committer();
        let refused = |e: MutateError| c.refused("regenerate", e);
        let stored = c.read().await.map_err(|e| refused(e.into()))?;
        // The cut the store will make (R1), for the rewrite hooks (R2):
        // computed alike from the context order of the version read.
        let removed = sh_cut(self.sh(), &stored, from)
            .await
            .map_err(|e| refused(e.into()))?;
        let kind = RewriteKind::Regenerate {
            from: from.into(),
            removed,
        };
        let (writes, patched) = rewrite_writes(self.sh(), &stored, &kind)
            .await
            .map_err(refused)?;
        let sh = self.sh();
        let new_run = sh.ids.next_id(IdKind::Run);
        let mut attached = sh.process.attach(&self.id).await;
        let expect = Expect::version_of(&stored);
        let reply = sh
            .store
            .regenerate(
                &self.id,
                stored.incarnation,
                from,
                new_run.into(),
                expect,
                writes,
            )
            .await;
        let done = match reply {
            Ok(Ok(done)) => done,
            Ok(Err(r)) => return Err(refused(r.into())),
            Err(e) => return Err(refused(e.into())),
        };
        sh.told(&mut attached, done.version);
        let start = sh.worker.drives_sends() && attached.claim_driver();
        drop(attached);
        self.regenerated(&done, patched);
        if start && let Some(me) = sh.me.upgrade() {
            (sh.start_driver)(me, self.id.clone());
        }
        Ok(done)
    }

    fn regenerated(&self, done: &Regeneration, patched: Vec<String>) {
        let sh = self.sh();
        sh.emit(&self.id, "", || EventKind::HistoryRewritten {
            version: done.version,
            kind: "regenerate",
            removed: done.removed.clone(),
            patched,
            started: Some(done.run.clone()),
        });
        sh.emit(&self.id, &done.run, || EventKind::Admitted {
            trigger: done.from.clone(),
        });
        let fact = RewriteFact {
            version: done.version,
            incarnation: done.incarnation,
            kind: RewriteKind::Regenerate {
                from: done.from.clone(),
                removed: done.removed.clone(),
            },
        };
        sh.deliver_rewrite(&self.id, fact);
    }

    /// SPEC H5: deletes the thread's incarnation. Its runs end cancelled
    /// (reason `deleted`): a queued or waiting run at once, a running one
    /// at its next write (stopped at once when this process drives it);
    /// its watchers are closed. `None` when there was no thread.
    pub async fn delete(&self) -> Result<Option<Deletion>, StoreError> {
        let sh = self.sh();
        if let Some(bound) = self.incarnation {
            self.read().await.map(drop)?;
            let _ = bound;
        }
        let mut attached = sh.process.attach(&self.id).await;
        let Some(gone) = sh.store.delete(&self.id).await? else {
            return Ok(None);
        };
        let end = RunEnd {
            status: RunStatus::Cancelled,
            outcome: crate::message::Outcome::Cancelled,
            reason: Some(DELETED.to_string()),
        };
        let mut ended = Vec::new();
        for (run, status) in &gone.cancelled {
            match status {
                RunStatus::Running => attached.stop(run),
                _ => {
                    sh.run_ended(&mut attached, run, &end);
                    ended.push(run.clone());
                }
            }
        }
        attached.watchers.clear();
        drop(attached);
        sh.emit(&self.id, "", || EventKind::ThreadDeleted {
            incarnation: gone.incarnation,
            cancelled: gone.cancelled.iter().map(|(r, _)| r.clone()).collect(),
        });
        for run in ended {
            sh.emit(&self.id, &run, || EventKind::ended(&end, None));
        }
        Ok(Some(gone))
    }

    /// Creates the thread for `owner` if it does not exist: after a
    /// delete, a new incarnation (SPEC H5). Returns its incarnation.
    pub async fn create(&self, owner: &str) -> Result<u64, StoreError> {
        let sh = self.sh();
        let existed = sh.store.inspect(&self.id).await?.is_some();
        let scope = crate::store::handle::Scope {
            thread: &self.id,
            agent: &sh.agent.name,
            owner,
        };
        sh.store.open(&scope).await?;
        let stored = self.committer().read().await?;
        if !existed {
            sh.emit(&self.id, "", || EventKind::ThreadCreated {
                incarnation: stored.incarnation,
            });
        }
        Ok(stored.incarnation)
    }
}

/// What a regeneration from `from` removes from `stored` (SPEC R1): the
/// store's own cut, over the context order read at `stored`'s newest
/// message. A thread changed since makes the regeneration's expectation
/// fail, so hooks never patch for a cut that is not committed.
async fn sh_cut<C>(
    sh: &Shared<C>,
    stored: &StoredThread,
    from: &str,
) -> Result<Vec<MessageId>, StoreError> {
    if !stored.messages.iter().any(|m| m.id == from) {
        return Ok(Vec::new());
    }
    let anchor = stored.messages.last().map_or(0, |m| m.seq);
    let fence = (
        stored.id.as_str(),
        stored.agent.as_str(),
        stored.incarnation,
    );
    let order = sh
        .store
        .history_messages(fence, HistoryRead::Visible { anchor })
        .await?;
    let order: Vec<&Message> = order.iter().collect();
    Ok(crate::store::regeneration_cut(
        &stored.messages,
        &order,
        from,
    ))
}
