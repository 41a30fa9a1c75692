//! The thread facade (SPEC H2, H3, H5, K2, K4, R1): mutations of staged
//! writes under an expectation, and regeneration.

use pai_runtime::store::{FacadeOp, FacadeReply};
use pai_runtime::{
    Role, StoreError,
    message::Visibility,
    store::{
        Expect, Mutation, Refusal, Regeneration, RunStatus, StoreReply, StoreRequest,
        VisibilityChange, Write, Writer,
    },
};
use serde_json::{Map, Value, json};

use super::thread::ThreadModel;
use super::{Model, Step};
use crate::ops::{ExpectPick, IncarnationPick, WritePick, WriterPick};
use pai_runtime::id::MessageId;

impl Model {
    fn expectation(&self, t: usize, pick: ExpectPick) -> Expect {
        let th = &self.threads[t];
        match pick {
            ExpectPick::Nothing => Expect::Nothing,
            ExpectPick::Version => Expect::Version {
                version: th.version,
                incarnation: th.incarnation,
            },
            ExpectPick::StaleVersion if th.version > 0 => Expect::Version {
                version: th.version - 1,
                incarnation: th.incarnation,
            },
            ExpectPick::StaleVersion => Expect::Version {
                version: th.version + 1,
                incarnation: th.incarnation,
            },
            ExpectPick::PrivateMetadata => Expect::PrivateMetadata {
                private: th.private_metadata.clone(),
                incarnation: th.incarnation,
            },
            ExpectPick::StalePrivateMetadata => {
                let mut stale = th.private_metadata.clone();
                stale.insert("stale".into(), json!(true));
                Expect::PrivateMetadata {
                    private: stale,
                    incarnation: th.incarnation,
                }
            }
            // H5: equal values read in the incarnation before conflict all the same.
            ExpectPick::OldIncarnation => Expect::PrivateMetadata {
                private: th.private_metadata.clone(),
                incarnation: th.incarnation.saturating_sub(1),
            },
        }
    }

    fn write(&mut self, t: usize, pick: WritePick, run: Option<&str>) -> Write {
        let key = |k: u8| format!("k{k}");
        let value = |v: Option<u8>| v.map(|v| json!(v));
        match pick {
            WritePick::Append => Write::Append(self.message(
                Role::Assistant,
                pai_runtime::message::Producer::Lifecycle,
                run,
                None,
            )),
            WritePick::Metadata { key: k, value: v } => Write::Metadata {
                key: key(k),
                value: value(v),
            },
            WritePick::PrivateMetadata { key: k, value: v } => Write::PrivateMetadata {
                key: key(k),
                value: value(v),
            },
            WritePick::Visibility {
                message,
                visibility,
            } => {
                let messages = &self.threads[t].messages;
                let message = match messages.is_empty() {
                    true => "m-missing".into(),
                    false => messages[message as usize % messages.len()].id.clone(),
                };
                let visibility = match visibility {
                    0 => Visibility::ALL,
                    1 => Visibility {
                        transcript: true,
                        context: false,
                    },
                    _ => Visibility {
                        transcript: false,
                        context: false,
                    },
                };
                Write::Visibility {
                    message,
                    visibility,
                }
            }
        }
    }

    pub(super) fn mutate(
        &mut self,
        t: usize,
        writer: WriterPick,
        expect: ExpectPick,
        incarnation: IncarnationPick,
        writes: &[WritePick],
    ) -> Step {
        let writer = match writer {
            WriterPick::Trusted => Writer::Trusted,
            WriterPick::Run(k) => Writer::Run {
                run: self.threads[t].acting_run().into(),
                token: self.pick_token(t, k),
            },
        };
        let run = match &writer {
            Writer::Run { run, .. } => Some(run.clone()),
            Writer::Trusted => None,
        };
        let writes: Vec<Write> = writes
            .iter()
            .map(|w| self.write(t, *w, run.as_deref()))
            .collect();
        let expect = self.expectation(t, expect);
        let th = &self.threads[t];
        let incarnation = match incarnation {
            IncarnationPick::Unbound => None,
            IncarnationPick::Current => Some(th.incarnation),
            IncarnationPick::Previous => Some(th.incarnation - 1),
        };
        let request = StoreRequest::facade(
            th.id.clone(),
            FacadeOp::Mutate {
                incarnation,
                writer: writer.clone(),
                expect: expect.clone(),
                writes: writes.clone(),
            },
        );
        let rule = mutate_rule(th, &writer, &expect, incarnation, &writes);
        let checked = self.reach(t, run.as_deref()).and_then(|()| {
            let th = &self.threads[t];
            bound_to(th, incarnation)?;
            match &writer {
                // K2, then K6: a run a cancel reached mutates nothing.
                Writer::Run { run, token } => super::runs::holding(th, run, *token)
                    .and_then(|()| super::runs::closing_current(th, run)),
                Writer::Trusted => Ok(()),
            }
        });
        if let Err(e) = checked {
            return Step::call(request, Err(e), rule);
        }
        let now = self.now;
        let th = &mut self.threads[t];
        let done = mutate_on(th, &writer, &expect, writes);
        if done.is_ok() && run.is_some() {
            th.touch(now);
        }
        Step::call(
            request,
            Ok(StoreReply::Facade(FacadeReply::Mutated(done))),
            rule,
        )
    }

