//! The phases a hook can handle, and sets of them.

use std::fmt;

use serde::Serialize;

/// A lifecycle phase.
// Hooks can handle each; listed in step order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// `prepare_run`
    PrepareRun,
    /// `resolve_model_context`
    ResolveModelContext,
    /// `prepare_model_step`
    PrepareModelStep,
    /// `around_model_call`
    AroundModelCall,
    /// `transform_step_stream`
    TransformStepStream,
    /// `before_tool_call`
    BeforeToolCall,
    /// `after_tool_result`
    AfterToolResult,
    /// `after_step`
    AfterStep,
    /// `prepare_history_rewrite`
    // Before a history rewrite commits (SPEC L11, R2).
    PrepareHistoryRewrite,
    /// `history_rewritten`
    // After history rewrites committed, best effort (SPEC L11, R3).
    HistoryRewritten,
}

/// How many phases there are.
pub(crate) const PHASES: usize = 10;

impl Phase {
    /// Every phase, in the order a run meets them (SPEC §1), the two
    /// history-rewrite phases last.
    pub const ALL: [Phase; PHASES] = [
        Phase::PrepareRun,
        Phase::ResolveModelContext,
        Phase::PrepareModelStep,
        Phase::AroundModelCall,
        Phase::TransformStepStream,
        Phase::BeforeToolCall,
        Phase::AfterToolResult,
        Phase::AfterStep,
        Phase::PrepareHistoryRewrite,
        Phase::HistoryRewritten,
    ];

    /// The phase's name in the event log, in scenario files and in `Display`
    /// (`prepare_run`).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::PrepareRun => "prepare_run",
            Phase::ResolveModelContext => "resolve_model_context",
            Phase::PrepareModelStep => "prepare_model_step",
            Phase::AroundModelCall => "around_model_call",
            Phase::TransformStepStream => "transform_step_stream",
            Phase::BeforeToolCall => "before_tool_call",
            Phase::AfterToolResult => "after_tool_result",
            Phase::AfterStep => "after_step",
            Phase::PrepareHistoryRewrite => "prepare_history_rewrite",
            Phase::HistoryRewritten => "history_rewritten",
        }
    }

    const fn bit(self) -> u16 {
        1 << self as u8
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The set of phases a hook handles. Composition dispatches a phase only to
/// the hooks whose set contains it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Phases(u16);

impl Phases {
    /// No phase: a hook that handles nothing is never called.
    pub const NONE: Phases = Phases(0);
    /// Every phase.
    pub const ALL: Phases = Phases(0b11_1111_1111);

    /// The one phase `phase`.
    pub const fn only(phase: Phase) -> Phases {
        Phases(phase.bit())
    }

    /// This set with `phase` added.
    pub const fn with(self, phase: Phase) -> Phases {
        Phases(self.0 | phase.bit())
    }

    /// Whether `phase` is in the set: composition calls a hook in a phase only
    /// then.
    pub const fn contains(self, phase: Phase) -> bool {
        self.0 & phase.bit() != 0
    }
}

impl fmt::Debug for Phases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(
                Phase::ALL
                    .iter()
                    .filter(|p| self.contains(**p))
                    .map(|p| p.as_str()),
            )
            .finish()
    }
}
