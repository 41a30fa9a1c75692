//! SPEC T9, the moment a call becomes answerable: a client or approval
//! call that every `before_tool_call` of its step let through is
//! answerable before the step goes on. So before the run's next result
//! commit or `after_step`, each such call has been
//! named by an `awaiting` (or a `wait`), or has its result already (an
//! invalid input, a tool the step did not offer). Judged per run story;
//! a run that stops there (a lost lease, a failure, a cancel) owes nothing,
//! nor does a run once the store took a cancel for it (T8 gives its calls
//! up, K6: the store then refuses to make them answerable): in one process
//! from the cancel on, among workers from its holder's `cancel_learned`.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    event::EventKind,
    hook::{ToolCallDecision, ToolResult},
};

use super::observed::{Observed, Violation};
use crate::scenario::{Action, Behaviour, OracleId};

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
    let cancels = cancels_in_process(o);
    for (i, e) in o.events.iter().enumerate() {
        let run = e.run_id.as_str();
        if cancels.iter().any(|(r, at)| *r == run && i >= *at) {
            owed.remove(run);
            continue;
        }
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
            EventKind::CancelLearned { .. }
            | EventKind::Failed { .. }
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

/// In one process (where the log's order is the store's): each run a
/// client's cancel reached, with the log position the cancel came at.
fn cancels_in_process<'a>(o: &Observed<'a>) -> Vec<(&'a str, usize)> {
    if o.cluster.is_some() {
        return Vec::new();
    }
    o.actions
        .iter()
        .filter(|a| matches!(o.scenario.timeline[a.moment].action, Action::Cancel(_)))
        .filter_map(|a| match &a.outcome {
            Ok(Some(run)) => Some((run.as_str(), a.before_event)),
            _ => None,
        })
        .collect()
}
