//! The runtime's public API where the scenario suite does not reach it:
//! getters, awaiting a watch, nested compositions, overlays that the
//! runtime must pair before sending.

use std::sync::{Arc, Mutex};

use pai_runtime::{
    Agent, HookError, HookFuture, LanguageModel, Part, Role, Runtime, StreamPart, compose,
    event::LiveEvent,
    hook,
    hook::{AfterStepDecision, RunDecision},
    message::{ModelContent, ModelMessage, Outcome},
    model::{FinishReason, ModelMap, Patch, Refusal, RefusalKind},
    store::RunStatus,
    text::patterns,
};
use serde_json::Value;

use crate::common;
use common::{CountingIds, ScriptedModel, StillClock, Turn};

/// A runtime without an event sink or a store of the test's own.
fn runtime(agent: Agent<()>, model: Arc<ScriptedModel>) -> Runtime<()> {
    Runtime::builder(agent, ())
        .models(ModelMap::new().with("m", model))
        .clock(Arc::new(StillClock))
        .ids(Arc::new(CountingIds::default()))
        .build()
        .expect("runtime")
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn names_and_ids_come_from_the_agent_and_the_id_source() {
    let agent: Agent<()> = Agent::new("calc", "m");
    assert_eq!(agent.name(), "calc");
    let rt = runtime(agent, ScriptedModel::text("ok"));
    let client = rt.client("alice");
    assert_eq!(client.new_thread_id(), "thr1");
    assert_eq!(client.thread("t9").id(), "t9");
}

/// SPEC S2, H1: a watcher awaiting `next` hears the run's parts and commits.
#[test]
fn s2_a_watch_can_be_awaited() {
    let rt = runtime(Agent::new("a", "m"), ScriptedModel::text("ok"));
    block_on(async {
        let t = rt.client("u").thread("t");
        let mut watch = t.watch(Vec::new()).await.unwrap();
        t.send("hi").await.unwrap();
        t.wait_until_idle().await.unwrap();
        assert_eq!(
            watch.next().await,
            Some(LiveEvent::Committed { at: 0, version: 1 })
        );
        // The run's claim is a commit too (H1: a lease revision).
        assert_eq!(
            watch.next().await,
            Some(LiveEvent::Committed { at: 0, version: 2 })
        );
        assert!(matches!(watch.next().await, Some(LiveEvent::Part { .. })));
    });
}

/// SPEC L4, L6: a hook failure inside a nested composition's resolver fails
/// the run, even though the outer resolver swallows what its `next` returned.
#[test]
fn l4_a_failure_deep_in_nested_compositions_still_fails_the_run() {
    let failing = hook::resolve_model_context("failing", |_, _, _next| {
        HookFuture::ready(Err(HookError::new("index unavailable")))
    });
    let swallowing = hook::resolve_model_context("swallowing", |_, _, next| {
        HookFuture::new(async move { Ok(next.run().await.unwrap_or_default()) })
    });
    let inner = compose::<()>(vec![Box::new(failing)]);
    let agent =
        Agent::new("a", "m").lifecycle(compose(vec![Box::new(swallowing), Box::new(inner)]));
    let model = ScriptedModel::text("ok");
    let rt = runtime(agent, model.clone());
    let state = block_on(async {
        let t = rt.client("u").thread("t");
        t.send("hi").await.unwrap();
        t.wait_until_idle().await.unwrap()
    });
    assert_eq!(state.runs[0].status, RunStatus::Failed);
    assert_eq!(state.runs[0].reason.as_deref(), Some("index unavailable"));
    assert!(model.calls() == 0, "no model call after the failure");
}

/// SPEC H6, P4: a run patch may append any model-only message, even an
/// assistant tool call; the context sent is paired all the same.
#[test]
fn h6_an_overlay_with_an_unanswered_call_is_paired_before_sending() {
    let call = unanswered_call();
    let appends = hook::prepare_run("appends_a_call", move |_, _| {
        let patch = Patch {
            append_model_messages: vec![call.clone()],
            ..Patch::default()
        };
        HookFuture::ready(Ok(RunDecision::Continue(patch)))
    });
    check_paired(appends);
}

/// SPEC H6, P4, P5: the same for a step patch's appended messages.
#[test]
fn h6_a_step_patch_with_an_unanswered_call_is_paired_before_sending() {
    let call = unanswered_call();
    let appends = hook::prepare_model_step("appends_a_call", move |_, _| {
        let patch = Patch {
            append_model_messages: vec![call.clone()],
            ..Patch::default()
        };
        HookFuture::ready(Ok(pai_runtime::hook::StepDecision::Continue(patch)))
    });
    check_paired(appends);
}

fn unanswered_call() -> ModelMessage {
    ModelMessage {
        role: Role::Assistant,
        content: vec![ModelContent::ToolCall {
            call_id: "c1".into(),
            tool: "lookup".into(),
            input: Value::Null,
        }],
    }
}

/// Runs one send with `hook` and checks the call it added got a result.
fn check_paired(hook: impl pai_runtime::Lifecycle<()>) {
    let agent = Agent::new("a", "m").lifecycle(compose(vec![Box::new(hook)]));
    let model = ScriptedModel::text("ok");
    let rt = runtime(agent, model.clone());
    block_on(async {
        let t = rt.client("u").thread("t");
        t.send("hi").await.unwrap();
        t.wait_until_idle().await.unwrap();
    });
    let seen = model.seen();
    let sent = &seen[0].messages;
    let last = sent.last().expect("messages");
    assert!(
        matches!(&last.content[0], ModelContent::ToolResult { call_id, is_error: true, .. } if call_id == "c1"),
        "{sent:?}"
    );
}

/// What the event log calls a hook: its own name, `hook` by default,
/// `compose` for a composition and `none` for the empty lifecycle.
#[test]
fn lifecycles_name_themselves_for_the_log() {
    struct Quiet;
    impl pai_runtime::Lifecycle<()> for Quiet {}
    let named = hook::after_step("judge", |_, _| HookFuture::ready(Ok(Default::default())));
    assert_eq!(pai_runtime::Lifecycle::<()>::name(&named), "judge");
    assert_eq!(pai_runtime::Lifecycle::<()>::name(&Quiet), "hook");
    assert_eq!(
        pai_runtime::Lifecycle::<()>::name(&pai_runtime::hook::NoLifecycle),
        "none"
    );
    let both = compose::<()>(vec![Box::new(named), Box::new(Quiet)]);
    assert_eq!(pai_runtime::Lifecycle::<()>::name(&both), "compose");
    assert_eq!(both.len(), 2);
    assert!(!both.is_empty());
    assert!(compose::<()>(vec![]).is_empty());
}

/// A provider registry that panics on its first lookup: a panic the step
/// loop does not guard (the registry is the runtime's own seam).
struct PanicsOnce {
    model: Arc<ScriptedModel>,
    panicked: std::sync::atomic::AtomicBool,
}

impl pai_runtime::model::ModelProvider for PanicsOnce {
    fn model(&self, _name: &str) -> Option<&dyn LanguageModel> {
        if !self
            .panicked
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            panic!("model registry corrupted");
        }
        Some(&*self.model)
    }
}

