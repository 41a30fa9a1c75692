//! SPEC T1: every `before_tool_call` of a step finishes before any of its tools starts.

use std::collections::BTreeMap;

use pai_runtime::{Event, event::EventKind};

use super::observed::Violation;
use crate::scenario::OracleId;

/// SPEC T1: within one step, no tool starts before every `before_tool_call`
/// of that step has finished. A takeover (K3) runs the calls of the last
/// committed step that have no committed result as a batch of its own.
pub(super) fn check(events: &[Event]) -> Vec<Violation> {
    let mut started: BTreeMap<(&str, u32), &str> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::TakenOver { .. } => started.retain(|(run, _), _| *run != e.run_id),
            EventKind::ToolStart { step, call_id, .. } => {
                started.entry((e.run_id.as_str(), *step)).or_insert(call_id);
            }
            EventKind::BeforeToolCall { step, call_id, .. } => {
                if let Some(first) = started.get(&(e.run_id.as_str(), *step)) {
                    out.push(Violation {
                        oracle: OracleId::T1.into(),
                        run: Some(e.run_id.to_string()),
                        message: format!(
                            "before_tool_call for {call_id} ran after tool {first} had started (step {step})"
                        ),
                    });
                }
            }
            _ => {}
        }
    }
    out
}
