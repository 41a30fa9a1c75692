//! From the runtime's event to its published shape (`EventData`): one
//! exhaustive match, so a new event kind cannot be left out of the schema.

use pai_runtime::EventKind;

use super::data::EventData;
use super::facade::FacadeData;
use super::names::*;

impl From<&EventKind> for EventData {
    fn from(kind: &EventKind) -> Self {
        if let Some(f) = FacadeData::of(kind) {
            return facade(kind, f);
        }
        match kind.clone() {
            EventKind::Admitted { trigger } => EventData::Admit { trigger },
            EventKind::Steered { message } => EventData::Steered { message },
            EventKind::LeaseAcquired {
                episode,
                token,
                version,
            } => EventData::LeaseAcquired {
                episode,
                token,
                version,
            },
            EventKind::LeaseRenewed { token, version } => {
                EventData::LeaseRenewed { token, version }
            }
            EventKind::LeaseLost { token, reason } => EventData::LeaseLost { token, reason },
            EventKind::ThreadRead {
                version,
                incarnation,
                messages,
            } => EventData::ReadThread {
                version,
                incarnation,
                messages,
            },
            EventKind::DeleteLearned {
                request,
                incarnation,
            } => EventData::DeleteLearned {
                request,
                incarnation,
            },
            EventKind::TakenOver {
                from,
                stale_token,
                expired_at,
                next_step,
            } => EventData::TakenOver {
                from,
                stale_token,
                expired_at,
                next_step,
            },
            EventKind::Hook(n) => EventData::Hook {
                phase: n.phase.into(),
                hook: n.hook,
                decision: (&n.decision).into(),
            },
            EventKind::PrepareRun {
                route,
                overlay,
                latest_user,
                resumed,
            } => EventData::PrepareRun {
                route: (&route).into(),
                overlay,
                latest_user,
                resumed,
            },
            EventKind::Respond {
                latest_user,
                outcome,
                reason,
                message,
                version,
            } => EventData::Respond {
                latest_user,
                outcome: outcome.into(),
                reason,
                message,
                version,
            },
            EventKind::ContextLeaf {
                step,
                base,
                messages,
            } => EventData::ContextLeaf {
                step,
                base,
                messages,
            },
            EventKind::ResolveModelContext {
                step,
                anchor,
                messages,
            } => EventData::ResolveModelContext {
                step,
                anchor,
                messages,
            },
            EventKind::PrepareModelStep {
                step,
                route,
                messages,
            } => EventData::PrepareModelStep {
                step,
                route: (&route).into(),
                messages,
            },
            EventKind::ModelCall {
                step,
                attempt,
                route,
                context,
                overlay,
                messages,
                tools,
                timeout_ms,
            } => EventData::AroundModelCall {
                step,
                attempt,
                route: (&route).into(),
                context,
                overlay,
                messages,
                tools,
                timeout_ms,
            },
            EventKind::AttemptFailed {
                step,
                attempt,
                error,
            } => EventData::AttemptFailed {
                step,
                attempt,
                error,
            },
            EventKind::Stream {
                step,
                deltas,
                chars,
                tool_calls,
                finish,
                error,
                aborted,
            } => EventData::Stream {
                step,
                deltas,
                chars,
                tool_calls,
                finish: finish.map(FinishName::from),
                error,
                aborted,
            },
            EventKind::CommitStep {
                step,
                message,
                version,
            } => EventData::CommitStep {
                step,
                message,
                version,
            },
            EventKind::BeforeToolCall {
                step,
                call_id,
                tool,
                decision,
            } => EventData::BeforeToolCall {
                step,
                call_id,
                tool,
                decision: (&decision).into(),
            },
            EventKind::ToolStart {
                step,
                call_id,
                tool,
                input,
                idempotency_key,
            } => EventData::ToolStart {
                step,
                call_id,
                tool,
                input,
                idempotency_key,
            },
            EventKind::OnOutput {
                step,
                call_id,
                tool,
                input,
                version,
            } => EventData::OnOutput {
                step,
                call_id,
                tool,
                input,
                version,
            },
            EventKind::RunMetadata { version } => EventData::RunMetadata { version },
            EventKind::ContextMessage { message, version } => {
                EventData::ContextMessage { message, version }
            }
            EventKind::Waiting { calls, version } => EventData::Wait { calls, version },
            EventKind::Awaiting { calls, version } => EventData::Awaiting { calls, version },
            EventKind::CancelRequested { version } => EventData::CancelRequested { version },
            EventKind::Answered {
                call_id,
                answer,
                version,
            } => EventData::Answer {
                call_id,
                answer: (&answer).into(),
                version,
            },
            EventKind::ToolEnd {
                step,
                result,
                detail,
            } => EventData::ToolEnd {
                step,
                result: (&result).into(),
                detail,
            },
            EventKind::AfterToolResult {
                step,
                call_id,
                decision,
            } => EventData::AfterToolResult {
                step,
                call_id,
                decision: (&decision).into(),
            },
            EventKind::CommitToolResults {
                step,
                message,
                version,
            } => EventData::CommitToolResults {
                step,
                message,
                version,
            },
            EventKind::AfterStep {
                step,
                decision,
                transition,
            } => EventData::AfterStep {
                step,
                decision: decision.into(),
                transition: (&transition).into(),
            },
            EventKind::Cancelled { phase } => EventData::Cancelled {
                phase: phase.as_str().to_string(),
            },
            EventKind::Failed { phase, message } => EventData::Failed {
                phase: phase.as_str().to_string(),
                message,
            },
            EventKind::LeaseReleased { episode } => EventData::LeaseReleased { episode },
            EventKind::Ended {
                status,
                outcome,
                reason,
                version,
            } => EventData::End {
                status: status.into(),
                outcome: outcome.into(),
                reason,
                version,
            },
            EventKind::Mutated { .. }
            | EventKind::MutationRefused { .. }
            | EventKind::HistoryRewritten { .. }
            | EventKind::RewriteDelivered { .. }
            | EventKind::ThreadDeleted { .. }
            | EventKind::ThreadCreated { .. }
            | EventKind::CompactionStarted { .. }
            | EventKind::Compacted { .. }
            | EventKind::CompactionSkipped { .. } => facade(
                kind,
                FacadeData::of(kind).unwrap_or(FacadeData::Created { incarnation: 0 }),
            ),
        }
    }
}

/// A facade event's variant, by its kind.
fn facade(kind: &EventKind, f: FacadeData) -> EventData {
    match kind {
        EventKind::Mutated { .. } => EventData::Mutated(f),
        EventKind::MutationRefused { .. } => EventData::MutationRefused(f),
        EventKind::HistoryRewritten { .. } => EventData::HistoryRewritten(f),
        EventKind::RewriteDelivered { .. } => EventData::RewriteDelivered(f),
        EventKind::ThreadDeleted { .. } => EventData::ThreadDeleted(f),
        EventKind::ThreadCreated { .. } => EventData::ThreadCreated(f),
        EventKind::CompactionStarted { .. } => EventData::CompactionStarted(f),
        EventKind::Compacted { .. } => EventData::Compacted(f),
        _ => EventData::CompactionSkipped(f),
    }
}
