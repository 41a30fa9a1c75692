//! SPEC H3 (and H1, H2 for mutations) as a property against a reference
//! model: random operations on one thread of a `MemoryStore`, applied
//! directly. Trusted (and run) mutations with random writes and random
//! expectations (nothing; the current, a stale or a future version; the
//! current private metadata, an earlier snapshot of it, or a random map),
//! interleaved with changes that are not private metadata: client submits,
//! lease claims and renewals, a run's own appends, run ends.
//!
//! The reference keeps the version, the metadata, the private metadata and
//! the message count. It predicts commit or conflict exactly; a commit
//! bumps the version by exactly one (none for an empty write list) and
//! applies every write; a conflict changes nothing at all.

use pai_runtime::store::FencingToken;
use pai_runtime::store::{
    AdminOp, AdminReply, ClientOp, ClientReply, FacadeOp, FacadeReply, Finish, RunOp, RunReply,
};
use pai_runtime::{
    MemoryStore, Part, Role,
    message::{NewMessage, Outcome, PaiMeta, Producer, Visibility},
    store::{
        Expect, Mutation, Refusal, RunEnd, RunStatus, StoreReply, StoreRequest, StoredThread,
        Submitted, Write, Writer,
    },
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Map, Value, json};

const THREAD: &str = "t";

/// One staged write, as generated.
#[derive(Debug, Clone)]
enum W {
    /// Appends a message (a user one when `true`).
    Append(bool),
    /// Sets (`Some`) or removes metadata key `m<k>`.
    Meta(u8, Option<u8>),
    /// Sets (`Some`) or removes private metadata key `p<k>`.
    Private(u8, Option<u8>),
}

/// An expectation, resolved against the reference when the operation runs.
#[derive(Debug, Clone)]
enum E {
    Nothing,
    /// The current version.
    Current,
    /// A version this far behind the current one (saturating at 0).
    Behind(u8),
    /// A version this far ahead of the current one.
    Ahead(u8),
    /// The current private metadata.
    PrivateNow,
    /// An earlier private metadata the thread had (index modulo their number).
    PrivateEarlier(usize),
    /// Some private metadata map.
    PrivateRandom(Vec<(u8, u8)>),
}

#[derive(Debug, Clone)]
enum Op {
    /// A mutation; by the lease holder under its token when `as_run` and
    /// some run holds the lease, else by trusted code.
    Mutate {
        writes: Vec<W>,
        expect: E,
        as_run: bool,
    },
    /// A client's user message with a new run (a commit, not private).
    Submit,
    /// A worker claims the next run's lease.
    Claim,
    /// The lease holder renews its lease.
    Renew,
    /// The lease holder appends a message of its step.
    RunAppend,
    /// The lease holder's run completes.
    Finish,
}

fn write() -> impl Strategy<Value = W> {
    let value = prop_oneof![1 => Just(None), 3 => (0u8..3).prop_map(Some)];
    prop_oneof![
        any::<bool>().prop_map(W::Append),
        (0u8..3, value.clone()).prop_map(|(k, v)| W::Meta(k, v)),
        (0u8..3, value).prop_map(|(k, v)| W::Private(k, v)),
    ]
}

fn expect() -> impl Strategy<Value = E> {
    prop_oneof![
        2 => Just(E::Nothing),
        3 => Just(E::Current),
        2 => (1u8..4).prop_map(E::Behind),
        1 => (1u8..3).prop_map(E::Ahead),
        3 => Just(E::PrivateNow),
        3 => (0usize..16).prop_map(E::PrivateEarlier),
        1 => prop::collection::vec((0u8..3, 0u8..3), 0..3).prop_map(E::PrivateRandom),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (prop::collection::vec(write(), 0..4), expect(), any::<bool>())
            .prop_map(|(writes, expect, as_run)| Op::Mutate { writes, expect, as_run }),
        2 => Just(Op::Submit),
        1 => Just(Op::Claim),
        1 => Just(Op::Renew),
        1 => Just(Op::RunAppend),
        1 => Just(Op::Finish),
    ]
}

