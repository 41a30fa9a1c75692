//! SPEC H6 (pairing) as a property: whatever came before — tool calls that
//! succeed, fail, throw, are rejected by `before_tool_call`, wait for a
//! client or an approval, are cancelled mid-run; regenerations from a random
//! user message; visibility rewrites of random messages; compactions (the
//! `Compaction` helper with a small threshold) — every context the main
//! model is sent pairs each tool call with exactly one result after it, and
//! has no result without its call.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pai_runtime::{
    Agent, HookFuture, Part, Role, Runtime, ToolError, client_tool, compose, hook,
    hook::{Compaction, ToolCallDecision},
    message::{ModelContent, ModelMessage, Visibility},
    model::ModelMap,
    store::{Expect, RunStatus},
    tool::ToolKind,
    typed_tool,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};

use crate::common;
use common::{CountingIds, ScriptedModel, StillClock, Turn};

/// The tools a scripted step may call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    /// Returns an output.
    Ok,
    /// Fails deliberately.
    Fail,
    /// Throws.
    Boom,
    /// Takes five seconds: a cancel can land while it runs.
    Slow,
    /// Waits for a client's approval.
    Ask,
    /// A client tool: waits for the client's output.
    Pick,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Ok => "ok",
            Tool::Fail => "fail",
            Tool::Boom => "boom",
            Tool::Slow => "slow",
            Tool::Ask => "ask",
            Tool::Pick => "pick",
        }
    }
}

/// One model step: the calls it makes (`true`: the guard rejects it); no
/// call means a text answer.
type Plan = Vec<(Tool, bool)>;

#[derive(Debug, Clone)]
enum Op {
    /// Queues the steps' plans and sends a message; with `settle`, waits
    /// until the thread is idle, else lets a second pass.
    Send { plans: Vec<Plan>, settle: bool },
    /// Cancels the thread's current run, if any.
    Cancel,
    /// Answers every waiting call (approve or deny; a client output).
    Answer { approve: bool },
    /// Regenerates from the `k`-th user message (modulo their number).
    Regenerate(usize),
    /// Sets the visibility of the `k`-th stored message (modulo).
    Visibility {
        k: usize,
        transcript: bool,
        context: bool,
    },
    /// Waits until the thread is idle.
    Settle,
}

fn plan() -> impl Strategy<Value = Plan> {
    let tool = prop_oneof![
        4 => Just(Tool::Ok),
        2 => Just(Tool::Fail),
        1 => Just(Tool::Boom),
        2 => Just(Tool::Slow),
        1 => Just(Tool::Ask),
        1 => Just(Tool::Pick),
    ];
    prop::collection::vec((tool, prop::bool::weighted(0.25)), 0..3)
}

fn send() -> impl Strategy<Value = Op> {
    (
        prop::collection::vec(plan(), 0..3),
        prop::bool::weighted(0.6),
    )
        .prop_map(|(plans, settle)| Op::Send { plans, settle })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => send(),
        2 => Just(Op::Cancel),
        2 => any::<bool>().prop_map(|approve| Op::Answer { approve }),
        2 => (0usize..8).prop_map(Op::Regenerate),
        3 => (0usize..16, any::<bool>(), any::<bool>())
            .prop_map(|(k, transcript, context)| Op::Visibility { k, transcript, context }),
        1 => Just(Op::Settle),
    ]
}

/// The plans of the main model's next calls, oldest first.
type Plans = Arc<Mutex<VecDeque<Plan>>>;

/// The main model: each call takes the next queued plan (a text answer
/// when none is left); call ids count up over the whole test.
fn main_model(plans: Plans) -> Arc<ScriptedModel> {
    let calls = Mutex::new(0u64);
    ScriptedModel::by(move |_, _| {
        let plan = plans.lock().unwrap().pop_front().unwrap_or_default();
        if plan.is_empty() {
            return Turn::text("done");
        }
        let mut n = calls.lock().unwrap();
        let ids: Vec<String> = plan
            .iter()
            .map(|_| {
                *n += 1;
                format!("c{n}")
            })
            .collect();
        let calls = plan.iter().zip(&ids);
        Turn::calls(
            calls.map(|((tool, reject), id)| {
                (id.as_str(), tool.name(), json!({ "reject": reject }))
            }),
        )
    })
}

