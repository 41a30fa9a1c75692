//! The suite can fail: stores broken on purpose are caught, and the
//! failure names the rule they break. A store that answers asynchronously
//! (through a task on the suite's runtime) is driven and passes.

use std::sync::Arc;

use pai_runtime::store::AdminOp;
use pai_runtime::store::FencingToken;
use pai_runtime::{
    Clock, HookFuture, MemoryStore, Store, StoreError,
    store::{
        AdminReply, Appended, Expect, FacadeOp, FacadeReply, RunOp, RunReply, StoreFuture,
        StoreReply, StoreRequest, Write, Writer,
    },
};
use pai_store_check::{
    CancelPick, Config, ExpectPick, Failure, IncarnationPick, Op, RunPick, TokenPick, WritePick,
    WriterPick, check_store, replay,
};

/// Lets every `Append` land: its token is replaced by the thread's newest.
struct DropsAppendTokens(MemoryStore);

impl Store for DropsAppendTokens {
    fn call(&self, request: StoreRequest) -> StoreFuture<'_> {
        let request = match request {
            StoreRequest::On {
                thread,
                op:
                    pai_runtime::store::Op::Run {
                        run,
                        op: op @ RunOp::Append { .. },
                        ..
                    },
            } => {
                let inspect = StoreRequest::admin(thread.clone(), AdminOp::Inspect);
                let token = match self.0.apply(inspect) {
                    Ok(StoreReply::Admin(AdminReply::Thread(Some(t)))) => t.lease_token,
                    _ => FencingToken::new(0),
                };
                StoreRequest::run(thread, run, token, op)
            }
            other => other,
        };
        self.0.call(request)
    }
}

/// Commits a mutation whatever version it expects.
struct IgnoresVersions(MemoryStore);

impl Store for IgnoresVersions {
    fn call(&self, mut request: StoreRequest) -> StoreFuture<'_> {
        if let StoreRequest::On {
            op: pai_runtime::store::Op::Facade(FacadeOp::Mutate { expect, .. }),
            ..
        } = &mut request
            && matches!(expect, Expect::Version { .. })
        {
            *expect = Expect::Nothing;
        }
        self.0.call(request)
    }
}

/// Takes a cancelled run's model step as the store did before K6 was
/// sharpened: an `Append` of a step the store refuses because the run was
/// cancelled lands anyway (as a trusted append), answered as appended.
struct TakesCancelledSteps(MemoryStore);

impl Store for TakesCancelledSteps {
    fn call(&self, request: StoreRequest) -> StoreFuture<'_> {
        let answer = self.0.apply(request.clone());
        let (Err(StoreError::Cancelled { .. }), Some(thread)) = (&answer, request.thread()) else {
            return HookFuture::ready(answer);
        };
        let Some(pai_runtime::store::Op::Run {
            op:
                RunOp::Append {
                    messages,
                    step: Some(_),
                    ..
                },
            ..
        }) = request.op()
        else {
            return HookFuture::ready(answer);
        };
        let write = FacadeOp::Mutate {
            incarnation: None,
            writer: Writer::Trusted,
            expect: Expect::Nothing,
            writes: messages.iter().cloned().map(Write::Append).collect(),
        };
        let landed = match self.0.apply(StoreRequest::facade(thread, write)) {
            Ok(StoreReply::Facade(FacadeReply::Mutated(Ok(done)))) => {
                Ok(StoreReply::Run(RunReply::Appended(Appended {
                    version: done.version,
                    first_seq: 0,
                    cancel_requested: false,
                })))
            }
            _ => answer,
        };
        HookFuture::ready(landed)
    }
}

/// Answers every request from a task it spawns, through a channel: its
/// futures are pending when first polled, as a network store's are.
struct Spawned(Arc<MemoryStore>);

impl Store for Spawned {
    fn call(&self, request: StoreRequest) -> StoreFuture<'_> {
        let store = self.0.clone();
        HookFuture::new(async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                let _ = tx.send(store.apply(request));
            });
            rx.await.expect("the store task answers")
        })
    }
}

fn config(cases: u32) -> Config {
    Config {
        cases,
        ..Config::default()
    }
}

