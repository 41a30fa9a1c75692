//! SPEC T6: an `on_output` handler runs for its tool's successful outputs,
//! and only for them: every `on_output` event follows an output result of
//! its call, and every output result of a tool the scenario gave a handler
//! is followed by its `on_output` before `after_tool_result` judges it.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{event::EventKind, message::ToolStatus};

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let handled: BTreeSet<&str> = o
        .scenario
        .agent
        .tools
        .iter()
        .filter(|t| t.on_output.is_some())
        .map(|t| t.name.as_str())
        .collect();
    // Per (run, call): the result's status, and whether on_output ran.
    let mut output: BTreeMap<(&str, &str), bool> = BTreeMap::new();
    let mut out = Vec::new();
    let mut flag = |run: &str, message: String| {
        out.push(Violation::new(OracleId::T6, Some(run), message));
    };
    for e in o.events {
        let run = e.run_id.as_str();
        match &e.kind {
            // An episode that lost its lease (K3) leaves its outputs
            // uncommitted: the run's next holder owes them nothing.
            EventKind::LeaseLost { .. } | EventKind::TakenOver { .. } => {
                output.retain(|(r, _), _| *r != run);
            }
            EventKind::ToolEnd { result, .. } if result.status == ToolStatus::Output => {
                let owed = handled.contains(result.tool.as_str());
                output.insert((run, result.call_id.as_str()), owed);
            }
            EventKind::OnOutput { call_id, tool, .. } => {
                match output.get_mut(&(run, call_id.as_str())) {
                    Some(owed) => *owed = false,
                    None => flag(
                        run,
                        format!("on_output ran for {call_id} ({tool}) without a successful output"),
                    ),
                }
            }
            EventKind::AfterToolResult { call_id, .. }
                if output.remove(&(run, call_id.as_str())) == Some(true) =>
            {
                let message =
                    format!("{call_id} had a successful output, but its on_output never ran");
                flag(run, message);
            }
            _ => {}
        }
    }
    out
}
