//! W2 of BENCHMARKS.md, shared by the `steps` and `memory` benches: a
//! 200-step tool loop whose prompt grows by three messages a step.
//!
//! - The mock model asks, at steps 0..=198 (the peer's model calls
//!   1..199), for one call of `echo` with `{"text": "ping"}`, and answers
//!   `done` at step 199 (call 200).
//! - `echo` returns its input (typed: `{text: String}`, like the peer's zod
//!   schema).
//! - The `step_note` hook (`prepare_model_step`) adds `step N` every step,
//!   accumulating: it stores it as a hidden lifecycle context message
//!   (SPEC L13: stored, context-visible, transcript-hidden, producer
//!   lifecycle), which every LATER step's context holds; the step that
//!   stores it cannot see it through its context, whose history reads stop
//!   at the anchor taken when the step started (M1), so the hook also
//!   appends it to its own step patch (P5: this step only). Step k so sends
//!   user + 3k (note, call, result) + its own note = 3k+2 messages in
//!   `ModelRequest::messages`, plus the instructions, which our request
//!   carries in their own field: 3k+3 as in the peer.
//! - An `after_step` observer timestamps every step (the wall clock is read
//!   here in the bench, never in the runtime).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use pai_runtime::{
    Agent, HookFuture, LanguageModel, Lifecycle, ModelError, ModelRequest, Part, Role, Runtime,
    StreamPart, ThreadState, ToolError, compose, hook,
    hook::{AfterStepDecision, StepDecision},
    message::{ModelContent, ModelMessage},
    model::{BoxStream, FinishReason, ModelMap, Patch, ReadyStream},
    store::RunStatus,
    tool_fn,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::common::{CountingIds, StillClock};

/// Steps per run.
pub const STEPS: u32 = 200;
pub const INSTRUCTIONS: &str = "You are a benchmark agent.";
pub const PROMPT: &str = "Call echo until told to stop.";

/// What the mock model and the observer saw during one run.
#[derive(Debug, Default)]
pub struct Probe {
    /// `request.messages.len()` of each model call.
    sent: Mutex<Vec<usize>>,
    /// The last request's messages and instructions, when kept.
    last: Mutex<Option<(Vec<ModelMessage>, String)>>,
    keep_last: bool,
    /// One `Instant` per `after_step`.
    stamps: Mutex<Vec<Instant>>,
}

impl Probe {
    fn saw(&self, request: &ModelRequest) {
        self.sent
            .lock()
            .expect("probe")
            .push(request.messages.len());
        if self.keep_last && request.step + 1 == STEPS {
            let kept = (request.messages.clone(), request.instructions.clone());
            *self.last.lock().expect("probe") = Some(kept);
        }
    }

    fn stamp(&self) {
        self.stamps.lock().expect("probe").push(Instant::now());
    }

    /// The timestamps of the run's steps.
    pub fn stamps(&self) -> Vec<Instant> {
        self.stamps.lock().expect("probe").clone()
    }
}

/// The mock model of W2.
struct EchoLoop(Arc<Probe>);

impl LanguageModel for EchoLoop {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        self.0.saw(request);
        let parts = match request.step + 1 < STEPS {
            true => vec![
                StreamPart::tool_call(
                    format!("call_{}", request.step + 1),
                    "echo",
                    json!({"text": "ping"}),
                ),
                StreamPart::Finish(FinishReason::ToolCalls),
            ],
            false => vec![
                StreamPart::TextDelta("done".into()),
                StreamPart::Finish(FinishReason::Stop),
            ],
        };
        HookFuture::ready(Ok(Box::new(ReadyStream::new(parts)) as BoxStream))
    }
}

#[derive(Serialize, Deserialize)]
struct Echo {
    text: String,
}

/// Adds `step N` to this step and, stored, to every later one.
fn step_note() -> impl Lifecycle<()> {
    hook::prepare_model_step("step_note", |cx, input| {
        HookFuture::new(async move {
            let text = format!("step {}", input.step);
            cx.store_context_message(text.clone()).await?;
            Ok(StepDecision::Continue(Patch::append_system(text)))
        })
    })
}

