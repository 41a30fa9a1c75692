//! Several workers on one store (SPEC K2, K3, K5), with the runtime used
//! directly: two `Runtime::work` loops share a `MemoryStore`; one is cut
//! off from the store while its tool runs. Its renewal fails, so it stops
//! at its next write; the other takes the run over once the lease expired,
//! runs the call that has no committed result again with the same
//! idempotency key, and ends the run. A stale token changes nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pai_runtime::store::{AdminOp, AdminReply, ClientOp, RunOp, RunReply};
use pai_runtime::{
    Agent, Clock, HookFuture, MemoryStore, Millis, Part, Runtime, Store, StoreError, ToolCx,
    ToolError, WorkerConfig,
    event::EventKind,
    model::ModelMap,
    store::{RunStatus, StoreFuture, StoreReply, StoreRequest},
    tool_fn,
};
use serde_json::{Value, json};

use crate::common;
use common::{CountingIds, RecordingSink, ScriptedModel, Turn};

/// Tokio's paused time, from the test's start.
struct TokioClock(tokio::time::Instant);

impl Clock for TokioClock {
    fn now(&self) -> Millis {
        u64::try_from(self.0.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
    fn sleep(&self, ms: Millis) -> HookFuture<'static, ()> {
        HookFuture::new(tokio::time::sleep(Duration::from_millis(ms)))
    }
}

/// One worker's way to the shared store; `cut` makes every request fail as
/// a partition would.
struct Link {
    store: Arc<MemoryStore>,
    cut: Arc<AtomicBool>,
}

impl Store for Link {
    fn call(&self, request: StoreRequest) -> StoreFuture<'_> {
        match self.cut.load(Ordering::SeqCst) {
            true => HookFuture::ready(Err(StoreError::Unavailable("cut off".into()))),
            false => self.store.call(request),
        }
    }
}

/// Step 0 asks for `charge`; step 1 answers.
fn model() -> Arc<ScriptedModel> {
    ScriptedModel::by(|r, _| match r.step {
        0 => Turn::call("c1", "charge", json!({"amount": 3})),
        _ => Turn::text("charged"),
    })
}

/// Each start of `charge`: the idempotency key it was given.
type Starts = Arc<Mutex<Vec<String>>>;

fn runtime(
    worker: WorkerConfig,
    link: Link,
    (clock, ids, log, starts): (
        &Arc<TokioClock>,
        &Arc<CountingIds>,
        &Arc<RecordingSink>,
        &Starts,
    ),
) -> Runtime<()> {
    let starts = starts.clone();
    let charge = tool_fn(
        "charge",
        "Charge a card",
        move |cx: ToolCx, _input: Value| {
            starts.lock().unwrap().push(cx.idempotency_key.clone());
            async move {
                tokio::time::sleep(Duration::from_millis(500)).await;
                Ok::<_, ToolError>(json!({"charged": true}))
            }
        },
    );
    let agent = Agent::new("agent", "m").tool(charge);
    Runtime::builder(agent, ())
        .models(ModelMap::new().with("m", model()))
        .clock(clock.clone())
        .ids(ids.clone())
        .events(log.clone())
        .store(Arc::new(link))
        .worker(worker)
        .build()
        .unwrap()
}

/// SPEC K3, K5: a worker cut off mid-tool stops at its next write; another
/// takes the run over after expiry and runs the uncommitted call again
/// under the same key; the result is committed once.
#[tokio::test(start_paused = true)]
async fn k3_a_cut_off_worker_is_taken_over_and_the_call_runs_again_under_its_key() {
    let store = Arc::new(MemoryStore::new(Some(Arc::new(TokioClock(
        tokio::time::Instant::now(),
    )))));
    let clock = Arc::new(TokioClock(tokio::time::Instant::now()));
    let (ids, log, starts) = (Arc::default(), Arc::default(), Starts::default());
    let parts = (&clock, &ids, &log, &starts);
    let cut_a = Arc::new(AtomicBool::new(false));
    let link = |cut: &Arc<AtomicBool>| Link {
        store: store.clone(),
        cut: cut.clone(),
    };
    let never = Arc::new(AtomicBool::new(false));
    let a = runtime(WorkerConfig::shared("a", 300), link(&cut_a), parts);
    let b = runtime(WorkerConfig::shared("b", 300), link(&never), parts);
    let gateway = runtime(WorkerConfig::shared("client", 300), link(&never), parts);
    let sent = gateway
        .client("alice")
        .thread("t")
        .send("charge me")
        .await
        .unwrap();
    let a_work = tokio::spawn(async move { a.work().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    cut_a.store(true, Ordering::SeqCst);
    let b_work = tokio::spawn(async move { b.work().await });
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    a_work.abort();
    b_work.abort();

    let t = gateway.inspect("t").await.unwrap().unwrap();
    let run = t.runs.iter().find(|r| r.id == sent.run_id).unwrap();
    assert_eq!((run.status, run.steps), (RunStatus::Completed, 2));
    let key = format!("{}/c1", sent.run_id);
    assert_eq!(*starts.lock().unwrap(), vec![key.clone(), key]);
    let results = t
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter(|p| matches!(p, Part::ToolResult { call_id, .. } if call_id == "c1"))
        .count();
    assert_eq!(results, 1, "the call's result is committed once");
    let events = log.events();
    let by = |w: &str, f: fn(&EventKind) -> bool| {
        events
            .iter()
            .any(|e| e.worker.as_deref() == Some(w) && f(&e.kind))
    };
    assert!(by("a", |k| matches!(k, EventKind::LeaseLost { .. })));
    assert!(by("b", |k| matches!(
        k,
        EventKind::TakenOver {
            stale_token,
            next_step: 1,
            ..
        } if stale_token.get() == 1
    )));
    assert!(!by("a", |k| matches!(
        k,
        EventKind::CommitToolResults { .. }
    )));
}

/// SPEC K2: a write under a token older than the thread's newest is
/// refused and changes nothing; the newest token writes.
#[tokio::test(start_paused = true)]
async fn k2_a_stale_token_is_refused_through_the_store_seam() {
    let store = MemoryStore::new(None);
    let send = StoreRequest::client(
        "t",
        "agent",
        "alice",
        ClientOp::Submit {
            message: pai_runtime::message::NewMessage {
                id: "m1".into(),
                role: pai_runtime::Role::User,
                parts: vec![Part::text("hi")],
                visibility: pai_runtime::message::Visibility::ALL,
                pai: pai_runtime::message::PaiMeta::new(
                    pai_runtime::message::Producer::User,
                    None,
                    None,
                    0,
                ),
            },
            steer: false,
            new_run: Some("r1".into()),
        },
    );
    store.apply(send).unwrap();
    let claim = |worker: &str| StoreRequest::claim(None, worker, None);
    let Ok(StoreReply::Admin(AdminReply::Claimed(Some(first)))) = store.apply(claim("a")) else {
        panic!("a claims the run")
    };
    let next = StoreRequest::run("t", "r1", first.token, RunOp::NextEpisode);
    let Ok(StoreReply::Run(RunReply::Lease { token: newer, .. })) = store.apply(next) else {
        panic!("a new episode")
    };
    let renew = |token| StoreRequest::run("t", "r1", token, RunOp::Renew);
    let before = store.apply(StoreRequest::admin("t", AdminOp::Inspect));
    assert_eq!(
        store.apply(renew(first.token)),
        Err(StoreError::StaleLease {
            given: first.token,
            current: newer
        })
    );
    assert_eq!(
        store.apply(StoreRequest::admin("t", AdminOp::Inspect)),
        before
    );
    assert!(store.apply(renew(newer)).is_ok());
}
