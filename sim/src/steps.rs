//! Which step an event belongs to: one reading of the event log shared by
//! the phase-grammar oracle and the HTML timeline, written here on the
//! simulator's side rather than asked of the runtime it judges.

use pai_runtime::event::EventKind;

/// The step an event is inside, if any.
pub(crate) fn step_of(kind: &EventKind) -> Option<u32> {
    match kind {
        EventKind::ContextLeaf { step, .. }
        | EventKind::ResolveModelContext { step, .. }
        | EventKind::PrepareModelStep { step, .. }
        | EventKind::ModelCall { step, .. }
        | EventKind::AttemptFailed { step, .. }
        | EventKind::Stream { step, .. }
        | EventKind::CommitStep { step, .. }
        | EventKind::BeforeToolCall { step, .. }
        | EventKind::ToolStart { step, .. }
        | EventKind::ToolEnd { step, .. }
        | EventKind::AfterToolResult { step, .. }
        | EventKind::CommitToolResults { step, .. }
        | EventKind::OnOutput { step, .. }
        | EventKind::AfterStep { step, .. } => Some(*step),
        _ => None,
    }
}