/// The reference model of the thread.
#[derive(Debug, Default)]
struct Model {
    version: u64,
    metadata: Map<String, Value>,
    private: Map<String, Value>,
    messages: usize,
    /// Every private metadata the thread has had, oldest first.
    earlier: Vec<Map<String, Value>>,
    /// The run holding the lease, and its token.
    lease: Option<(String, FencingToken)>,
    ids: u64,
}

/// A private-metadata expectation read in the thread's only incarnation.
fn private(private: Map<String, Value>) -> Expect {
    Expect::PrivateMetadata {
        private,
        incarnation: 1,
    }
}

impl Model {
    fn next_id(&mut self, prefix: &str) -> String {
        self.ids += 1;
        format!("{prefix}{}", self.ids)
    }

    fn resolve(&self, e: &E) -> Expect {
        match e {
            E::Nothing => Expect::Nothing,
            E::Current => Expect::Version {
                version: self.version,
                incarnation: 1,
            },
            E::Behind(k) => Expect::Version {
                version: self.version.saturating_sub(u64::from(*k)),
                incarnation: 1,
            },
            E::Ahead(k) => Expect::Version {
                version: self.version + u64::from(*k),
                incarnation: 1,
            },
            E::PrivateNow => private(self.private.clone()),
            E::PrivateEarlier(i) => private(self.earlier[i % self.earlier.len()].clone()),
            E::PrivateRandom(pairs) => private(
                pairs
                    .iter()
                    .map(|(k, v)| (format!("p{k}"), json!(v)))
                    .collect(),
            ),
        }
    }

    /// SPEC H3, the reference's way.
    fn holds(&self, expect: &Expect) -> bool {
        match expect {
            Expect::Nothing => true,
            Expect::Version { version, .. } => *version == self.version,
            Expect::PrivateMetadata { private, .. } => *private == self.private,
        }
    }

    fn apply(&mut self, w: &Write) {
        let set = |map: &mut Map<String, Value>, key: &str, value: &Option<Value>| match value {
            Some(v) => {
                map.insert(key.to_string(), v.clone());
            }
            None => {
                map.remove(key);
            }
        };
        match w {
            Write::Append(_) => self.messages += 1,
            Write::Metadata { key, value } => set(&mut self.metadata, key, value),
            Write::PrivateMetadata { key, value } => set(&mut self.private, key, value),
            Write::Visibility { .. } => unreachable!("not generated"),
        }
    }

    /// Remembers the private metadata as one the thread has had.
    fn remember(&mut self) {
        if self.earlier.last() != Some(&self.private) {
            self.earlier.push(self.private.clone());
        }
    }

    fn message(&mut self, role: Role, run: Option<&str>) -> NewMessage {
        let producer = match role {
            Role::User => Producer::User,
            _ => Producer::Runtime,
        };
        let id = self.next_id("msg");
        NewMessage {
            id: id.clone().into(),
            role,
            parts: vec![Part::text(id)],
            visibility: Visibility::ALL,
            pai: PaiMeta::new(producer, run, None, 0),
        }
    }

    fn writes(&mut self, ws: &[W]) -> Vec<Write> {
        ws.iter()
            .map(|w| match w {
                W::Append(user) => {
                    let role = if *user { Role::User } else { Role::Assistant };
                    Write::Append(self.message(role, None))
                }
                W::Meta(k, v) => Write::Metadata {
                    key: format!("m{k}"),
                    value: v.map(|v| json!(v)),
                },
                W::Private(k, v) => Write::PrivateMetadata {
                    key: format!("p{k}"),
                    value: v.map(|v| json!(v)),
                },
            })
            .collect()
    }
}

fn inspect(store: &MemoryStore) -> StoredThread {
    match store.apply(StoreRequest::admin(THREAD, AdminOp::Inspect)) {
        Ok(StoreReply::Admin(AdminReply::Thread(Some(t)))) => t,
        other => panic!("inspect answered {other:?}"),
    }
}

/// The stored thread agrees with the reference.
fn agrees(store: &MemoryStore, model: &Model) -> Result<StoredThread, TestCaseError> {
    let t = inspect(store);
    prop_assert_eq!(t.version, model.version, "version");
    prop_assert_eq!(&t.metadata, &model.metadata, "metadata");
    prop_assert_eq!(&t.private_metadata, &model.private, "private metadata");
    prop_assert_eq!(t.messages.len(), model.messages, "messages");
    Ok(t)
}