/// X2, X3: a panic inside the step loop itself fails that run (reason
/// "runtime panicked: ..."), releases its lease and ends it; the thread
/// stays usable and the next run completes.
#[test]
fn x2_a_panic_in_the_step_loop_fails_the_run_and_the_thread_goes_on() {
    let provider = PanicsOnce {
        model: ScriptedModel::text("ok"),
        panicked: Default::default(),
    };
    let rt = Runtime::builder(Agent::new("a", "m"), ())
        .models(provider)
        .clock(Arc::new(StillClock))
        .ids(Arc::new(CountingIds::default()))
        .build()
        .expect("runtime");
    let state = block_on(async {
        let t = rt.client("u").thread("t");
        t.send("first").await.unwrap();
        t.wait_until_idle().await.unwrap();
        t.send("second").await.unwrap();
        t.wait_until_idle().await.unwrap()
    });
    assert_eq!(state.runs[0].status, RunStatus::Failed);
    let reason = state.runs[0].reason.as_deref().unwrap_or("");
    assert!(
        reason.starts_with("runtime panicked: model registry corrupted"),
        "{reason}"
    );
    assert_eq!(state.runs[1].status, RunStatus::Completed);
}

/// SPEC A1: `after_step` sees the step's message as it was committed: the
/// stored id, sequence number and text (the step keeps its copy only for a
/// lifecycle that reads it; without one the message moves to the store).
#[test]
fn a1_after_step_sees_the_committed_message() {
    let seen: Arc<Mutex<Vec<(String, u64, String)>>> = Arc::default();
    let log = seen.clone();
    let judge = hook::after_step("judge", move |_, input| {
        let m = input.message;
        log.lock()
            .unwrap()
            .push((m.id.to_string(), m.seq, m.text().to_string()));
        HookFuture::ready(Ok(Default::default()))
    });
    for (agent, judged) in [
        (
            Agent::new("a", "m").lifecycle(compose(vec![Box::new(judge)])),
            true,
        ),
        (Agent::new("a", "m"), false),
    ] {
        let rt = runtime(agent, ScriptedModel::text("ok"));
        let stored = block_on(async {
            let t = rt.client("u").thread("t");
            t.send("hi").await.unwrap();
            t.wait_until_idle().await.unwrap();
            t.state().await.unwrap().messages
        });
        let answer = stored.last().expect("the answer");
        assert_eq!(answer.role, Role::Assistant);
        assert_eq!(answer.text(), "ok", "stored whole either way");
        let got: Vec<_> = seen.lock().unwrap().drain(..).collect();
        let want = (answer.id.to_string(), answer.seq, "ok".to_string());
        assert_eq!(got, if judged { vec![want] } else { vec![] });
    }
}

