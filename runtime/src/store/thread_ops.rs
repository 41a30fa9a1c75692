//! The thread facade's transactions on one thread record (SPEC H2, H3, H5,
//! K4, R1): a mutation of staged writes checked against its expectation,
//! a regeneration, and deleting and recreating the thread (incarnations).
//! Each checks everything before it changes anything: a refused request
//! changes nothing.

use super::super::cut::regeneration_cut;
use super::super::mutation::{
    DELETED, Deletion, Expect, Mutation, Refusal, Regeneration, VisibilityChange, Write, Writer,
};
use super::super::record::{RunEnd, RunStatus, StoreError};
use super::ThreadRec;
use crate::id::RunId;
use crate::message::{Outcome, Role};

/// A store answer for the facade: refused (nothing changed) or done.
pub(super) type Facade<T> = Result<Result<T, Refusal>, StoreError>;

impl ThreadRec {
    /// Refuses a request bound to an incarnation that is gone (SPEC H5).
    pub(in crate::store) fn bound_to(
        &self,
        thread: &str,
        incarnation: Option<u64>,
    ) -> Result<(), StoreError> {
        let bound = incarnation.unwrap_or(self.incarnation);
        if self.deleted || bound != self.incarnation {
            return Err(StoreError::Deleted {
                thread: thread.into(),
                incarnation: bound,
            });
        }
        Ok(())
    }

    /// The deleted incarnation `run` belonged to, if it did.
    pub(in crate::store) fn retired(&self, run: &str) -> Option<u64> {
        self.retired.get(run).copied()
    }

    pub(in crate::store) fn is_deleted(&self) -> bool {
        self.deleted
    }

    /// Commits `writes` as one change (SPEC H2): one version bump, or
    /// nothing when the expectation fails (H3), a trusted rewrite meets an
    /// active run (K4) or a write names a message that is not there.
    pub(in crate::store) fn mutate(
        &mut self,
        writer: &Writer,
        expect: &Expect,
        writes: Vec<Write>,
    ) -> Facade<Mutation> {
        if let Err(refused) = self.may_mutate(writer, expect, &writes) {
            return Ok(Err(refused));
        }
        // A visibility write that changes nothing is no write: a mutation
        // of only those commits nothing (and bumps no version).
        let mut writes = writes;
        writes.retain(|w| match w {
            Write::Visibility {
                message,
                visibility,
            } => self
                .messages
                .iter()
                .any(|m| m.id == *message && m.visibility != *visibility),
            _ => true,
        });
        let mut done = Mutation {
            version: self.version,
            incarnation: self.incarnation,
            appended: Vec::new(),
            changed: Vec::new(),
        };
        if writes.is_empty() {
            return Ok(Ok(done));
        }
        for w in writes {
            self.apply_write(w, &mut done);
        }
        self.version += 1;
        done.version = self.version;
        Ok(Ok(done))
    }

    /// Every check of a mutation, before anything changes.
    fn may_mutate(
        &self,
        writer: &Writer,
        expect: &Expect,
        writes: &[Write],
    ) -> Result<(), Refusal> {
        self.expectation(expect)?;
        if *writer == Writer::Trusted && writes.iter().any(Write::rewrites) {
            self.idle_for_rewrite(false)?;
        }
        for w in writes {
            if let Write::Visibility { message, .. } = w
                && !self.messages.iter().any(|m| m.id == *message)
            {
                return Err(Refusal::NoMessage {
                    message: message.clone(),
                });
            }
        }
        Ok(())
    }

    fn apply_write(&mut self, write: Write, done: &mut Mutation) {
        match write {
            Write::Append(m) => {
                done.appended.push(m.id.clone());
                self.messages.push(m.stored(self.next_seq));
                self.next_seq += 1;
            }
            Write::Metadata { key, value } => set_key(&mut self.metadata, key, value),
            Write::PrivateMetadata { key, value } => {
                set_key(&mut self.private_metadata, key, value)
            }
            Write::Visibility {
                message,
                visibility,
            } => {
                let Some(at) = self.messages.iter().position(|m| m.id == message) else {
                    return;
                };
                let m = &mut self.messages[at];
                if m.visibility != visibility {
                    done.changed.push(VisibilityChange {
                        message,
                        before: m.visibility,
                        after: visibility,
                    });
                    m.visibility = visibility;
                    self.touch_messages(at);
                }
            }
        }
    }

    /// SPEC H3: a version expectation conflicts on any change since; a
    /// private-metadata expectation only when private metadata changed;
    /// either when the incarnation is not the one it was read from (H5).
    fn expectation(&self, expect: &Expect) -> Result<(), Refusal> {
        let holds = match expect {
            Expect::Nothing => true,
            Expect::Version {
                version,
                incarnation,
            } => *version == self.version && *incarnation == self.incarnation,
            Expect::PrivateMetadata {
                private,
                incarnation,
            } => *private == self.private_metadata && *incarnation == self.incarnation,
        };
        match holds {
            true => Ok(()),
            false => Err(Refusal::Conflict {
                version: self.version,
                incarnation: self.incarnation,
                private_changed: matches!(expect, Expect::PrivateMetadata { private, .. }
                    if *private != self.private_metadata),
            }),
        }
    }