fn submit() -> Op {
    Op::Submit {
        thread: 0,
        steer: false,
        new_run: true,
        foreign: false,
    }
}

fn claim(worker: u8) -> Op {
    Op::Claim {
        thread: Some(0),
        worker,
        ttl: Some(20),
    }
}

/// A takeover after expiry, then the old holder appends under its stale token.
fn stale_append() -> Vec<Op> {
    vec![
        submit(),
        claim(0),
        Op::Advance { ms: 30 },
        claim(1),
        Op::Append {
            thread: 0,
            run: RunPick::Holder,
            token: TokenPick::Stale(0),
            messages: 1,
            step: true,
            results: false,
            metadata: None,
        },
    ]
}

/// A run cancelled while it works, then its holder commits a model step.
fn cancelled_step() -> Vec<Op> {
    vec![
        submit(),
        claim(0),
        Op::Cancel {
            thread: 0,
            target: CancelPick::Current,
        },
        Op::Append {
            thread: 0,
            run: RunPick::Holder,
            token: TokenPick::Current,
            messages: 1,
            step: true,
            results: false,
            metadata: None,
        },
    ]
}

fn stale_version() -> Vec<Op> {
    vec![
        submit(),
        Op::Mutate {
            thread: 0,
            writer: WriterPick::Trusted,
            expect: ExpectPick::StaleVersion,
            incarnation: IncarnationPick::Unbound,
            writes: vec![WritePick::Metadata {
                key: 0,
                value: Some(1),
            }],
        },
    ]
}

fn expect_rule(result: Result<(), Box<Failure>>, rule: &str) -> Box<Failure> {
    let failure = result.expect_err("the broken store must be caught");
    assert_eq!(failure.rule, rule, "{failure}");
    let report = failure.to_string();
    assert!(report.contains(&format!("rule {rule}")), "{report}");
    assert!(
        report.contains(">>"),
        "the report marks the step that diverged: {report}"
    );
    failure
}

/// K2: a store that lets a stale token's append land fails, on the
/// written sequence and on generated ones.
#[test]
fn k2_a_store_that_lands_stale_appends_fails() {
    let make = |clock: Arc<dyn Clock>| DropsAppendTokens(MemoryStore::new(Some(clock)));
    let failure = expect_rule(replay(make, &stale_append(), &config(1)), "K2");
    assert!(failure.expected.contains("StaleLease"), "{failure}");
    let failure = expect_rule(check_store(make, &config(512)), "K2");
    assert!(
        failure.trace.len() <= 8,
        "shrunk to a short case: {failure}"
    );
}

/// H3: a store that commits under a stale version expectation fails.
#[test]
fn h3_a_store_that_ignores_version_expectations_fails() {
    let make = |clock: Arc<dyn Clock>| IgnoresVersions(MemoryStore::new(Some(clock)));
    let failure = expect_rule(replay(make, &stale_version(), &config(1)), "H3");
    assert!(failure.expected.contains("Conflict"), "{failure}");
    expect_rule(check_store(make, &config(512)), "H3");
}

/// K6: a store that takes a model step from a run a cancel reached
/// (the holder heard of the cancel only at its next renewal) fails, on the
/// written sequence and on generated ones.
#[test]
fn k6_a_store_that_takes_a_cancelled_run_s_step_fails() {
    let make = |clock: Arc<dyn Clock>| TakesCancelledSteps(MemoryStore::new(Some(clock)));
    let failure = expect_rule(replay(make, &cancelled_step(), &config(1)), "K6");
    assert!(failure.expected.contains("Cancelled"), "{failure}");
    expect_rule(check_store(make, &config(512)), "K6");
}

/// A store whose every answer is pending at first, answered by a task on
/// the suite's runtime, conforms like the store it wraps.
#[test]
fn an_asynchronous_store_is_driven() {
    let make = |clock: Arc<dyn Clock>| Spawned(Arc::new(MemoryStore::new(Some(clock))));
    replay(make, &stale_append(), &config(1)).unwrap_or_else(|f| panic!("{f}"));
    check_store(make, &config(16)).unwrap_or_else(|f| panic!("{f}"));
}
