//! The one path every facade write takes (SPEC H2, H3, K2, K4, R2): read
//! the thread, stage, let `prepare_history_rewrite` patch a rewrite,
//! commit in one store transaction under the process side's lock (so
//! watchers hear commits in version order, H1), and say what happened.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::event::EventKind;
use crate::future::panic_message;
use crate::lifecycle::{HookCx, RewriteFact, RewriteInput, RewriteKind};
use crate::shared::Shared;
use crate::staged::MutateError;
use crate::staged::Staged;
use crate::store::{Expect, Mutation, StoreError, StoredThread, VisibilityChange, Write, Writer};

/// Who writes, to which thread, bound to which incarnation.
pub(crate) struct Committer<'a, C> {
    pub(crate) sh: &'a Shared<C>,
    pub(crate) thread: &'a str,
    pub(crate) writer: Writer,
    /// The incarnation the writer is bound to (SPEC H5); `None`: whichever
    /// the mutation reads.
    pub(crate) incarnation: Option<u64>,
}

impl<C: Send + Sync + 'static> Committer<'_, C> {
    fn run(&self) -> &str {
        match &self.writer {
            Writer::Run { run, .. } => run,
            Writer::Trusted => "",
        }
    }

    fn emit(&self, kind: impl FnOnce() -> EventKind) {
        self.sh.emit(self.thread, self.run(), kind);
    }

    /// The thread as stored, if it is still the incarnation bound to.
    pub(crate) async fn read(&self) -> Result<StoredThread, StoreError> {
        let stored = self.sh.store.inspect(self.thread).await?;
        let stored = stored.ok_or_else(|| StoreError::NoThread(self.thread.into()))?;
        match self.incarnation {
            Some(i) if i != stored.incarnation => Err(StoreError::Deleted {
                thread: self.thread.into(),
                incarnation: i,
            }),
            _ => Ok(stored),
        }
    }