    pub(super) fn regenerate(
        &mut self,
        t: usize,
        from: u8,
        expect: ExpectPick,
        writes: &[WritePick],
    ) -> Step {
        // A regeneration's own writes are metadata patches (R2): the model
        // sends only those (MemoryStore refuses messages and visibility here).
        let writes: Vec<Write> = writes
            .iter()
            .filter(|w| {
                matches!(
                    w,
                    WritePick::Metadata { .. } | WritePick::PrivateMetadata { .. }
                )
            })
            .map(|w| self.write(t, *w, None))
            .collect();
        let expect = self.expectation(t, expect);
        let new_run = self.fresh("r");
        let th = &self.threads[t];
        // Mostly a user message (R1 starts from one), sometimes any message
        // (a regeneration from another is refused).
        let users: Vec<&MessageId> = th
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| &m.id)
            .collect();
        let from = match (from % 4 == 3, users.is_empty(), th.messages.is_empty()) {
            (_, _, true) => "m-missing".into(),
            (false, false, _) => users[from as usize % users.len()].clone(),
            _ => th.messages[from as usize % th.messages.len()].id.clone(),
        };
        let request = StoreRequest::facade(
            th.id.clone(),
            FacadeOp::Regenerate {
                incarnation: None,
                from: from.clone(),
                new_run: new_run.clone().into(),
                expect: expect.clone(),
                writes: writes.clone(),
            },
        );
        if let Err(e) = self.reach(t, None) {
            return Step::call(request, Err(e), "H5");
        }
        let th = &mut self.threads[t];
        let rule = match expectation(th, &expect) {
            Err(_) => "H3",
            Ok(()) => "K4",
        };
        let done = regenerate_on(th, &from, &new_run, &expect, writes);
        Step::call(
            request,
            Ok(StoreReply::Facade(FacadeReply::Regenerated(done))),
            rule,
        )
    }
}

fn mutate_rule(
    th: &ThreadModel,
    writer: &Writer,
    expect: &Expect,
    incarnation: Option<u64>,
    writes: &[Write],
) -> &'static str {
    if incarnation.is_some_and(|i| i != th.incarnation) || !th.live() {
        return "H5";
    }
    if let Writer::Run { token, .. } = writer
        && *token != th.lease.token
    {
        return "K2";
    }
    if expectation(th, expect).is_err() || !matches!(expect, Expect::Nothing) {
        return "H3";
    }
    match writes.iter().any(|w| matches!(w, Write::Visibility { .. })) {
        true => "K4",
        false => "H2",
    }
}

/// H5: a request bound to an incarnation that is gone is refused.
fn bound_to(th: &ThreadModel, incarnation: Option<u64>) -> Result<(), StoreError> {
    let bound = incarnation.unwrap_or(th.incarnation);
    match bound == th.incarnation {
        true => Ok(()),
        false => Err(StoreError::Deleted {
            thread: th.id.clone().into(),
            incarnation: bound,
        }),
    }
}

/// H3: a version expectation conflicts on any change since; a private
/// metadata one only when private metadata changed; either one read from
/// another incarnation (H5). The conflict names the thread's version and
/// incarnation, and whether a private-metadata expectation found other values.
fn expectation(th: &ThreadModel, expect: &Expect) -> Result<(), Refusal> {
    let holds = match expect {
        Expect::Nothing => true,
        Expect::Version {
            version,
            incarnation,
        } => *version == th.version && *incarnation == th.incarnation,
        Expect::PrivateMetadata {
            private,
            incarnation,
        } => *private == th.private_metadata && *incarnation == th.incarnation,
    };
    match holds {
        true => Ok(()),
        false => Err(Refusal::Conflict {
            version: th.version,
            incarnation: th.incarnation,
            private_changed: matches!(expect, Expect::PrivateMetadata { private, .. }
                if *private != th.private_metadata),
        }),
    }
}