/// A mutation: predicted exactly.
fn mutate(
    store: &MemoryStore,
    model: &mut Model,
    writes: &[W],
    e: &E,
    as_run: bool,
) -> Result<(), TestCaseError> {
    let before = agrees(store, model)?;
    let expect = model.resolve(e);
    let writes = model.writes(writes);
    let writer = match (&model.lease, as_run) {
        (Some((run, token)), true) => Writer::Run {
            run: run.clone().into(),
            token: *token,
        },
        _ => Writer::Trusted,
    };
    let holds = model.holds(&expect);
    let private = matches!(expect, Expect::PrivateMetadata { .. });
    let reply = store.apply(StoreRequest::facade(
        THREAD,
        FacadeOp::Mutate {
            incarnation: None,
            writer,
            expect,
            writes: writes.clone(),
        },
    ));
    let done: Result<Mutation, Refusal> = match reply {
        Ok(StoreReply::Facade(FacadeReply::Mutated(done))) => done,
        other => return Err(TestCaseError::fail(format!("mutate answered {other:?}"))),
    };
    if !holds {
        prop_assert_eq!(
            done,
            Err(Refusal::Conflict {
                version: model.version,
                incarnation: 1,
                private_changed: private
            })
        );
        prop_assert_eq!(inspect(store), before, "a conflict changes nothing");
        return Ok(());
    }
    let done = done.map_err(|r| TestCaseError::fail(format!("refused: {r:?}")))?;
    let bump = u64::from(!writes.is_empty());
    prop_assert_eq!(done.version, model.version + bump, "one version per commit");
    let appended: Vec<pai_runtime::id::MessageId> = writes
        .iter()
        .filter_map(|w| match w {
            Write::Append(m) => Some(m.id.clone()),
            _ => None,
        })
        .collect();
    prop_assert_eq!(&done.appended, &appended);
    prop_assert!(done.changed.is_empty());
    model.version += bump;
    for w in &writes {
        model.apply(w);
    }
    let after = agrees(store, model)?;
    prop_assert_eq!(&after.runs, &before.runs, "a mutation touches no run");
    if writes.is_empty() {
        prop_assert_eq!(after, before, "an empty mutation changes nothing");
    }
    Ok(())
}

/// A client's message starting a run: one commit (H1).
fn submit(store: &MemoryStore, model: &mut Model) -> Result<(), TestCaseError> {
    let run = model.next_id("run");
    let message = model.message(Role::User, None);
    let (steer, new_run) = (false, Some(run.as_str().into()));
    let submit = ClientOp::Submit {
        message,
        steer,
        new_run,
    };
    let reply = store.apply(StoreRequest::client(THREAD, "a", "o", submit));
    let expected = Submitted::Run {
        run: run.into(),
        version: model.version + 1,
    };
    let expected = StoreReply::Client(ClientReply::Submitted(expected));
    prop_assert_eq!(reply, Ok(expected));
    model.version += 1;
    model.messages += 1;
    Ok(())
}

/// The lease holder appends a message: one commit (H1).
fn run_append(store: &MemoryStore, model: &mut Model) -> Result<(), TestCaseError> {
    if let Some((run, token)) = model.lease.clone() {
        let message = model.message(Role::Assistant, Some(&run));
        let (messages, step) = (vec![message], Some(0));
        let append = RunOp::Append {
            messages,
            step,
            metadata: None,
        };
        let reply = store.apply(StoreRequest::run(THREAD, run, token, append));
        let version = match reply {
            Ok(StoreReply::Run(RunReply::Appended(a))) => a.version,
            other => return Err(TestCaseError::fail(format!("append answered {other:?}"))),
        };
        prop_assert_eq!(version, model.version + 1);
        model.version += 1;
        model.messages += 1;
    }
    Ok(())
}

