//! What each phase may decide (SPEC §3): one typed decision per phase, so a
//! phase cannot return another phase's decision; and the copies of inner
//! decisions a composition reports to the event log, with their serialized
//! shape there.

use serde::Serialize;
use serde_json::Value;

use super::phase::Phase;
use crate::message::{Outcome, Part};
use crate::model_call::AttemptPatch;
use crate::one_field::one_field;
use crate::patch::Patch;

one_field! {
    continue_patch: Patch => Patch, |p| p, "patch", "The episode's patch.";
    step_patch: StepDecision => Patch, |d| match d { StepDecision::Continue(p) => p }, "patch", "The step's patch.";
    replace_input: Value => Value, |v| v, "input", "The new input.";
    replace_output: Value => Value, |v| v, "output", "The new output.";
    run_decision: RunDecision => RunDecision, |d| d, "decision", "The decision.";
    tool_call_decision: ToolCallDecision => ToolCallDecision, |d| d, "decision", "The decision.";
    tool_result_decision: ToolResultDecision => ToolResultDecision, |d| d, "decision", "The decision.";
    after_step_decision: AfterStepDecision => AfterStepDecision, |d| d, "decision", "The decision.";
}

/// A terminal response from `prepare_run` (SPEC L12).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct Response {
    /// The run's outcome.
    pub outcome: Outcome,
    /// Why.
    pub reason: Option<String>,
    /// The response's parts.
    pub parts: Vec<Part>,
}

/// What `prepare_run` decided.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub enum RunDecision {
    /// Go on; the patch sets the episode's defaults.
    #[serde(serialize_with = "continue_patch::serialize")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "continue_patch::schema"))]
    Continue(Patch),
    /// Commit this response and end the run (SPEC L12).
    #[cfg_attr(feature = "schema", schemars(with = "Response"))]
    Respond(Response),
}

impl Default for RunDecision {
    fn default() -> Self {
        RunDecision::Continue(Patch::default())
    }
}

/// What `prepare_model_step` may decide.
#[derive(Debug, Clone, PartialEq)]
pub enum StepDecision {
    /// Go on; the patch (often empty) applies to this step only.
    Continue(Patch),
}

impl Default for StepDecision {
    fn default() -> Self {
        StepDecision::Continue(Patch::default())
    }
}

/// What `before_tool_call` decided.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub enum ToolCallDecision {
    /// Run the call as it is.
    #[default]
    Continue,
    /// Run the call with this input.
    #[serde(serialize_with = "replace_input::serialize")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "replace_input::schema"))]
    ReplaceInput(Value),
    /// Do not run the call; the model sees the message as its error.
    Reject {
        /// The message.
        message: String,
    },
}

/// What `after_tool_result` decided.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub enum ToolResultDecision {
    /// Keep the result.
    #[default]
    Continue,
    /// Replace the output the model sees.
    #[serde(serialize_with = "replace_output::serialize")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "replace_output::schema"))]
    ReplaceOutput(Value),
}

/// What `after_step` decided. Ordered by strength (SPEC L10).
// `Complete > NextStep > Natural`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AfterStepDecision {
    /// Go on as the step would: tool results lead to another step.
    #[default]
    Natural,
    /// Take another step.
    NextStep,
    /// End the run.
    Complete,
}

impl AfterStepDecision {
    /// The decision's name in the event log (`natural`, `next_step`,
    /// `complete`).
    pub fn as_str(self) -> &'static str {
        match self {
            AfterStepDecision::Natural => "natural",
            AfterStepDecision::NextStep => "next_step",
            AfterStepDecision::Complete => "complete",
        }
    }
}

/// One hook's decision inside a composition, reported to the event log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// Inline in the `hook` event, which describes it.
#[cfg_attr(
    feature = "schema",
    schemars(inline, deny_unknown_fields, description = "")
)]
pub struct HookNote {
    /// The phase the hook handled.
    pub phase: Phase,
    /// The hook's name.
    pub hook: String,
    /// What it decided.
    pub decision: NoteDecision,
}

/// One hook's decision, as a composition reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(
    feature = "schema",
    schemars(rename = "HookDecision", deny_unknown_fields)
)]
pub enum NoteDecision {
    /// `prepare_run`.
    #[serde(serialize_with = "run_decision::serialize")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "run_decision::schema"))]
    Run(RunDecision),
    /// `prepare_model_step`: go on with this patch.
    #[serde(serialize_with = "step_patch::serialize")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "step_patch::schema"))]
    Step(StepDecision),
    /// `before_tool_call`.
    #[serde(serialize_with = "tool_call_decision::serialize")]
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "tool_call_decision::schema")
    )]
    ToolCall(ToolCallDecision),
    /// `after_tool_result`.
    #[serde(serialize_with = "tool_result_decision::serialize")]
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "tool_result_decision::schema")
    )]
    ToolResult(ToolResultDecision),
    /// `after_step`.
    #[serde(serialize_with = "after_step_decision::serialize")]
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "after_step_decision::schema")
    )]
    AfterStep(AfterStepDecision),
    /// A resolver returned this many messages.
    Context {
        /// How many.
        messages: usize,
    },
    /// An `around_model_call` hook called its `next` with this patch (SPEC P6).
    // One provider attempt, or the next hook in.
    #[cfg_attr(feature = "schema", schemars(with = "AttemptPatch"))]
    Next {
        /// The patch it passed: the route and settings changed for that
        /// attempt.
        #[serde(flatten)]
        patch: AttemptPatch,
    },
    /// An `around_model_call` hook returned a stream, or this error.
    ModelCall {
        /// The error, if any.
        error: Option<String>,
    },
    /// A `transform_step_stream` hook installed a stage (or not).
    Transform {
        /// A stage was installed.
        installed: bool,
    },
}
