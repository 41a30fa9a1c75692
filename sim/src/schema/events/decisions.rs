//! Hook decisions and transitions as events record them.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use pai_runtime::{
    NoteDecision, RunDecision, StepDecision, ToolCallDecision, ToolResultDecision, Transition,
};

use super::{names::*, values::*};
use crate::schema::mirror::Outcome;

/// One hook's decision, as a composition reports it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(rename = "HookDecision")]
pub enum NoteRecord {
    /// `prepare_run`.
    Run {
        /// The decision.
        decision: RunRecord,
    },
    /// `prepare_model_step`: go on with this patch.
    Step {
        /// The step's patch.
        patch: Box<PatchRecord>,
    },
    /// `before_tool_call`.
    ToolCall {
        /// The decision.
        decision: ToolCallRecord,
    },
    /// `after_tool_result`.
    ToolResult {
        /// The decision.
        decision: ToolResultDecisionRecord,
    },
    /// `after_step`.
    AfterStep {
        /// The decision.
        decision: AfterStepName,
    },
    /// A resolver returned this many messages.
    Context {
        /// How many.
        messages: usize,
    },
    /// An `around_model_call` hook called its `next` with this patch (SPEC P6).
    Next {
        /// The attempt's route patch.
        route: RoutePatchRecord,
        /// The attempt's deadline in virtual milliseconds.
        timeout_ms: Option<u64>,
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

impl From<&NoteDecision> for NoteRecord {
    fn from(d: &NoteDecision) -> Self {
        match d {
            NoteDecision::Run(r) => NoteRecord::Run { decision: r.into() },
            NoteDecision::Step(StepDecision::Continue(p)) => NoteRecord::Step {
                patch: Box::new(p.into()),
            },
            NoteDecision::ToolCall(t) => NoteRecord::ToolCall { decision: t.into() },
            NoteDecision::ToolResult(t) => NoteRecord::ToolResult { decision: t.into() },
            NoteDecision::AfterStep(a) => NoteRecord::AfterStep {
                decision: (*a).into(),
            },
            NoteDecision::Context { messages } => NoteRecord::Context {
                messages: *messages,
            },
            NoteDecision::Next { patch } => {
                let pai_runtime::AttemptPatch { route, timeout_ms } = patch;
                NoteRecord::Next {
                    route: route.into(),
                    timeout_ms: *timeout_ms,
                }
            }
            NoteDecision::ModelCall { error } => NoteRecord::ModelCall {
                error: error.clone(),
            },
            NoteDecision::Transform { installed } => NoteRecord::Transform {
                installed: *installed,
            },
        }
    }
}

/// What `prepare_run` decided.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(rename = "RunDecision")]
pub enum RunRecord {
    /// Go on; the patch sets the episode's defaults.
    Continue {
        /// The episode's patch.
        patch: Box<PatchRecord>,
    },
    /// Commit this response and end the run (SPEC L12).
    Respond {
        /// The run's outcome.
        outcome: Outcome,
        /// Why.
        reason: Option<String>,
        /// The response's parts.
        parts: Vec<PartRecord>,
    },
}

impl From<&RunDecision> for RunRecord {
    fn from(d: &RunDecision) -> Self {
        match d {
            RunDecision::Continue(p) => RunRecord::Continue {
                patch: Box::new(p.into()),
            },
            RunDecision::Respond(r) => RunRecord::Respond {
                outcome: r.outcome.into(),
                reason: r.reason.clone(),
                parts: r.parts.iter().map(Into::into).collect(),
            },
        }
    }
}

/// What `before_tool_call` decided.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(rename = "ToolCallDecision")]
pub enum ToolCallRecord {
    /// Run the call as it is.
    Continue,
    /// Run the call with this input.
    ReplaceInput {
        /// The new input.
        input: Value,
    },
    /// Do not run the call; the model sees the message as its error.
    Reject {
        /// The message.
        message: String,
    },
}

impl From<&ToolCallDecision> for ToolCallRecord {
    fn from(d: &ToolCallDecision) -> Self {
        match d.clone() {
            ToolCallDecision::Continue => ToolCallRecord::Continue,
            ToolCallDecision::ReplaceInput(input) => ToolCallRecord::ReplaceInput { input },
            ToolCallDecision::Reject { message } => ToolCallRecord::Reject { message },
        }
    }
}

/// What `after_tool_result` decided.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(rename = "ToolResultDecision")]
pub enum ToolResultDecisionRecord {
    /// Keep the result.
    Continue,
    /// Replace the output the model sees.
    ReplaceOutput {
        /// The new output.
        output: Value,
    },
}

impl From<&ToolResultDecision> for ToolResultDecisionRecord {
    fn from(d: &ToolResultDecision) -> Self {
        match d.clone() {
            ToolResultDecision::Continue => ToolResultDecisionRecord::Continue,
            ToolResultDecision::ReplaceOutput(output) => {
                ToolResultDecisionRecord::ReplaceOutput { output }
            }
        }
    }
}

/// A final tool result.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ToolResult")]
pub struct ToolResultRecord {
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Whether the tool produced an output.
    pub status: StatusOfTool,
    /// Where the result came from.
    pub source: SourceName,
    /// The output, the failure value, or the error detail.
    pub output: Value,
}

impl From<&pai_runtime::ToolResult> for ToolResultRecord {
    fn from(r: &pai_runtime::ToolResult) -> Self {
        let pai_runtime::ToolResult {
            call_id,
            tool,
            status,
            source,
            output,
        } = r.clone();
        ToolResultRecord {
            call_id,
            tool,
            status: status.into(),
            source: source.into(),
            output,
        }
    }
}

/// A client's answer to a waiting call (SPEC T9).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(rename = "Answer")]
pub enum AnswerRecord {
    /// The approval call may run.
    Approved,
    /// The approval call must not run.
    Denied {
        /// What the model is told.
        reason: String,
    },
    /// A client tool's output.
    Submitted {
        /// The output.
        output: Value,
    },
}

impl From<&pai_runtime::Answer> for AnswerRecord {
    fn from(a: &pai_runtime::Answer) -> Self {
        match a.clone() {
            pai_runtime::Answer::Approved => AnswerRecord::Approved,
            pai_runtime::Answer::Denied { reason } => AnswerRecord::Denied { reason },
            pai_runtime::Answer::Submitted { output } => AnswerRecord::Submitted { output },
        }
    }
}

/// How a step hands over to what comes next.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(rename = "Transition")]
pub enum TransitionRecord {
    /// Another step follows.
    NextStep,
    /// A steering message is waiting: a new episode takes it (SPEC A4).
    Steer,
    /// Calls of the step wait for a client (SPEC T7): the episode ends.
    Wait,
    /// A canonical transform aborted the step (SPEC S4).
    Aborted {
        /// The run's outcome.
        outcome: Outcome,
        /// Why.
        reason: String,
    },
    /// The run is complete.
    Complete {
        /// Why, if known.
        reason: Option<String>,
    },
}

impl From<&Transition> for TransitionRecord {
    fn from(t: &Transition) -> Self {
        match t.clone() {
            Transition::NextStep => TransitionRecord::NextStep,
            Transition::Steer => TransitionRecord::Steer,
            Transition::Wait => TransitionRecord::Wait,
            Transition::Aborted { outcome, reason } => TransitionRecord::Aborted {
                outcome: outcome.into(),
                reason,
            },
            Transition::Complete { reason } => TransitionRecord::Complete { reason },
        }
    }
}
