//! Running one case: a fresh store, each operation sent through the
//! store's `call`, every reply and every thread checked against the model.

use std::sync::Arc;
use std::time::Duration;

use pai_runtime::store::{AdminOp, AdminReply};
use pai_runtime::{
    Clock, Store, StoreError,
    store::{StoreReply, StoreRequest},
};

use crate::check::check_reply;
use crate::clock::ManualClock;
use crate::compare::compare_thread;
use crate::failure::Failure;
use crate::model::{Action, Model, Step};
use crate::ops::Op;

/// What diverged, before the trace is attached.
struct Divergence {
    rule: &'static str,
    what: String,
    expected: String,
    got: String,
}

/// One case, on its own current-thread runtime (the store may spawn tasks
/// on it and answer asynchronously).
pub(crate) fn run_case<S, F>(make: &F, ops: &[Op], timeout: Duration) -> Result<(), Box<Failure>>
where
    S: Store,
    F: Fn(Arc<dyn Clock>) -> S,
{
    let mut trace = Vec::new();
    let outcome = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(drive(make, ops, timeout, &mut trace)),
        Err(e) => Err((
            0,
            Divergence {
                rule: "-",
                what: "the suite's tokio runtime".into(),
                expected: "a runtime".into(),
                got: e.to_string(),
            },
        )),
    };
    outcome.map_err(|(step, d)| {
        Box::new(Failure {
            rule: d.rule,
            what: d.what,
            step,
            expected: d.expected,
            got: d.got,
            trace,
            ops: ops.to_vec(),
            flaky: None,
        })
    })
}

async fn drive<S, F>(
    make: &F,
    ops: &[Op],
    timeout: Duration,
    trace: &mut Vec<String>,
) -> Result<(), (usize, Divergence)>
where
    S: Store,
    F: Fn(Arc<dyn Clock>) -> S,
{
    let clock = Arc::new(ManualClock::new(0));
    let store = make(clock.clone());
    let mut model = Model::new();
    for op in ops {
        let before = model.clone();
        let step = model.step(op);
        let at = trace.len();
        let rule = step.rule;
        if let Err(d) = apply(&store, &clock, &mut model, step, timeout, trace).await {
            return Err((at, d));
        }
        // A step that changed nothing in the model must change nothing in
        // the store: a difference then breaks the step's own rule.
        let unchanged = before == model;
        if let Err(d) = inspect_all(&store, &mut model, timeout).await {
            let rule = if unchanged && rule != "-" {
                rule
            } else {
                d.rule
            };
            return Err((at, Divergence { rule, ..d }));
        }
    }
    Ok(())
}

async fn call<S: Store>(
    store: &S,
    request: StoreRequest,
    timeout: Duration,
) -> Result<Result<StoreReply, StoreError>, String> {
    match tokio::time::timeout(timeout, store.call(request)).await {
        Ok(reply) => Ok(reply),
        Err(_) => Err(format!("no answer within {timeout:?}")),
    }
}

async fn apply<S: Store>(
    store: &S,
    clock: &ManualClock,
    model: &mut Model,
    step: Step,
    timeout: Duration,
    trace: &mut Vec<String>,
) -> Result<(), Divergence> {
    let (request, expect) = match step.action {
        Action::Skip(why) => {
            trace.push(format!("(nothing sent: {why})"));
            return Ok(());
        }
        Action::Advance(ms) => {
            clock.advance(ms);
            trace.push(format!("advance the clock {ms} ms, to {}", clock.now()));
            return Ok(());
        }
        Action::Call { request, expect } => (request, expect),
    };
    let name = request.name();
    let line = format!("{request:?}");
    let reply = call(store, request, timeout).await;
    trace.push(format!(
        "{line}\n        -> {}",
        reply
            .as_ref()
            .map_or_else(Clone::clone, |r| format!("{r:?}"))
    ));
    let what = format!("the reply to `{name}`");
    let reply = reply.map_err(|got| Divergence {
        rule: step.rule,
        what: what.clone(),
        expected: "an answer".into(),
        got,
    })?;
    check_reply(model, &expect, &reply).map_err(|m| Divergence {
        rule: m.rule.unwrap_or(step.rule),
        what,
        expected: m.expected,
        got: format!("{reply:?}"),
    })
}

/// Every thread as `Inspect` returns it, and `ThreadIds`, against the model.
async fn inspect_all<S: Store>(
    store: &S,
    model: &mut Model,
    timeout: Duration,
) -> Result<(), Divergence> {
    for t in 0..model.threads.len() {
        let id = model.threads[t].id.clone();
        let reply = call(
            store,
            StoreRequest::admin(id.clone(), AdminOp::Inspect),
            timeout,
        )
        .await;
        let what = format!("thread {id} as `inspect` returns it after the step");
        let stored = match reply {
            Ok(Ok(StoreReply::Admin(AdminReply::Thread(t)))) => t,
            other => {
                return Err(Divergence {
                    rule: "H1",
                    what,
                    expected: "Ok(Thread(..))".into(),
                    got: format!("{other:?}"),
                });
            }
        };
        compare_thread(&mut model.threads[t], stored.as_ref()).map_err(|d| Divergence {
            rule: d.rule,
            what: format!("{what}: {}", d.field),
            expected: d.expected,
            got: d.got,
        })?;
    }
    let want: Vec<String> = model
        .threads
        .iter()
        .filter(|t| t.live())
        .map(|t| t.id.clone())
        .collect();
    match call(store, StoreRequest::ThreadIds, timeout).await {
        Ok(Ok(StoreReply::Admin(AdminReply::Ids(ids)))) if ids == want => Ok(()),
        other => Err(Divergence {
            rule: "H5",
            what: "`thread_ids` after the step".into(),
            expected: format!("Ok(Ids({want:?}))"),
            got: format!("{other:?}"),
        }),
    }
}