fn runtime(main: Arc<ScriptedModel>) -> Runtime<()> {
    let ok = typed_tool("ok", "answers", false, |_cx, _i: Value| async move {
        Ok::<_, ToolError>(json!({"ok": true}))
    });
    let fail = typed_tool("fail", "fails", false, |_cx, _i: Value| async move {
        Err::<Value, _>(ToolError::Fail(json!("nope")))
    });
    let boom = typed_tool("boom", "throws", false, |_cx, _i: Value| async move {
        Err::<Value, _>(ToolError::Throw("kaboom".into()))
    });
    let slow = typed_tool(
        "slow",
        "takes a while",
        false,
        |_cx, _i: Value| async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<_, ToolError>(json!("late"))
        },
    );
    let ask = typed_tool("ask", "needs approval", true, |_cx, _i: Value| async move {
        Ok::<_, ToolError>(json!("approved"))
    });
    let pick = client_tool::<Value, Value>("pick", "the client picks");
    let guard = hook::before_tool_call("guard", |_, i| {
        HookFuture::ready(Ok(match i.input.get("reject") == Some(&json!(true)) {
            true => ToolCallDecision::Reject {
                message: "not allowed".into(),
            },
            false => ToolCallDecision::Continue,
        }))
    });
    // The summary model (its requests are not checked: it is no step's model).
    let compaction = Compaction::new(4, 1, ScriptedModel::text("summary"));
    let agent = Agent::new("a", "m")
        .typed_tool(&ok)
        .typed_tool(&fail)
        .typed_tool(&boom)
        .typed_tool(&slow)
        .typed_tool(&ask)
        .typed_tool(&pick)
        .max_steps(4)
        .lifecycle(compose(vec![Box::new(compaction), Box::new(guard)]));
    Runtime::builder(agent, ())
        .models(ModelMap::new().with("m", main))
        .clock(Arc::new(StillClock))
        .ids(Arc::new(CountingIds::default()))
        .build()
        .unwrap()
}

/// What is wrong with the pairing of one model context, if anything.
fn unpaired(messages: &[ModelMessage]) -> Option<String> {
    let flat: Vec<&ModelContent> = messages.iter().flat_map(|m| &m.content).collect();
    let is_result = |c: &&ModelContent, id: &str| matches!(c, ModelContent::ToolResult { call_id, .. } if call_id == id);
    let is_call = |c: &&ModelContent, id: &str| matches!(c, ModelContent::ToolCall { call_id, .. } if call_id == id);
    for (i, c) in flat.iter().enumerate() {
        match c {
            ModelContent::ToolCall { call_id, .. } => {
                let after = flat[i + 1..]
                    .iter()
                    .filter(|c| is_result(c, call_id))
                    .count();
                if after != 1 {
                    return Some(format!("call {call_id} has {after} results after it"));
                }
            }
            ModelContent::ToolResult { call_id, .. } => {
                if !flat[..i].iter().any(|c| is_call(c, call_id)) {
                    return Some(format!("result {call_id} has no call before it"));
                }
            }
            ModelContent::Text { .. } => {}
        }
    }
    None
}

/// Answers every waiting call (approving or denying the approvals);
/// `false` when the thread could not be read.
async fn answer_waiting(th: &pai_runtime::ThreadHandle<()>, approve: bool) -> bool {
    let Ok(state) = th.state().await else {
        return false;
    };
    let waiting = state
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Waiting)
        .flat_map(|r| r.waiting.clone());
    for call in waiting {
        let _ = match (call.kind, approve) {
            (ToolKind::Client, _) => th.submit_tool_result(&call.call_id, json!("picked")).await,
            (_, true) => th.approve(&call.call_id).await,
            (_, false) => th.deny(&call.call_id, "no").await,
        };
    }
    true
}

/// Regenerates from the `k`-th user message (modulo their number);
/// `false` when the thread could not be read.
async fn regenerate_one(admin: &pai_runtime::facade::AdminThread<()>, k: usize) -> bool {
    let Ok(stored) = admin.read().await else {
        return false;
    };
    let users: Vec<pai_runtime::id::MessageId> = stored
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.id.clone())
        .collect();
    if !users.is_empty() {
        let _ = admin.regenerate(&users[k % users.len()]).await;
    }
    true
}

/// Sets the `k`-th stored message's visibility (modulo their number).
async fn set_visibility_of(admin: &pai_runtime::facade::AdminThread<()>, k: usize, v: Visibility) {
    let Ok(stored) = admin.read().await else {
        return;
    };
    if !stored.messages.is_empty() {
        let id = stored.messages[k % stored.messages.len()].id.clone();
        let _ = admin.set_visibility(vec![(id, v)], Expect::Nothing).await;
    }
}

