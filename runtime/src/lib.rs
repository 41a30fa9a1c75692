//! pai-runtime: the PAI agent runtime's lifecycle-hook model.
//!
//! An [`Agent`] has a model, instructions, [`Tool`]s and one [`Lifecycle`]
//! (usually a [`compose`]d list of hooks, often built from closures with the
//! constructors in [`hook`]). A [`Runtime`] drives runs on threads through
//! the phases of SPEC §1, with time and ids injected through [`Clock`] and
//! [`IdSource`], and reports what it does to an [`EventSink`].
//!
//! The crate root holds what an agent author needs (at most 40 names, a
//! test counts them). Everything else lives in one module per concept:
//! [`hook`] (closure hooks, the phases, inputs and decisions, compaction),
//! [`model`] (the stream a model returns, providers, routes and patches),
//! [`message`] (what a stored message carries), [`tool`] (tool specs and
//! typed tools), [`stream`] (stream transforms), [`text`] (text stages),
//! [`context`] (model context resolution), [`event`] (event kinds and live
//! watching), [`store`] (the store protocol and the durable stores) and
//! [`facade`] (trusted admin writes and staged mutations), and [`id`] (the
//! run, thread, message and call ids).
#![warn(missing_docs)]

mod agent;
mod attempt;
mod client;
mod clock;
mod compaction;
pub mod context;
mod delta;
mod error;
pub mod event;
pub mod facade;
#[cfg(test)]
mod front_door_tests;
mod future;
pub mod id;
mod lifecycle;
mod live;
pub mod message;
mod metadata;
pub mod model;
mod model_call;
mod model_view;
mod on_output;
mod one_field;
mod patch;
mod pending_rewrites;
mod process;
mod shared;
mod staged;
mod step_loop;
mod stop;
pub mod store;
pub mod stream;
pub mod text;
pub mod tool;
mod worker;

/// Lifecycle hooks beyond the root's [`Lifecycle`], [`compose`] and
/// [`HookCx`]: the phases ([`Phase`](hook::Phase), [`Phases`](hook::Phases)),
/// each phase's input and typed decision (SPEC §3), the composed list
/// ([`Composed`](hook::Composed)), history-rewrite hooks (R1–R3), the
/// around-model-call onion ([`ModelNext`](hook::ModelNext),
/// [`AttemptPatch`](hook::AttemptPatch)), typed run metadata
/// ([`RunMetadata`](hook::RunMetadata)), the compaction helper (C1, C2),
/// and single-phase hooks built from closures, in the spirit of
/// [`tool_fn`]:
///
/// ```
/// use pai_runtime::hook::{self, AfterStepDecision};
/// use pai_runtime::{HookFuture, compose};
///
/// let one_more = hook::after_step("one_more", |_cx, input| {
///     HookFuture::ready(Ok(if input.step == 0 {
///         AfterStepDecision::NextStep
///     } else {
///         AfterStepDecision::Natural
///     }))
/// });
/// let lifecycle = compose::<()>(vec![Box::new(one_more)]);
/// assert_eq!(lifecycle.len(), 1);
/// ```
pub mod hook {
    pub use crate::compaction::{COMPACTION_KEY, Compaction, CompactionCursor};
    pub use crate::lifecycle::from_fn::{
        FnHook, after_step, after_tool_result, around_model_call, before_tool_call, on,
        prepare_model_step, prepare_run, resolve_model_context, transform_step_stream,
    };
    pub use crate::lifecycle::{
        AfterStepDecision, AfterStepInput, Composed, HookNote, NoLifecycle, NoteDecision, Phase,
        Phases, Response, RewriteFact, RewriteInput, RewriteKind, RewritePatch, RunDecision,
        RunInput, StepDecision, StepInput, StreamInput, StreamKind, ToolCallDecision,
        ToolCallInput, ToolResult, ToolResultDecision, ToolResultInput,
    };
    pub use crate::metadata::RunMetadata;
    pub use crate::model_call::{AttemptPatch, ModelNext};
}

pub use agent::Agent;
pub use client::{
    BuildError, Client, ClientError, Runtime, RuntimeBuilder, Sent, ThreadHandle, ThreadState,
};
pub use clock::{Clock, IdKind, IdSource, Millis};
pub use error::{HookError, HookResult};
pub use event::sink::{Event, EventSink};
pub use future::HookFuture;
pub use lifecycle::{HookCx, Lifecycle, compose};
pub use message::types::{Message, Part, Role};
pub use model::seam::{LanguageModel, ModelError, ModelRequest, StreamPart};
pub use store::{memory::MemoryStore, protocol::Store, record::StoreError};
pub use tool::dyn_tool::{Tool, ToolCx, ToolError, ToolOutcome, tool_fn};
pub use tool::typed::{client_tool, typed_tool};
pub use worker::WorkerConfig;
