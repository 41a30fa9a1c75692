//! pai-runtime: the PAI agent runtime's lifecycle-hook model.
//!
//! An [`Agent`] has a model, instructions, [`Tool`]s and one [`Lifecycle`]
//! (usually a [`compose`]d list of hooks, often built from closures with the
//! constructors in [`hook`]). A [`Runtime`] drives runs on threads through
//! the phases of SPEC §1, with time and ids injected through [`Clock`] and
//! [`IdSource`], and reports what it does to an [`EventSink`].

mod agent;
mod attempt;
mod client;
mod clock;
mod compaction;
mod context;
mod context_cache;
mod delta;
mod emit;
mod error;
mod event;
mod facade;
mod future;
mod lifecycle;
mod live;
mod message;
mod metadata;
mod model;
mod model_call;
mod model_view;
mod mutate;
mod on_output;
mod one_field;
mod patch;
mod pending_rewrites;
mod process;
mod shared;
mod staged;
mod step_loop;
mod stop;
mod store;
pub mod text;
mod tool;
mod transform;
mod typed_tool;
mod worker;

/// Single-phase hooks built from closures, in the spirit of [`tool_fn`]:
///
/// ```
/// use pai_runtime::{AfterStepDecision, HookFuture, compose, hook};
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
    pub use crate::lifecycle::from_fn::{
        FnHook, after_step, after_tool_result, around_model_call, before_tool_call, on,
        prepare_model_step, prepare_run, resolve_model_context, transform_step_stream,
    };
}

pub use agent::Agent;
pub use client::{
    BuildError, Client, ClientError, Runtime, RuntimeBuilder, Sent, ThreadHandle, ThreadState,
};
pub use clock::{Clock, IdKind, IdSource, Millis};
pub use compaction::{COMPACTION_KEY, Compaction, CompactionCursor};
pub use context::{ContextInput, ContextNext, History, HistoryError, HistoryPage, ResolverThread};
pub use delta::Delta;
pub use error::{HookError, HookResult};
pub use event::{Event, EventKind, EventName, EventSink, RunStage, Transition};
pub use facade::{Admin, AdminThread};
pub use future::HookFuture;
pub use lifecycle::{
    AfterStepDecision, AfterStepInput, Composed, HookCx, HookNote, Lifecycle, NoLifecycle,
    NoteDecision, Phase, Phases, Response, RewriteFact, RewriteInput, RewriteKind, RewritePatch,
    RunDecision, RunInput, StepDecision, StepInput, StreamInput, StreamKind, ToolCallDecision,
    ToolCallInput, ToolResult, ToolResultDecision, ToolResultInput, compose,
};
pub use live::{LiveEvent, Watch};
pub use message::{
    Message, ModelContent, ModelMessage, Outcome, PaiMeta, Part, Producer, ResultSource, Role,
    ToolStatus, Visibility,
};
pub use metadata::RunMetadata;
pub use model::{
    BoxStream, FinishReason, LanguageModel, ModelError, ModelMap, ModelProvider, ModelRequest,
    PartSink, PartStream, ReadyStream, StreamPart, StreamedCall,
};
pub use model_call::{AttemptPatch, ModelNext};
pub use patch::{ModelSettings, Patch, ProviderOptions, Route, RoutePatch, ToolChoice};
pub use staged::{MutateError, Staged};
pub use store::{
    AdminOp, AdminReply, Answer, AnswerMiss, Answered, Appended, CachedThrough, CancelMiss,
    CancelReached, CancelTarget, Claimed, ClientOp, ClientReply, DELETED, Deletion, Expect,
    FacadeOp, FacadeReply, Finish, HistoryRead, MemoryStore, Mutation, Op, ReadOp, ReadReply,
    Refusal, Regeneration, RunEnd, RunOp, RunRecord, RunReply, RunStatus, Store, StoreError,
    StoreFuture, StoreReply, StoreRequest, StoredThread, Submitted, Takeover, VisibilityChange,
    WaitingCall, Write, Writer,
};
#[cfg(feature = "sqlite")]
pub use store::{Durability, SqliteConfig, SqliteError, SqliteStore};
#[cfg(feature = "postgres")]
pub use store::{PgConfig, PgError, PgOptions, PgStore};
pub use text::{
    Pattern, PatternError, Verdict, guard_text, inspect_text_deltas, redact_text_deltas,
};
pub use tool::{FnTool, Tool, ToolCx, ToolError, ToolKind, ToolOutcome, ToolSpec, tool_fn};
pub use transform::{Abort, Emit, StreamTransform};
pub use typed_tool::{TypedTool, client_tool, typed_tool};
pub use worker::WorkerConfig;
