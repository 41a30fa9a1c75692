//! What each phase may decide (SPEC §3): one typed decision per phase, so a
//! phase cannot return another phase's decision; and the copies of inner
//! decisions a composition reports to the event log.

use serde_json::Value;

use super::phase::Phase;
use crate::message::{Outcome, Part};
use crate::model_call::AttemptPatch;
use crate::patch::Patch;

/// A terminal response from `prepare_run` (SPEC L12).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub outcome: Outcome,
    pub reason: Option<String>,
    pub parts: Vec<Part>,
}

/// What `prepare_run` may decide.
#[derive(Debug, Clone, PartialEq)]
pub enum RunDecision {
    /// Go on; the patch sets the episode's defaults.
    Continue(Patch),
    /// Commit this response and end the run.
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

/// What `before_tool_call` may decide.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ToolCallDecision {
    #[default]
    Continue,
    ReplaceInput(Value),
    Reject {
        message: String,
    },
}

/// What `after_tool_result` may decide.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ToolResultDecision {
    #[default]
    Continue,
    ReplaceOutput(Value),
}

/// What `after_step` may decide. Ordered by strength (SPEC L10):
/// `Complete > NextStep > Natural`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AfterStepDecision {
    #[default]
    Natural,
    NextStep,
    Complete,
}

impl AfterStepDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            AfterStepDecision::Natural => "natural",
            AfterStepDecision::NextStep => "next_step",
            AfterStepDecision::Complete => "complete",
        }
    }
}

/// One hook's decision inside a composition, reported to the event log.
#[derive(Debug, Clone, PartialEq)]
pub struct HookNote {
    pub phase: Phase,
    pub hook: String,
    pub decision: NoteDecision,
}

/// A copy of a decision for the event log.
#[derive(Debug, Clone, PartialEq)]
pub enum NoteDecision {
    Run(RunDecision),
    Step(StepDecision),
    ToolCall(ToolCallDecision),
    ToolResult(ToolResultDecision),
    AfterStep(AfterStepDecision),
    /// A resolver returned this many messages.
    Context {
        messages: usize,
    },
    /// An `around_model_call` hook called its `next` with this patch: one
    /// provider attempt, or the next hook in (SPEC P6).
    Next {
        patch: AttemptPatch,
    },
    /// An `around_model_call` hook returned a stream, or this error.
    ModelCall {
        error: Option<String>,
    },
    /// A `transform_step_stream` hook installed a stage (or not).
    Transform {
        installed: bool,
    },
}
