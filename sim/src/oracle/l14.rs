//! SPEC §1, L14: every run's events follow the phase grammar.

use std::collections::BTreeMap;

use pai_runtime::{Event, EventKind, RunStatus};

use super::observed::Violation;
use crate::scenario::OracleId;

/// Where a run is in the phase grammar of SPEC §1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    Admitted,
    Leased,
    /// After prepare_run, or after a step's after_step: a step may begin.
    Ready,
    Responded,
    Resolved,
    Prepared,
    Called,
    AttemptFailed,
    Streamed,
    Committed,
    Policy,
    Tools,
    ToolsCommitted,
    Failed,
    Released,
    Ended,
    /// A violation was reported; later events of the run are not checked.
    Broken,
}

/// SPEC §1: each run's events follow
/// `admit (lease_acquired prepare_run (respond | step*) lease_released)* end`,
/// with no episode only for a run cancelled while queued (K6)
/// (a steering message ends an episode and the next one continues the run),
/// where a step is `resolve_model_context prepare_model_step (around_model_call
/// attempt_failed?)+ stream commit_step tools? after_step` and tools is `before_tool_call+
/// (tool_start | tool_end | after_tool_result)+ commit_tool_results`. A run
/// that fails may stop anywhere inside its episode with `failed`, then
/// releases its lease and ends. Step numbers run 0, 1, 2, ... within a run.
/// Only the first violation of each run is reported.
pub(super) fn check(events: &[Event], cut_short: bool) -> Vec<Violation> {
    let mut runs: BTreeMap<&str, (State, Option<u32>)> = BTreeMap::new();
    let mut out = Vec::new();
    let violation = |run: &str, message: String| Violation {
        oracle: OracleId::L14,
        run: Some(run.to_string()),
        message,
    };
    for e in events {
        if matches!(
            e.kind,
            EventKind::Hook(_) | EventKind::ContextLeaf { .. } | EventKind::Steered { .. }
        ) {
            continue;
        }
        let entry = runs
            .entry(e.run_id.as_str())
            .or_insert((State::Start, None));
        let (state, last_step) = *entry;
        if state == State::Broken {
            continue;
        }
        if let (State::Ready, EventKind::ResolveModelContext { step, .. }) = (state, &e.kind) {
            let expected = last_step.map_or(0, |s| s + 1);
            if *step != expected {
                out.push(violation(
                    &e.run_id,
                    format!("step {step} began, expected step {expected}"),
                ));
            }
            entry.1 = Some(*step);
        }
        entry.0 = next(state, &e.kind).unwrap_or_else(|| {
            let name = e.kind.name();
            out.push(violation(
                &e.run_id,
                format!("unexpected {name} after state {state:?}"),
            ));
            State::Broken
        });
    }
    for (run, (state, _)) in runs {
        // A scenario stopped at its time limit fails as such, not here.
        if !matches!(state, State::Ended | State::Broken) && !cut_short {
            out.push(violation(
                run,
                format!("run never ended (last state {state:?})"),
            ));
        }
    }
    out
}

/// The grammar as a transition table: the state after `kind`, or `None` if
/// the grammar does not allow `kind` here.
fn next(state: State, kind: &EventKind) -> Option<State> {
    use State::*;
    let in_episode = !matches!(state, Start | Admitted | Released | Ended | Failed);
    Some(match (state, kind) {
        (Start, EventKind::Admitted { .. }) => Admitted,
        (Admitted | Released, EventKind::LeaseAcquired { .. }) => Leased,
        (Leased, EventKind::PrepareRun { .. }) => Ready,
        (Leased, EventKind::Respond { .. }) => Responded,
        (Ready, EventKind::ResolveModelContext { .. }) => Resolved,
        (Resolved, EventKind::PrepareModelStep { .. }) => Prepared,
        (Prepared | Called | AttemptFailed, EventKind::ModelCall { .. }) => Called,
        (Called, EventKind::AttemptFailed { .. }) => AttemptFailed,
        (Called, EventKind::Stream { .. }) => Streamed,
        (Streamed, EventKind::CommitStep { .. }) => Committed,
        (Committed | Policy, EventKind::BeforeToolCall { .. }) => Policy,
        (
            Policy | Tools,
            EventKind::ToolStart { .. }
            | EventKind::ToolEnd { .. }
            | EventKind::AfterToolResult { .. },
        ) => Tools,
        (Tools, EventKind::CommitToolResults { .. }) => ToolsCommitted,
        (Committed | ToolsCommitted, EventKind::AfterStep { .. }) => Ready,
        (_, EventKind::Failed { .. } | EventKind::Cancelled { .. }) if in_episode => Failed,
        (Ready | Responded | Failed, EventKind::LeaseReleased { .. }) => Released,
        (Released, EventKind::Ended { .. }) => Ended,
        // A run cancelled while queued ends without an episode (K6).
        (
            Admitted,
            EventKind::Ended {
                status: RunStatus::Cancelled,
                ..
            },
        ) => Ended,
        _ => return None,
    })
}