/// The lease holder's run ends.
fn finish(store: &MemoryStore, model: &mut Model) -> Result<(), TestCaseError> {
    if let Some((run, token)) = model.lease.take() {
        let end = RunEnd {
            status: RunStatus::Completed,
            outcome: Outcome::Completed,
            reason: None,
        };
        let finish = RunOp::Finish {
            end,
            next_run: None,
        };
        let reply = store.apply(StoreRequest::run(THREAD, run, token, finish));
        let stored = matches!(
            reply,
            Ok(StoreReply::Run(RunReply::Finished(Finish::Stored { .. })))
        );
        prop_assert!(stored, "{:?}", reply);
    }
    Ok(())
}

/// A change that is not private metadata: private and client metadata stay
/// as they were; the version follows the store (a commit there is H1's
/// business, checked where predicted).
fn other(store: &MemoryStore, model: &mut Model, op: &Op) -> Result<(), TestCaseError> {
    agrees(store, model)?;
    match op {
        Op::Submit => submit(store, model)?,
        Op::Claim => {
            let reply = store.apply(StoreRequest::claim(Some(THREAD.into()), "w", None));
            match reply {
                Ok(StoreReply::Admin(AdminReply::Claimed(Some(c)))) => {
                    model.lease = Some((c.run.to_string(), c.token))
                }
                Ok(StoreReply::Admin(AdminReply::Claimed(None))) => {}
                other => return Err(TestCaseError::fail(format!("claim answered {other:?}"))),
            }
        }
        Op::Renew => {
            if let Some((run, token)) = model.lease.clone() {
                let reply = store.apply(StoreRequest::run(THREAD, run, token, RunOp::Renew));
                prop_assert!(
                    matches!(reply, Ok(StoreReply::Run(RunReply::Renewed { .. }))),
                    "{:?}",
                    reply
                );
            }
        }
        Op::RunAppend => run_append(store, model)?,
        Op::Finish => finish(store, model)?,
        Op::Mutate { .. } => unreachable!(),
    }
    let t = inspect(store);
    prop_assert!(t.version >= model.version, "versions never go back");
    model.version = t.version;
    agrees(store, model)?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/h3_model.proptest-regressions"),
        ))),
        ..ProptestConfig::default()
    })]

    /// SPEC H3: commit or conflict exactly as the reference predicts; a
    /// commit is one version with every write, a conflict changes nothing.
    #[test]
    fn h3_expectations_match_the_reference(ops in prop::collection::vec(op(), 1..48)) {
        let store = MemoryStore::default();
        let opened = store.apply(StoreRequest::client(THREAD, "a", "o", ClientOp::Open));
        prop_assert_eq!(opened, Ok(StoreReply::Client(ClientReply::Opened)));
        let mut model = Model {
            version: inspect(&store).version,
            ..Model::default()
        };
        model.remember();
        for op in &ops {
            match op {
                Op::Mutate { writes, expect, as_run } => {
                    mutate(&store, &mut model, writes, expect, *as_run)?
                }
                other_op => other(&store, &mut model, other_op)?,
            }
            model.remember();
        }
    }
}

/// The reference itself can tell a conflict from a commit: a stale version
/// and an earlier private snapshot conflict, the current ones commit (a
/// fixed sequence, so the property above cannot pass by never conflicting).
#[test]
fn h3_reference_sees_both_outcomes() {
    let store = MemoryStore::default();
    store
        .apply(StoreRequest::client(THREAD, "a", "o", ClientOp::Open))
        .unwrap();
    let mut model = Model {
        version: inspect(&store).version,
        ..Model::default()
    };
    model.remember();
    let private = |k, v| vec![W::Private(k, Some(v))];
    let steps = [
        (private(0, 1), E::Current, true),
        (private(0, 2), E::Behind(1), false),
        (private(1, 1), E::PrivateEarlier(0), false),
        (vec![W::Meta(0, Some(1))], E::PrivateNow, true),
        (vec![], E::Ahead(1), false),
        (vec![], E::Current, true),
    ];
    for (writes, e, commits) in steps {
        let expect = model.resolve(&e);
        assert_eq!(model.holds(&expect), commits, "{e:?}");
        mutate(&store, &mut model, &writes, &e, false).unwrap();
        model.remember();
    }
    assert_eq!(model.private.get("p0"), Some(&json!(1)));
    assert_eq!(model.metadata.get("m0"), Some(&json!(1)));
}