    /// SPEC H2: `f` stages writes over the stored thread; they commit as
    /// one change if `expect` holds (H3), or nothing does.
    pub(crate) async fn mutate<T>(
        &self,
        expect: Expect,
        f: impl FnOnce(&mut Staged<'_>) -> Result<T, String>,
    ) -> Result<(T, Mutation), MutateError> {
        let stored = match self.read().await {
            Ok(stored) => stored,
            // A trusted handle bound to a deleted incarnation (SPEC H5):
            // logged like any other refused trusted write.
            Err(e @ StoreError::Deleted { .. }) if self.run().is_empty() => {
                return Err(self.refused("mutate", e.into()));
            }
            Err(e) => return Err(e.into()),
        };
        let run = (!self.run().is_empty()).then_some(self.run());
        let mut staged = Staged::new(&stored, &*self.sh.ids, self.sh.clock.now(), run);
        let out = match catch_unwind(AssertUnwindSafe(|| f(&mut staged))) {
            Ok(Ok(out)) => out,
            Ok(Err(e)) => return Err(self.refused("mutate", MutateError::Aborted(e))),
            Err(p) => {
                let why = format!("panicked: {}", panic_message(&*p));
                return Err(self.refused("mutate", MutateError::Aborted(why)));
            }
        };
        let mut writes = staged.writes;
        let rewrite = visibility_rewrite(&stored, &writes);
        let op = if rewrite.is_some() {
            "set_visibility"
        } else {
            "mutate"
        };
        let mut patched = Vec::new();
        if let Some(kind) = &rewrite {
            let (extra, keys) = rewrite_writes(self.sh, &stored, kind)
                .await
                .map_err(|e| self.refused(op, e))?;
            writes.extend(extra);
            patched = keys;
        }
        let done = self.commit(stored.incarnation, expect, writes).await;
        let done = done.map_err(|e| self.refused(op, e))?;
        if rewrite.is_some() && !done.changed.is_empty() {
            self.rewritten(&done, patched);
        }
        Ok((out, done))
    }

    async fn commit(
        &self,
        incarnation: u64,
        expect: Expect,
        writes: Vec<Write>,
    ) -> Result<Mutation, MutateError> {
        let (metadata, private) = keys_of(&writes);
        let mut attached = self.sh.process.attach(self.thread).await;
        let reply = self
            .sh
            .store
            .mutate(self.thread, incarnation, &self.writer, expect, writes)
            .await?;
        let done = reply?;
        if !done.appended.is_empty()
            || !metadata.is_empty()
            || !private.is_empty()
            || !done.changed.is_empty()
        {
            self.sh.told(&mut attached, done.version);
        }
        drop(attached);
        self.emit(|| EventKind::Mutated {
            version: done.version,
            appended: done.appended.clone(),
            metadata,
            private,
            visibility: done.changed.clone(),
        });
        Ok(done)
    }

    /// A committed visibility rewrite: logged, and its fact on its way to
    /// `history_rewritten` (R3).
    fn rewritten(&self, done: &Mutation, patched: Vec<String>) {
        self.emit(|| EventKind::HistoryRewritten {
            version: done.version,
            kind: "visibility",
            removed: Vec::new(),
            patched,
            started: None,
        });
        let fact = RewriteFact {
            version: done.version,
            incarnation: done.incarnation,
            kind: RewriteKind::Visibility {
                changes: done.changed.clone(),
            },
        };
        self.sh.deliver_rewrite(self.thread, fact);
    }

    /// Logs why a facade operation committed nothing.
    pub(crate) fn refused(&self, op: &'static str, e: MutateError) -> MutateError {
        self.emit(|| EventKind::MutationRefused {
            op,
            reason: e.to_string(),
            conflict: e.is_conflict(),
        });
        e
    }
}

/// The visibility rewrite `writes` make of `stored`, if they change any.
fn visibility_rewrite(stored: &StoredThread, writes: &[Write]) -> Option<RewriteKind> {
    let mut changes: Vec<VisibilityChange> = Vec::new();
    for w in writes {
        let Write::Visibility {
            message,
            visibility,
        } = w
        else {
            continue;
        };
        let before = changes
            .iter()
            .rev()
            .find(|c| c.message == *message)
            .map(|c| c.after)
            .or_else(|| {
                stored
                    .messages
                    .iter()
                    .find(|m| m.id == *message)
                    .map(|m| m.visibility)
            })?;
        changes.push(VisibilityChange {
            message: message.clone(),
            before,
            after: *visibility,
        });
    }
    changes.retain(|c| c.before != c.after);
    (!changes.is_empty() || writes.iter().any(Write::rewrites))
        .then_some(RewriteKind::Visibility { changes })
}

/// SPEC L11, R2: the composed `prepare_history_rewrite` patches for a
/// rewrite, as writes for its transaction, and the keys they write.
pub(crate) async fn rewrite_writes<C: Send + Sync + 'static>(
    sh: &Shared<C>,
    stored: &StoredThread,
    kind: &RewriteKind,
) -> Result<(Vec<Write>, Vec<String>), MutateError> {
    let lifecycle = &sh.agent.lifecycle;
    if !lifecycle
        .phases()
        .contains(crate::lifecycle::Phase::PrepareHistoryRewrite)
    {
        return Ok((Vec::new(), Vec::new()));
    }
    let cx = HookCx::new(&sh.context, "", &stored.id, 0, sh.clock.now());
    let input = RewriteInput {
        kind,
        thread: stored,
    };
    let patch = crate::future::guarded(|| lifecycle.prepare_history_rewrite(&cx, &input)).await;
    let patch = match patch {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return Err(MutateError::Hook(e.to_string())),
        Err(panic) => return Err(MutateError::Hook(format!("panicked: {panic}"))),
    };
    let writes = patch.into_writes();
    let (mut keys, private) = keys_of(&writes);
    keys.extend(private.into_iter().map(|k| format!("private.{k}")));
    Ok((writes, keys))
}

/// The metadata and private metadata keys `writes` touch, in order.
fn keys_of(writes: &[Write]) -> (Vec<String>, Vec<String>) {
    let (mut metadata, mut private) = (Vec::new(), Vec::new());
    for w in writes {
        match w {
            Write::Metadata { key, .. } if !metadata.contains(key) => metadata.push(key.clone()),
            Write::PrivateMetadata { key, .. } if !private.contains(key) => {
                private.push(key.clone())
            }
            _ => {}
        }
    }
    (metadata, private)
}
