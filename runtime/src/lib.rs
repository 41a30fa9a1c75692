//! pai-runtime: the PAI agent runtime's lifecycle-hook model.
//!
//! An [`Agent`] has a model, instructions, [`Tool`]s and one [`Lifecycle`]
//! (usually a [`compose`]d list of hooks). A [`Runtime`] drives runs on
//! threads through the phases of SPEC §1, with time and ids injected through
//! [`Clock`] and [`IdSource`], and reports what it does to an [`EventSink`].

mod agent;
mod attempt;
mod clock;
mod context;
mod event;
mod future;
mod lifecycle;
mod live;
mod message;
mod model;
mod model_call;
mod patch;
mod runtime;
mod stop;
mod store;
mod text;
mod tool;
mod transform;

pub use agent::Agent;
pub use clock::{Clock, IdKind, IdSource, Millis};
pub use context::{ContextInput, ContextNext, History, HistoryError, HistoryPage, ResolverThread};
pub use event::{Event, EventKind, EventSink, RunStatus, Transition};
pub use future::HookFuture;
pub use lifecycle::{
    AfterStepDecision, AfterStepInput, Composed, HookCx, HookError, HookNote, HookResult,
    Lifecycle, NoLifecycle, NoteDecision, Phase, Phases, Response, RunDecision, RunInput,
    StepDecision, StepInput, StreamInput, StreamKind, ToolCallDecision, ToolCallInput, ToolResult,
    ToolResultDecision, ToolResultInput, compose,
};
pub use live::{LiveEvent, Watch};
pub use message::{
    MISSING_RESULT, Message, ModelContent, ModelMessage, Outcome, PaiMeta, Part, Producer,
    ResultSource, Role, THROWN_TOOL_ERROR, ToolStatus, Visibility, model_visible_output,
    pair_tool_calls, to_model_messages,
};
pub use model::{
    BoxStream, FinishReason, LanguageModel, ModelError, ModelMap, ModelProvider, ModelRequest,
    PartStream, ReadyStream, StreamPart,
};
pub use model_call::{AttemptPatch, ModelNext};
pub use patch::{ModelSettings, Overlay, Patch, ProviderOptions, Route, RoutePatch, ToolChoice};
pub use runtime::{
    BuildError, Client, ClientError, Runtime, RuntimeBuilder, Sent, StoredThread, ThreadHandle,
    ThreadState,
};
pub use store::{RunRecord, StoreError};
pub use text::{
    Pattern, PatternError, Verdict, guard_text, inspect_text_deltas, matches_any, patterns, redact,
    redact_text_deltas,
};
pub use tool::{FnTool, Tool, ToolCx, ToolError, ToolOutcome, ToolSpec, tool_fn};
pub use transform::{Abort, Emit, StreamTransform};
