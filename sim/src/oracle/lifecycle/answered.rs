//! SPEC K3, T9: a call whose approval or client result was committed is
//! not put to `before_tool_call` again, by a worker that took its run over
//! as by the holder that resumes it: the policy's decision and the input it
//! let through were recorded with the call, and the answer names them.

use std::collections::BTreeMap;

use pai_runtime::Event;
use pai_runtime::event::EventKind;

use crate::oracle::observed::Violation;
use crate::scenario::OracleId;

/// Every `before_tool_call` of a call after its answer's commit in the log.
/// (The call's own `before_tool_call` made it answerable, so it comes
/// before any answer to it.)
pub(super) fn check(events: &[Event]) -> Vec<Violation> {
    let mut answered: BTreeMap<&str, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::Answered {
                call_id, version, ..
            } => {
                answered
                    .entry(call_id.as_str())
                    .or_insert(version.to_owned());
            }
            EventKind::BeforeToolCall { call_id, .. } => {
                if let Some(v) = answered.get(call_id.as_str()) {
                    let by = e.worker.as_deref().unwrap_or("its process");
                    let message = format!(
                        "before_tool_call for call {call_id} by {by} at {}ms, after its answer was committed at v{v} (K3: a recorded decision is not asked again)",
                        e.at
                    );
                    out.push(Violation::new(
                        OracleId::Lifecycle,
                        Some(&e.run_id),
                        message,
                    ));
                }
            }
            _ => {}
        }
    }
    out
}
