//! W3 of BENCHMARKS.md, shared by the `hooks` and `memory` benches: one
//! call is one run of one step (`send("hello")` on a fresh thread, then
//! `wait_until_idle`), as the peer's call is one `generateText` with one
//! model call; the mock model answers `ok` at once.
//! - `k0`: no hooks (an empty composition);
//! - `k10`: 10 `prepare_model_step` hooks, hook i appending the system
//!   message `middleware i` to its step patch;
//! - `k10_other`: 10 hooks that handle only `after_tool_result`, a phase
//!   these calls never reach: composition skips them (`phases()`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pai_runtime::{
    Agent, HookFuture, LanguageModel, Lifecycle, ModelError, ModelRequest, Runtime, StreamPart,
    compose, hook,
    hook::{Composed, StepDecision, ToolResultDecision},
    message::ModelMessage,
    model::{BoxStream, FinishReason, ModelMap, Patch, ReadyStream},
};

use crate::common::{CountingIds, StillClock};

/// Hooks in the composed variants.
pub const K: usize = 10;
pub const INSTRUCTIONS: &str = "You are a benchmark agent.";

/// Which hooks the agent has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    K0,
    K10,
    K10Other,
}

pub const VARIANTS: [Variant; 3] = [Variant::K0, Variant::K10, Variant::K10Other];

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::K0 => "k0",
            Variant::K10 => "k10",
            Variant::K10Other => "k10_other",
        }
    }

    pub fn hooks(self) -> Composed<()> {
        let hooks: Vec<Box<dyn Lifecycle<()>>> = match self {
            Variant::K0 => Vec::new(),
            Variant::K10 => (0..K).map(|i| Box::new(adds(i)) as _).collect(),
            Variant::K10Other => (0..K).map(|i| Box::new(other_phase(i)) as _).collect(),
        };
        compose(hooks)
    }

    /// The messages the model must see after the instructions.
    pub fn expected(self) -> Vec<ModelMessage> {
        let mut want = vec![ModelMessage::user("hello")];
        if self == Variant::K10 {
            want.extend((0..K).map(|i| ModelMessage::system(format!("middleware {i}"))));
        }
        want
    }
}

/// Hook i: appends `middleware i` to the step's messages.
fn adds(i: usize) -> impl Lifecycle<()> {
    let text = format!("middleware {i}");
    hook::prepare_model_step(&text.clone(), move |_, _| {
        let patch = Patch::append_system(text.clone());
        HookFuture::ready(Ok(StepDecision::Continue(patch)))
    })
}

/// Hook i of the other variant: handles only `after_tool_result`.
fn other_phase(i: usize) -> impl Lifecycle<()> {
    hook::after_tool_result(&format!("other {i}"), |_, _| {
        HookFuture::ready(Ok(ToolResultDecision::Continue))
    })
}

/// A model that answers `ok` at once, keeping its last request on demand.
#[derive(Default)]
struct Answer {
    keep: AtomicBool,
    /// The kept request's messages and instructions.
    last: Mutex<Option<(Vec<ModelMessage>, String)>>,
}

impl LanguageModel for Answer {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        if self.keep.load(Ordering::Relaxed) {
            let kept = (request.messages.clone(), request.instructions.clone());
            *self.last.lock().expect("last") = Some(kept);
        }
        let parts = vec![
            StreamPart::TextDelta("ok".into()),
            StreamPart::Finish(FinishReason::Stop),
        ];
        HookFuture::ready(Ok(Box::new(ReadyStream::new(parts)) as BoxStream))
    }
}

/// One runtime of a variant, and the calls made on it.
pub struct Calls {
    rt: tokio::runtime::Runtime,
    runtime: Runtime<()>,
    model: Arc<Answer>,
    made: u64,
}

impl Calls {
    pub fn new(v: Variant) -> Calls {
        let model = Arc::new(Answer::default());
        let agent = Agent::new("w3", "mock")
            .instructions(INSTRUCTIONS)
            .lifecycle(v.hooks());
        let runtime = Runtime::builder(agent, ())
            .models(ModelMap::new().with("mock", model.clone()))
            .clock(Arc::new(StillClock))
            .ids(Arc::new(CountingIds::default()))
            .build()
            .expect("runtime");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("tokio");
        Calls {
            rt,
            runtime,
            model,
            made: 0,
        }
    }

    /// One call on a fresh thread; returns whether the answer was `ok`.
    pub fn call(&mut self) -> bool {
        self.made += 1;
        let thread = self.runtime.client("u").thread(format!("t{}", self.made));
        let state = self.rt.block_on(async {
            thread.send("hello").await.expect("send");
            thread.wait_until_idle().await.expect("idle")
        });
        state.messages.len() == 2 && state.messages[1].text() == "ok"
    }

    /// One call whose request the model keeps; checks what it saw.
    pub fn check(&mut self, v: Variant) {
        self.model.keep.store(true, Ordering::Relaxed);
        assert!(self.call(), "{}: the answer is stored", v.name());
        self.model.keep.store(false, Ordering::Relaxed);
        let kept = self.model.last.lock().expect("last").take();
        let (messages, instructions) = kept.expect("the model was called");
        assert_eq!(instructions, INSTRUCTIONS);
        assert_eq!(messages, v.expected(), "{}: the request", v.name());
    }
}
