//! The per-run context cache against the whole-thread derivation (SPEC M1,
//! H6), through the public API: the same run, once on the step loop's
//! cached context and once through a pass-through resolver that derives
//! every step's context from the whole thread (`History::default_context`),
//! must send the same messages at every step, while a hook hides stored
//! messages mid-run (a change the cache must notice) and tool calls keep
//! results pending across steps.

use std::sync::Arc;

use pai_runtime::{
    Agent, HookError, HookFuture, Lifecycle, Role, Runtime, ToolError, compose, hook,
    hook::AfterStepDecision,
    message::{ModelMessage, Visibility},
    model::ModelMap,
    store::Expect,
    tool_fn,
};
use serde_json::{Value, json};

use crate::common;
use common::{CountingIds, ScriptedModel, StillClock, Turn};

const STEPS: u32 = 8;

/// Calls `echo` until the last step.
fn looping() -> Arc<ScriptedModel> {
    ScriptedModel::by(|r, _| match r.step + 1 < STEPS {
        true => {
            let (id, input) = (format!("c{}", r.step), json!({"n": r.step}));
            Turn::call(&id, "echo", input).after_text(format!("step {}", r.step))
        }
        false => Turn::text("done"),
    })
}

/// After steps 1 and 4, hides a stored message from the context through
/// the run's own mutation (allowed mid-run): first the user's question,
/// then the assistant message of step 2.
fn hider() -> impl Lifecycle<()> {
    hook::after_step("hider", |cx, input| {
        let step = input.step;
        HookFuture::new(async move {
            let pick = match step {
                1 => Some(Role::User),
                4 => Some(Role::Assistant),
                _ => None,
            };
            let Some(role) = pick else {
                return Ok(AfterStepDecision::Natural);
            };
            let thread = cx
                .read_thread()
                .await
                .map_err(|e| HookError::new(e.to_string()))?;
            let nth = if role == Role::User { 0 } else { 2 };
            let Some(target) = thread.messages.iter().filter(|m| m.role == role).nth(nth) else {
                return Ok(AfterStepDecision::Natural);
            };
            let id = target.id.clone();
            let hidden = Visibility {
                transcript: true,
                context: false,
            };
            cx.mutate(Expect::Nothing, move |s| {
                s.set_visibility(id, hidden);
                Ok(())
            })
            .await
            .map_err(|e| HookError::new(e.to_string()))?;
            Ok(AfterStepDecision::Natural)
        })
    })
}

/// A resolver that returns the whole-thread derivation unchanged.
fn whole_thread() -> impl Lifecycle<()> {
    hook::resolve_model_context("whole", |_, input, _next| {
        HookFuture::new(async move {
            let messages = input.history.default_context().await?;
            Ok(messages)
        })
    })
}

/// Every step's request messages of one run, with or without the resolver.
async fn requests(with_resolver: bool) -> Vec<Vec<ModelMessage>> {
    let model = looping();
    let echo = tool_fn("echo", "Echo.", |_cx, input: Value| async move {
        Ok::<_, ToolError>(input)
    });
    let mut hooks: Vec<Box<dyn Lifecycle<()>>> = vec![Box::new(hider())];
    if with_resolver {
        hooks.push(Box::new(whole_thread()));
    }
    let agent = Agent::new("cache", "mock")
        .tool(echo)
        .max_steps(STEPS)
        .lifecycle(compose(hooks));
    let runtime = Runtime::builder(agent, ())
        .models(ModelMap::new().with("mock", model.clone()))
        .clock(Arc::new(StillClock))
        .ids(Arc::new(CountingIds::default()))
        .build()
        .unwrap();
    let t = runtime.client("u").thread("t");
    t.send("question").await.unwrap();
    let state = t.wait_until_idle().await.unwrap();
    assert_eq!(state.runs[0].steps, STEPS, "every step ran");
    model.seen().into_iter().map(|r| r.messages).collect()
}

/// SPEC M1, H6: the cached context equals the whole-thread derivation at
/// every step, across mid-run visibility changes.
#[tokio::test]
async fn m1_the_cached_context_is_the_whole_thread_derivation_at_every_step() {
    let cached = requests(false).await;
    let whole = requests(true).await;
    assert_eq!(cached.len(), STEPS as usize);
    for (step, (c, w)) in cached.iter().zip(&whole).enumerate() {
        assert_eq!(c, w, "step {step}");
    }
    // The hidden question left the context from step 2 on.
    let has_question = |ms: &Vec<ModelMessage>| ms.iter().any(|m| m.role == Role::User);
    assert!(has_question(&cached[1]));
    assert!(!has_question(&cached[2]));
    // Step 5 sends one assistant message fewer than the steps before it.
    let assistants =
        |ms: &Vec<ModelMessage>| ms.iter().filter(|m| m.role == Role::Assistant).count();
    assert_eq!(assistants(&cached[4]), 4);
    assert_eq!(assistants(&cached[5]), 4, "step 2's answer is hidden");
}