/// K4: a trusted rewrite is refused while a run is running or waiting
/// (and, for a regeneration, while one is queued).
fn idle_for_rewrite(th: &ThreadModel, queued_too: bool) -> Result<(), Refusal> {
    let first_queued = || th.queued().into_iter().next().filter(|_| queued_too);
    let busy = th.current().or_else(first_queued);
    let Some(run) = busy else { return Ok(()) };
    let status = th.run(&run).map_or(RunStatus::Queued, |r| r.status);
    Err(Refusal::Busy {
        run: run.into(),
        status,
    })
}

/// H2: every write commits in one change, or none does.
fn mutate_on(
    th: &mut ThreadModel,
    writer: &Writer,
    expect: &Expect,
    writes: Vec<Write>,
) -> Result<Mutation, Refusal> {
    expectation(th, expect)?;
    if *writer == Writer::Trusted && writes.iter().any(Write::rewrites) {
        idle_for_rewrite(th, false)?;
    }
    for w in &writes {
        if let Write::Visibility { message, .. } = w
            && !th.messages.iter().any(|m| m.id == *message)
        {
            return Err(Refusal::NoMessage {
                message: message.clone(),
            });
        }
    }
    // A visibility write that changes nothing is no change: a mutation of
    // only those commits nothing and bumps no version (as MemoryStore does;
    // H1 speaks only of changes).
    let writes: Vec<Write> = writes
        .into_iter()
        .filter(|w| match w {
            Write::Visibility {
                message,
                visibility,
            } => th
                .messages
                .iter()
                .any(|m| m.id == *message && m.visibility != *visibility),
            _ => true,
        })
        .collect();
    let mut done = Mutation {
        version: th.version,
        incarnation: th.incarnation,
        appended: vec![],
        changed: vec![],
    };
    if writes.is_empty() {
        return Ok(done);
    }
    for w in writes {
        apply_write(th, w, &mut done);
    }
    done.version = th.commit();
    Ok(done)
}

fn apply_write(th: &mut ThreadModel, write: Write, done: &mut Mutation) {
    match write {
        Write::Append(m) => {
            let id = th.store(m);
            th.enter([id.clone()]);
            done.appended.push(id.into());
        }
        Write::Metadata { key, value } => set_key(&mut th.metadata, key, value),
        Write::PrivateMetadata { key, value } => set_key(&mut th.private_metadata, key, value),
        Write::Visibility {
            message,
            visibility,
        } => {
            if let Some(m) = th.messages.iter_mut().find(|m| m.id == message)
                && m.visibility != visibility
            {
                done.changed.push(VisibilityChange {
                    message,
                    before: m.visibility,
                    after: visibility,
                });
                m.visibility = visibility;
            }
        }
    }
}

fn set_key(map: &mut Map<String, Value>, key: String, value: Option<Value>) {
    match value {
        Some(v) => map.insert(key, v),
        None => map.remove(&key),
    };
}

/// R1: drop what the model reads after user message `from` (`order.rs`),
/// queue a new run from it; one commit. Refused while any run is owed the thread (K4).
fn regenerate_on(
    th: &mut ThreadModel,
    from: &str,
    new_run: &str,
    expect: &Expect,
    writes: Vec<Write>,
) -> Result<Regeneration, Refusal> {
    expectation(th, expect)?;
    idle_for_rewrite(th, true)?;
    let Some(m) = th.messages.iter().find(|m| m.id == from) else {
        return Err(Refusal::NoMessage {
            message: from.into(),
        });
    };
    if m.role != Role::User {
        return Err(Refusal::NotUserMessage {
            message: from.into(),
        });
    }
    // R1: what the model reads after `from` (M1), never a kept call's result.
    let cut = th.cut(from);
    th.forget(&cut);
    let removed: Vec<MessageId> = cut.into_iter().map(MessageId::from).collect();
    let mut done = Mutation {
        version: th.version,
        incarnation: th.incarnation,
        appended: vec![],
        changed: vec![],
    };
    for w in writes {
        apply_write(th, w, &mut done);
    }
    th.admit(new_run, from);
    th.commit();
    Ok(Regeneration {
        version: th.version,
        incarnation: th.incarnation,
        run: new_run.into(),
        from: from.into(),
        removed,
    })
}
