//! Names a scenario file uses for things the simulator defines: oracles (in
//! `oracle = "..."`) and runtime events (in planted faults).

use std::fmt;

use pai_runtime::EventKind;
use serde::{Deserialize, Serialize};

/// An invariant oracle, by the name scenarios and reports use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum OracleId {
    /// SPEC §1 (L14): every run's events follow the phase grammar.
    #[serde(rename = "phase_grammar")]
    PhaseGrammar,
    #[serde(rename = "T1")]
    T1,
    #[serde(rename = "H1")]
    H1,
    #[serde(rename = "H6")]
    H6,
    #[serde(rename = "M1")]
    M1,
    #[serde(rename = "S3")]
    S3,
    #[serde(rename = "X3")]
    X3,
    /// The `expect` tables of scripted model turns.
    #[serde(rename = "request")]
    Request,
}

impl OracleId {
    pub fn as_str(self) -> &'static str {
        match self {
            OracleId::PhaseGrammar => "phase_grammar",
            OracleId::T1 => "T1",
            OracleId::H1 => "H1",
            OracleId::H6 => "H6",
            OracleId::M1 => "M1",
            OracleId::S3 => "S3",
            OracleId::X3 => "X3",
            OracleId::Request => "request",
        }
    }
}

impl fmt::Display for OracleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A runtime event, by its name in the phase grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventName {
    Admit,
    Steered,
    LeaseAcquired,
    Hook,
    PrepareRun,
    Respond,
    ContextLeaf,
    ResolveModelContext,
    PrepareModelStep,
    AroundModelCall,
    AttemptFailed,
    Stream,
    CommitStep,
    BeforeToolCall,
    ToolStart,
    ToolEnd,
    AfterToolResult,
    CommitToolResults,
    AfterStep,
    Cancelled,
    Failed,
    LeaseReleased,
    End,
}

impl EventName {
    /// The name of an event. Exhaustive: a new event kind needs a name here.
    pub fn of(kind: &EventKind) -> EventName {
        match kind {
            EventKind::Admitted { .. } => EventName::Admit,
            EventKind::Steered { .. } => EventName::Steered,
            EventKind::LeaseAcquired { .. } => EventName::LeaseAcquired,
            EventKind::Hook(_) => EventName::Hook,
            EventKind::PrepareRun { .. } => EventName::PrepareRun,
            EventKind::Respond { .. } => EventName::Respond,
            EventKind::ContextLeaf { .. } => EventName::ContextLeaf,
            EventKind::ResolveModelContext { .. } => EventName::ResolveModelContext,
            EventKind::PrepareModelStep { .. } => EventName::PrepareModelStep,
            EventKind::ModelCall { .. } => EventName::AroundModelCall,
            EventKind::AttemptFailed { .. } => EventName::AttemptFailed,
            EventKind::Stream { .. } => EventName::Stream,
            EventKind::CommitStep { .. } => EventName::CommitStep,
            EventKind::BeforeToolCall { .. } => EventName::BeforeToolCall,
            EventKind::ToolStart { .. } => EventName::ToolStart,
            EventKind::ToolEnd { .. } => EventName::ToolEnd,
            EventKind::AfterToolResult { .. } => EventName::AfterToolResult,
            EventKind::CommitToolResults { .. } => EventName::CommitToolResults,
            EventKind::AfterStep { .. } => EventName::AfterStep,
            EventKind::Cancelled { .. } => EventName::Cancelled,
            EventKind::Failed { .. } => EventName::Failed,
            EventKind::LeaseReleased { .. } => EventName::LeaseReleased,
            EventKind::Ended { .. } => EventName::End,
        }
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = serde_json::to_value(self).unwrap_or_default();
        f.write_str(name.as_str().unwrap_or("?"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scenario names of events are the runtime's own names for them.
    #[test]
    fn event_names_match_the_runtime() {
        let kinds = [
            EventKind::Admitted {
                trigger: String::new(),
            },
            EventKind::ModelCall {
                step: 0,
                attempt: 1,
                route: pai_runtime::Route::new("m"),
                context: 0,
                overlay: 0,
                messages: 0,
                tools: vec![],
                timeout_ms: None,
            },
            EventKind::LeaseReleased { episode: 1 },
        ];
        for k in &kinds {
            assert_eq!(EventName::of(k).to_string(), k.name());
        }
    }
}
