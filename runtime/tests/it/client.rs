//! The runtime used directly, without the simulator: an in-process runtime, a
//! mock model, a typed tool, a client sending a message and waiting for idle.

use std::sync::Arc;

use pai_runtime::{
    Agent, ClientError, HookFuture, Lifecycle, Part, Role, Runtime, StoreError, ToolError, compose,
    hook,
    hook::ToolCallDecision,
    message::{Producer, ResultSource},
    model::ModelMap,
    tool_fn,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::common;
use common::{CountingIds, ScriptedModel, StillClock, Turn};

/// Calls `add` (and `wipe`) at step 0 and answers with text after.
fn mock_model() -> Arc<ScriptedModel> {
    ScriptedModel::by(|r, _| match r.step {
        0 => {
            let calls = [
                ("c1", "add", json!({"a": 2, "b": 3})),
                ("c2", "wipe", json!({})),
            ];
            Turn::calls(calls).after_text("Adding.")
        }
        _ => Turn::text("The sum is 5."),
    })
}

#[derive(Deserialize)]
struct AddIn {
    a: i64,
    b: i64,
}

#[derive(Serialize)]
struct AddOut {
    sum: i64,
}

/// Rejects the `wipe` tool (T3).
fn no_wipe() -> impl Lifecycle<()> {
    hook::before_tool_call("no_wipe", |_, input| {
        HookFuture::ready(Ok(if input.tool == "wipe" {
            ToolCallDecision::Reject {
                message: "wiping is not allowed".into(),
            }
        } else {
            ToolCallDecision::Continue
        }))
    })
}

fn runtime() -> Runtime<()> {
    let agent = Agent::new("calc", "mock")
        .instructions("Use tools.")
        .tool(tool_fn(
            "add",
            "adds two numbers",
            |_cx, i: AddIn| async move { Ok::<_, ToolError>(AddOut { sum: i.a + i.b }) },
        ))
        .tool(tool_fn(
            "wipe",
            "wipes everything",
            |_cx, _: serde_json::Value| async move { Ok::<_, ToolError>(json!("wiped")) },
        ))
        .lifecycle(compose(vec![Box::new(no_wipe())]));
    Runtime::builder(agent, ())
        .models(ModelMap::new().with("mock", mock_model()))
        .clock(Arc::new(StillClock))
        .ids(Arc::new(CountingIds::default()))
        .build()
        .expect("all parts given")
}

#[tokio::test]
async fn send_and_wait_until_idle() {
    let rt = runtime();
    let client = rt.client("alice");
    let thread = client.thread(client.new_thread_id());
    thread.send("What is 2 + 3?").await.unwrap();
    let state = thread.wait_until_idle().await.unwrap();

    let roles: Vec<Role> = state.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    let results = &state.messages[2].parts;
    assert!(
        matches!(&results[0], Part::ToolResult { output, source: ResultSource::Tool, .. } if *output == json!({"sum": 5}))
    );
    assert!(matches!(
        &results[1],
        Part::ToolResult {
            source: ResultSource::Rejected,
            ..
        }
    ));
    let last = &state.messages[3];
    assert_eq!(last.pai.producer, Producer::Model);
    assert_eq!(last.text(), "The sum is 5.");
    // The send, the claim, two steps, the tool results and the run's end.
    assert_eq!(state.version, 6, "one version per commit (H1)");
}

#[tokio::test]
async fn h4_other_identities_cannot_reach_a_thread() {
    let rt = runtime();
    let alice = rt.client("alice").thread("t1");
    alice.send("hi").await.unwrap();
    alice.wait_until_idle().await.unwrap();
    let mallory = rt.client("mallory").thread("t1");
    assert!(matches!(
        mallory.state().await,
        Err(ClientError::Store(StoreError::Forbidden { .. }))
    ));
    assert!(mallory.send("let me in").await.is_err());
    assert_eq!(
        alice.state().await.unwrap().version,
        6,
        "a refused send changes nothing"
    );
}

#[test]
fn building_without_a_clock_is_an_error() {
    let agent: Agent<()> = Agent::new("a", "m");
    let err = Runtime::builder(agent, ())
        .models(ModelMap::new())
        .build()
        .unwrap_err();
    assert_eq!(err.to_string(), "the runtime needs a clock");
}

/// SPEC A2: an agent with a step limit of 0 is refused when it is built;
/// it never runs a step.
#[test]
fn a2_a_limit_of_zero_steps_is_refused_at_build() {
    let agent: Agent<()> = Agent::new("a", "m").max_steps(0);
    let err = Runtime::builder(agent, ())
        .models(ModelMap::new())
        .clock(Arc::new(StillClock))
        .ids(Arc::new(CountingIds::default()))
        .build()
        .unwrap_err();
    assert_eq!(err, pai_runtime::BuildError::MaxSteps { agent: "a".into() });
}

mod steering {

    use std::sync::Arc;
    use std::time::Duration;

    use pai_runtime::{
        Agent, Clock, HookFuture, Lifecycle, Millis, Role, Runtime, hook, hook::RunDecision,
        model::ModelMap,
    };

    use crate::common::{CountingIds, ScriptedModel};

    /// Tokio's (paused) time as the runtime's clock.
    struct TokioClock(tokio::time::Instant);
    impl Clock for TokioClock {
        fn now(&self) -> Millis {
            self.0.elapsed().as_millis() as Millis
        }
        fn sleep(&self, ms: Millis) -> HookFuture<'static, ()> {
            HookFuture::new(tokio::time::sleep(Duration::from_millis(ms)))
        }
    }

    /// A prepare_run that takes 10ms (an async policy lookup).
    fn slow_prepare() -> impl Lifecycle<()> {
        hook::prepare_run("slow_prepare", |_, _| {
            HookFuture::new(async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok(RunDecision::default())
            })
        })
    }

    /// SPEC A4: a steer stored before a step's anchor is taken by that step,
    /// once; it does not also make the step hand over to another episode.
    #[tokio::test(start_paused = true)]
    async fn a4_a_steer_before_the_anchor_is_taken_once() {
        let model = ScriptedModel::text("ok");
        let agent =
            Agent::new("a", "m").lifecycle(pai_runtime::compose(vec![Box::new(slow_prepare())]));
        let rt = Runtime::builder(agent, ())
            .models(ModelMap::new().with("m", model.clone()))
            .clock(Arc::new(TokioClock(tokio::time::Instant::now())))
            .ids(Arc::new(CountingIds::default()))
            .build()
            .unwrap();
        let t = rt.client("u").thread("t");
        t.send("Answer in English.").await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        t.steer("Answer in French.").await.unwrap();
        let state = t.wait_until_idle().await.unwrap();
        assert_eq!(model.calls(), 1, "one model step");
        let seen = model.seen();
        let users = seen[0].messages.iter().filter(|m| m.role == Role::User);
        assert_eq!(users.count(), 2, "the step saw the steer");
        assert_eq!(state.runs.len(), 1, "no second run");
        assert_eq!(state.messages.len(), 3);
    }
}