/// Runs `ops` on one thread and checks every context the main model got.
async fn check(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let plans_queue = Plans::default();
    let main = main_model(plans_queue.clone());
    let rt = runtime(main.clone());
    let th = rt.client("alice").thread("t1");
    let admin = rt.admin().thread("t1");
    let pass = || tokio::time::sleep(Duration::from_secs(1));
    let settle = || async {
        let idle = tokio::time::timeout(Duration::from_secs(600), th.wait_until_idle()).await;
        assert!(idle.is_ok(), "the thread never became idle");
    };
    let mut sends = 0;
    for op in ops {
        match op {
            Op::Send { plans, settle: s } => {
                plans_queue.lock().unwrap().extend(plans);
                sends += 1;
                th.send(format!("message {sends}")).await.unwrap();
                match s {
                    true => settle().await,
                    false => pass().await,
                }
            }
            Op::Cancel => {
                let _ = th.cancel().await;
                pass().await;
            }
            Op::Answer { approve } => {
                if answer_waiting(&th, approve).await {
                    pass().await;
                }
            }
            Op::Regenerate(k) => {
                if regenerate_one(&admin, k).await {
                    pass().await;
                }
            }
            Op::Visibility {
                k,
                transcript,
                context,
            } => {
                set_visibility_of(
                    &admin,
                    k,
                    Visibility {
                        transcript,
                        context,
                    },
                )
                .await
            }
            Op::Settle => {
                if sends > 0 {
                    settle().await;
                }
            }
        }
    }
    let seen = main.seen();
    for r in &seen {
        if let Some(wrong) = unpaired(&r.messages) {
            return Err(TestCaseError::fail(format!(
                "run {} step {}: {wrong}\n{:#?}",
                r.run_id, r.step, r.messages
            )));
        }
    }
    Ok(())
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(f)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/h6_rewrites.txt"),
        ))),
        ..ProptestConfig::default()
    })]

    /// SPEC H6: every main-model context is well paired, whatever came before.
    #[test]
    fn h6_every_context_pairs_calls_and_results(
        first in send(),
        rest in prop::collection::vec(op(), 0..14),
    ) {
        let mut ops = vec![first];
        ops.extend(rest);
        block_on(check(ops))?;
    }
}

/// The checker itself catches what H6 forbids: a call without a result, a
/// call with two, a result before its call or without one.
#[test]
fn h6_checker_catches_unpaired_contexts() {
    let call = |id: &str| ModelMessage {
        role: Role::Assistant,
        content: vec![ModelContent::ToolCall {
            call_id: id.into(),
            tool: "ok".into(),
            input: json!({}),
        }],
    };
    let result = |id: &str| ModelMessage {
        role: Role::Tool,
        content: vec![ModelContent::ToolResult {
            call_id: id.into(),
            tool: "ok".into(),
            output: json!(1),
            is_error: false,
        }],
    };
    assert_eq!(unpaired(&[call("a"), result("a")]), None);
    assert!(unpaired(&[call("a")]).is_some());
    assert!(unpaired(&[call("a"), result("a"), result("a")]).is_some());
    assert!(unpaired(&[result("a"), call("a")]).is_some());
    assert!(unpaired(&[ModelMessage::user("hi"), result("b")]).is_some());
}

/// SPEC H6, fixed cases: hiding a call's result from context, or the call
/// itself, still gives the next step a well-paired context (a call keeps
/// exactly one result; a result without its call is not sent).
#[test]
fn h6_hiding_a_call_or_its_result_keeps_contexts_paired() {
    block_on(async {
        for hide_call in [false, true] {
            let plans = Plans::new(Mutex::new(VecDeque::from([vec![(Tool::Ok, false)]])));
            let main = main_model(plans);
            let rt = runtime(main.clone());
            let th = rt.client("alice").thread("t1");
            th.send("first").await.unwrap();
            th.wait_until_idle().await.unwrap();
            let admin = rt.admin().thread("t1");
            let stored = admin.read().await.unwrap();
            let target = stored
                .messages
                .iter()
                .find(|m| {
                    m.parts.iter().any(|p| match hide_call {
                        true => matches!(p, Part::ToolCall { .. }),
                        false => matches!(p, Part::ToolResult { .. }),
                    })
                })
                .unwrap()
                .id
                .clone();
            let hidden = Visibility {
                transcript: true,
                context: false,
            };
            admin
                .set_visibility(vec![(target, hidden)], Expect::Nothing)
                .await
                .unwrap();
            th.send("second").await.unwrap();
            th.wait_until_idle().await.unwrap();
            let last = main.seen().last().cloned().unwrap();
            assert_eq!(unpaired(&last.messages), None, "{:#?}", last.messages);
            let calls = last
                .messages
                .iter()
                .flat_map(|m| &m.content)
                .filter(|c| matches!(c, ModelContent::ToolCall { .. }))
                .count();
            assert_eq!(calls, usize::from(!hide_call), "{:#?}", last.messages);
        }
    });
}
