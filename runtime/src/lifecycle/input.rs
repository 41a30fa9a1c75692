//! What hooks receive: the context every hook gets, and each phase's input.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::decision::HookNote;
use super::facade::RunFacade;
use crate::clock::Millis;
use crate::id::CallId;
use crate::message::{Message, ModelMessage, ResultSource, ToolStatus};
use crate::patch::Route;

/// What every hook receives besides its phase input.
pub struct HookCx<'a, C> {
    /// The application's typed runtime context.
    pub context: &'a C,
    /// The run the hook runs for.
    pub run_id: &'a str,
    /// The thread of that run.
    pub thread_id: &'a str,
    /// Execution episode number, from 1.
    pub episode: u32,
    /// The episode resumes the run: after a wait (SPEC T7), or a takeover
    /// among workers (K3); what `prepare_run`'s input says too.
    pub resumed: bool,
    /// The time on the runtime's clock when the hook was called (milliseconds).
    pub now: Millis,
    pub(crate) trace: Option<&'a dyn HookTrace>,
    /// The run's thread facade (metadata, hidden messages), inside a run.
    pub(crate) run: Option<&'a dyn RunFacade>,
}

impl<'a, C> HookCx<'a, C> {
    /// A context for calling hooks outside the runtime (unit tests of hooks,
    /// other drivers). Inner decisions of composed hooks are not traced.
    pub fn new(
        context: &'a C,
        run_id: &'a str,
        thread_id: &'a str,
        episode: u32,
        now: Millis,
    ) -> Self {
        HookCx {
            context,
            run_id,
            thread_id,
            episode,
            resumed: false,
            now,
            trace: None,
            run: None,
        }
    }

    /// The same hook context with another application context: the same
    /// run, clock, trace and thread facade (metadata, hidden messages). A
    /// driver that keeps several applications' contexts in one (a
    /// simulator running an author's hooks) calls each hook with its own.
    pub fn with_context<'b, D>(&'b self, context: &'b D) -> HookCx<'b, D> {
        HookCx {
            context,
            run_id: self.run_id,
            thread_id: self.thread_id,
            episode: self.episode,
            resumed: self.resumed,
            now: self.now,
            trace: self.trace,
            run: self.run,
        }
    }

    /// Reports an inner hook's decision, when someone listens.
    #[inline]
    pub(crate) fn note(&self, note: impl FnOnce() -> HookNote) {
        if let Some(trace) = self.trace {
            trace.note(note());
        }
    }
}

impl<C> fmt::Debug for HookCx<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookCx")
            .field("run_id", &self.run_id)
            .field("thread_id", &self.thread_id)
            .field("episode", &self.episode)
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

/// Where composed hooks report each inner decision.
pub(crate) trait HookTrace: Send + Sync {
    fn note(&self, note: HookNote);
}

/// What a canonical stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// A model step's provider stream.
    Model,
    /// A `prepare_run` response (SPEC L12).
    Respond,
    /// An abort's replacement parts (SPEC S4).
    Replacement,
    /// A provider's explanation of a refusal (SPEC S6), stored as the
    /// run's reason.
    Refusal,
    /// A compaction summary the summary model wrote (SPEC C3): stored and
    /// reused as context like a step's text.
    Summary,
}

/// Input of `transform_step_stream`.
#[derive(Debug, Clone, Copy)]
pub struct StreamInput {
    /// The model step, for model streams.
    pub step: Option<u32>,
    /// What the stream carries: a model step's output, a `prepare_run`
    /// response, an abort's replacement, a refusal's explanation or a
    /// compaction summary.
    pub kind: StreamKind,
}

/// Input of `prepare_run`.
#[derive(Debug)]
pub struct RunInput<'a> {
    /// The thread's stored messages at episode start, without the messages of
    /// runs still queued behind this one.
    pub messages: &'a [Message],
    /// The newest user message of this run (SPEC L1): the one that started
    /// it, or a steer it took. Never a message of another run.
    pub latest_user_message: Option<&'a Message>,
    /// The episode route with earlier hooks' patches applied.
    pub route: &'a Route,
    /// This episode resumes a run that waited for a client (SPEC L1, T7).
    pub resumed: bool,
}

/// Input of `prepare_model_step`.
#[derive(Debug)]
pub struct StepInput<'a> {
    /// Step number within the run, from 0.
    pub step: u32,
    /// The step route with earlier hooks' patches applied.
    pub route: &'a Route,
    /// The messages the step would send: resolved context, episode overlay and
    /// earlier hooks' step patches.
    pub messages: &'a [ModelMessage],
}

/// Input of `before_tool_call`.
#[derive(Debug)]
pub struct ToolCallInput<'a> {
    /// Step number within the run, from 0.
    pub step: u32,
    /// The call's id, as the model's stream gave it.
    pub call_id: &'a str,
    /// The name of the tool called.
    pub tool: &'a str,
    /// The input, as replaced by earlier hooks.
    pub input: &'a Value,
}

/// A final tool result.
// As hooks see it, and as the event log writes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct ToolResult {
    /// The call's id.
    pub call_id: CallId,
    /// The tool.
    pub tool: String,
    /// Whether the tool produced an output.
    pub status: ToolStatus,
    /// Where the result came from.
    pub source: ResultSource,
    /// The output, the failure value, or the error detail.
    pub output: Value,
}

/// Input of `after_tool_result`.
#[derive(Debug)]
pub struct ToolResultInput<'a> {
    /// Step number within the run, from 0.
    pub step: u32,
    /// The result, with earlier hooks' replacements applied.
    pub result: &'a ToolResult,
}

/// Input of `after_step`.
#[derive(Debug)]
pub struct AfterStepInput<'a> {
    /// Step number within the run, from 0.
    pub step: u32,
    /// The assembled, committed assistant message. Read-only (SPEC A1).
    pub message: &'a Message,
    /// The step's final tool results, in call order, with `after_tool_result`
    /// replacements applied.
    pub tool_results: &'a [ToolResult],
    /// The provider refused the step (SPEC S6): its kind and words. The
    /// run then ends `blocked` whatever this hook decides, as after an
    /// abort; an `around_model_call` hook is where a refusal can be tried
    /// again.
    pub refusal: Option<&'a crate::model::Refusal>,
}
