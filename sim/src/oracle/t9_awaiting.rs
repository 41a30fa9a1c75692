//! SPEC T9, the moment a call becomes answerable: a client or approval
//! call that every `before_tool_call` of its step let through is
//! answerable before the step goes on. So before the run's next result
//! commit or `after_step`, each such call has been
//! named by an `awaiting` (or a `wait`), or has its result already (an
//! invalid input, a tool the step did not offer). Judged per run story;
//! a run that stops there (a lost lease, a failure, a cancel) owes nothing.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    event::EventKind,
    hook::{ToolCallDecision, ToolResult},
};

use super::observed::{Observed, Violation};
use crate::scenario::{Behaviour, OracleId};

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let answerable: BTreeSet<&str> = o
        .scenario
        .agent
        .tools
        .iter()
        .filter(|t| t.approval.may_wait() || matches!(t.behaviour, Behaviour::Client))
        .map(|t| t.name.as_str())
        .collect();
    if answerable.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    // run → calls let through and not yet answerable, in call order
    let mut owed: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in o.events {
        let run = e.run_id.as_str();
        match &e.kind {
            EventKind::BeforeToolCall {
                call_id,
                tool,
                decision,
                ..
            } if answerable.contains(tool.as_str())
                && !matches!(decision, ToolCallDecision::Reject { .. }) =>
            {
                owed.entry(run).or_default().push(call_id);
            }
            EventKind::Awaiting { calls, .. } | EventKind::Waiting { calls, .. } => {
                if let Some(list) = owed.get_mut(run) {
                    list.retain(|c| !calls.iter().any(|x| x == c));
                }
            }
            // A result given before the call could wait (an invalid input,
            // a tool the step did not offer) ends what the call is owed.
            EventKind::ToolEnd {
                result: ToolResult { call_id, .. },
                ..
            }
            | EventKind::AfterToolResult { call_id, .. } => {
                if let Some(list) = owed.get_mut(run) {
                    list.retain(|c| c != call_id);
                }
            }
            EventKind::CommitToolResults { .. } | EventKind::AfterStep { .. } => {
                if let Some(list) = owed.remove(run)
                    && let Some(call) = list.first()
                {
                    let message = format!(
                        "call {call} was let through by before_tool_call but never made answerable before the step went on ({})",
                        e.kind.name()
                    );
                    out.push(Violation::new(OracleId::T9, Some(run), message));
                }
            }
            // A run that stops or loses its lease owes nothing more here.
            EventKind::Failed { .. }
            | EventKind::Cancelled { .. }
            | EventKind::LeaseLost { .. }
            | EventKind::TakenOver { .. }
            | EventKind::Ended { .. } => {
                owed.remove(run);
            }
            _ => {}
        }
    }
    out
}