/// SPEC S6: a provider's refusal reaches `after_step` typed (its kind, and
/// its words through the canonical stages, S1), whatever the hook decides
/// the run ends blocked with them, and a call streamed before the refusal
/// neither runs nor is stored without its result (H6).
#[test]
fn s6_after_step_sees_the_refusal_and_the_run_ends_blocked() {
    let seen: Arc<Mutex<Vec<Option<Refusal>>>> = Arc::default();
    let s = seen.clone();
    let look = hook::after_step("look", move |_, input| {
        s.lock().unwrap().push(input.refusal.cloned());
        HookFuture::ready(Ok(AfterStepDecision::NextStep))
    });
    let redact = common::redact(patterns(&["sk-[a-z0-9]+"]).unwrap(), "[x]");
    let agent = Agent::new("a", "m").lifecycle(compose(vec![Box::new(redact), Box::new(look)]));
    let model = ScriptedModel::turns(vec![Turn::Parts(vec![
        StreamPart::text("Sure: "),
        StreamPart::tool_call("c1", "lookup", Value::Null),
        StreamPart::refusal("I can't share "),
        StreamPart::refusal("sk-abc123."),
        StreamPart::Finish(FinishReason::Refusal),
    ])]);
    let rt = runtime(agent, model.clone());
    let state = block_on(async {
        let t = rt.client("u").thread("t");
        t.send("hi").await.unwrap();
        t.wait_until_idle().await.unwrap()
    });
    let refusal = Refusal {
        kind: RefusalKind::Refusal,
        explanation: "I can't share [x].".into(),
    };
    assert_eq!(*seen.lock().unwrap(), [Some(refusal.clone())]);
    let run = &state.runs[0];
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.outcome, Some(Outcome::Blocked));
    assert_eq!(run.reason.as_deref(), Some("refusal: I can't share [x]."));
    assert_eq!(refusal.reason(), "refusal: I can't share [x].");
    assert_eq!(model.calls(), 1, "no step after a refusal");
    let answer = state.messages.last().unwrap();
    assert_eq!(
        answer.parts,
        [Part::Text {
            text: "Sure: ".into()
        }]
    );
    assert_eq!(answer.pai.outcome, Some(Outcome::Blocked));
}

/// The model seam numbers a step's attempts: the first is 1, a retry
/// `around_model_call` makes is 2, and the next step starts again at 1
/// (what a provider that answers a repeated call alike keys on, K3).
#[test]
fn a_request_carries_its_attempt_within_the_step() {
    let retry = hook::around_model_call("retry", |_, r, next| {
        let step = r.step;
        HookFuture::new(async move {
            let first = next.call(Default::default()).await;
            match (step, first) {
                (0, Ok(_)) => Ok(next.call(Default::default()).await?),
                (_, first) => Ok(first?),
            }
        })
    });
    let agent = Agent::new("a", "m").lifecycle(compose(vec![Box::new(retry)]));
    let model = ScriptedModel::turns(vec![
        common::Turn::call("c1", "none", serde_json::json!({})),
        common::Turn::call("c2", "none", serde_json::json!({})),
        common::Turn::text("done"),
    ]);
    let rt = runtime(agent, model.clone());
    block_on(async {
        let t = rt.client("u").thread("t");
        t.send("hi").await.unwrap();
        t.wait_until_idle().await.unwrap();
    });
    let seen: Vec<(u32, u32)> = model.seen().iter().map(|r| (r.step, r.attempt)).collect();
    assert_eq!(seen, [(0, 1), (0, 2), (1, 1)]);
}