/// Timestamps every step.
fn observer(probe: Arc<Probe>) -> impl Lifecycle<()> {
    hook::after_step("observe", move |_, _| {
        probe.stamp();
        HookFuture::ready(Ok(AfterStepDecision::Natural))
    })
}

/// A fresh runtime for one run, and what it will see.
pub fn runtime(keep_last: bool) -> (Runtime<()>, Arc<Probe>) {
    let probe = Arc::new(Probe {
        keep_last,
        ..Probe::default()
    });
    let echo = tool_fn(
        "echo",
        "Echo the input back.",
        |_cx, input: Echo| async move { Ok::<_, ToolError>(input) },
    );
    let hooks: Vec<Box<dyn Lifecycle<()>>> =
        vec![Box::new(step_note()), Box::new(observer(probe.clone()))];
    let agent = Agent::new("w2", "mock")
        .instructions(INSTRUCTIONS)
        .tool(echo)
        .max_steps(STEPS)
        .lifecycle(compose(hooks));
    let runtime = Runtime::builder(agent, ())
        .models(ModelMap::new().with("mock", Arc::new(EchoLoop(probe.clone()))))
        .clock(Arc::new(StillClock))
        .ids(Arc::new(CountingIds::default()))
        .build()
        .expect("runtime");
    (runtime, probe)
}

/// One whole run to idle on thread `t`.
pub fn run(rt: &tokio::runtime::Runtime, runtime: &Runtime<()>) -> ThreadState {
    rt.block_on(async {
        let t = runtime.client("u").thread("t");
        t.send(PROMPT).await.expect("send");
        t.wait_until_idle().await.expect("idle")
    })
}

/// The message counts the runtime actually sent, step by step.
pub fn sent_counts(probe: &Probe) -> Vec<usize> {
    probe.sent.lock().expect("probe").clone()
}

/// Checks one run: 200 steps, step k sent 3k+2 messages (+ instructions),
/// the last request's order and notes, `echo`'s output, the final text.
pub fn check(state: &ThreadState, probe: &Probe) {
    assert_eq!(probe.stamps().len(), STEPS as usize, "after_step per step");
    let sent = sent_counts(probe);
    let want: Vec<usize> = (0..STEPS as usize).map(|k| 3 * k + 2).collect();
    assert_eq!(sent, want, "messages sent per step (instructions apart)");
    let run = &state.runs[0];
    assert_eq!((run.status, run.steps), (RunStatus::Completed, STEPS));
    // The 200 notes are transcript-hidden (L13): the client's view holds
    // the user message, 200 answers and 199 results; the notes show in the
    // last request instead.
    let visible = 2 * STEPS as usize;
    assert_eq!(state.messages.len(), visible, "transcript-visible messages");
    assert_eq!(state.messages.last().map(|m| m.text()), Some("done".into()));
    check_echo(state);
    if probe.keep_last {
        check_last_request(probe);
    }
}

/// The first tool result is `echo`'s input, unchanged.
fn check_echo(state: &ThreadState) {
    let result = state
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .and_then(|m| m.parts.first());
    let ok = matches!(result, Some(Part::ToolResult { output, .. }) if *output == json!({"text": "ping"}));
    assert!(ok, "echo returns its input: {result:?}");
}

/// The last request: instructions, user, (note, call, result) × 199, note.
fn check_last_request(probe: &Probe) {
    let last = probe.last.lock().expect("probe").take();
    let (messages, instructions) = last.expect("the last request was kept");
    assert_eq!(instructions, INSTRUCTIONS);
    assert_eq!(
        1 + messages.len(),
        3 * STEPS as usize,
        "600 with instructions"
    );
    assert_eq!(messages[0].role, Role::User);
    for (k, triple) in messages[1..].chunks(3).enumerate() {
        let roles: Vec<Role> = triple.iter().map(|m| m.role).collect();
        let want: &[Role] = match k + 1 == STEPS as usize {
            true => &[Role::System],
            false => &[Role::System, Role::Assistant, Role::Tool],
        };
        assert_eq!(roles, want, "messages of step {k}");
        let note = ModelContent::Text {
            text: format!("step {k}"),
        };
        assert_eq!(triple[0].content, [note], "the note of step {k}");
    }
}