    /// SPEC K4: a trusted rewrite is refused while a run is running or
    /// waiting (and, for a regeneration, while one is queued).
    fn idle_for_rewrite(&self, queued_too: bool) -> Result<(), Refusal> {
        let busy = self
            .current
            .clone()
            .or_else(|| queued_too.then(|| self.queue.front().cloned()).flatten());
        let Some(run) = busy else {
            return Ok(());
        };
        let status = self
            .runs
            .iter()
            .find(|r| r.id == run)
            .map_or(RunStatus::Queued, |r| r.status);
        Err(Refusal::Busy {
            run: run.into(),
            status,
        })
    }

    /// SPEC R1: removes what the model reads after user message `from`
    /// (context order, M1) but no stored result of a call it keeps
    /// ([`regeneration_cut`]), applies the rewrite's metadata `writes`
    /// (R2) and queues `new_run` to start from `from`: one commit.
    pub(in crate::store) fn regenerate(
        &mut self,
        from: &str,
        new_run: &str,
        expect: &Expect,
        writes: Vec<Write>,
    ) -> Facade<Regeneration> {
        if let Err(refused) = self.may_regenerate(from, expect, &writes) {
            return Ok(Err(refused));
        }
        let removed = regeneration_cut(&self.messages, &self.visible_messages(None), from);
        if let Some(first) = self.messages.iter().position(|m| removed.contains(&m.id)) {
            self.messages.retain(|m| !removed.contains(&m.id));
            self.touch_messages(first);
        }
        self.forget_removed(&removed);
        let mut done = Mutation {
            version: self.version,
            incarnation: self.incarnation,
            appended: Vec::new(),
            changed: Vec::new(),
        };
        for w in writes {
            self.apply_write(w, &mut done);
        }
        self.admit(new_run, from);
        self.version += 1;
        Ok(Ok(Regeneration {
            version: self.version,
            incarnation: self.incarnation,
            run: new_run.into(),
            from: from.into(),
            removed,
        }))
    }

    fn may_regenerate(&self, from: &str, expect: &Expect, writes: &[Write]) -> Result<(), Refusal> {
        self.expectation(expect)?;
        self.idle_for_rewrite(true)?;
        let Some(m) = self.messages.iter().find(|m| m.id == from) else {
            return Err(Refusal::NoMessage {
                message: from.into(),
            });
        };
        if m.role != Role::User {
            return Err(Refusal::NotUserMessage {
                message: from.into(),
            });
        }
        // A regeneration's own writes are metadata patches (R2), never
        // messages: those would be removed or reordered by the truncation.
        if writes
            .iter()
            .any(|w| matches!(w, Write::Append(_) | Write::Visibility { .. }))
        {
            return Err(Refusal::NoMessage {
                message: "(a regeneration writes metadata only)".into(),
            });
        }
        Ok(())
    }

    /// SPEC H5: the incarnation ends. Every run that had not ended is
    /// cancelled (reason `deleted`) and retired, so its writes are refused
    /// from now on; the lease token moves on; the record keeps only what a
    /// later incarnation needs (its number, tokens, versions, sequence
    /// numbers, which never go back).
    pub(in crate::store) fn delete(&mut self) -> Deletion {
        let end = RunEnd {
            status: RunStatus::Cancelled,
            outcome: Outcome::Cancelled,
            reason: Some(DELETED.to_string()),
        };
        let open: Vec<(RunId, RunStatus)> = self
            .runs
            .iter()
            .filter(|r| {
                matches!(
                    r.status,
                    RunStatus::Queued | RunStatus::Running | RunStatus::Waiting
                )
            })
            .map(|r| (r.id.clone(), r.status))
            .collect();
        for (run, _) in &open {
            self.finish_run(run, &end);
        }
        let incarnation = self.incarnation;
        self.retired.extend(
            self.runs
                .drain(..)
                .map(|r| (r.id.into_string(), incarnation)),
        );
        self.messages.clear();
        self.touch_messages(0);
        self.metadata.clear();
        self.private_metadata.clear();
        self.queue.clear();
        self.hidden.clear();
        self.entered.clear();
        self.current = None;
        self.steers.clear();
        self.retire_lease();
        self.version += 1;
        self.deleted = true;
        Deletion {
            incarnation,
            cancelled: open,
            version: self.version,
        }
    }

    /// A deleted thread opened again: a new incarnation, for `owner`.
    pub(in crate::store) fn recreate(&mut self, agent: &str, owner: &str) {
        self.agent = agent.to_string();
        self.owner = owner.to_string();
        self.incarnation += 1;
        self.deleted = false;
    }
}

fn set_key(
    map: &mut serde_json::Map<String, serde_json::Value>,
    key: String,
    value: Option<serde_json::Value>,
) {
    match value {
        Some(v) => {
            map.insert(key, v);
        }
        None => {
            map.remove(&key);
        }
    }
}
