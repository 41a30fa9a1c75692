//! SPEC L5, L8, L9, L10, as one check over the sequential phases of a
//! composition: the hooks of each invocation report their decisions in
//! composition order, each once; only a respond (`prepare_run`) or a reject
//! (`before_tool_call`) stops a chain early; the joined decision the runtime
//! acted on is the one the hooks' decisions make.

use pai_runtime::{
    event::EventKind,
    hook::{
        AfterStepDecision, NoteDecision, Phase, RunDecision, ToolCallDecision, ToolResultDecision,
    },
};

use super::facts::{Invocation, handlers, invocations};
use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

/// The rule a phase's composition order belongs to.
pub(super) fn rule(phase: Phase) -> Option<OracleId> {
    match phase {
        Phase::PrepareRun | Phase::PrepareModelStep => Some(OracleId::L5),
        Phase::BeforeToolCall => Some(OracleId::L8),
        Phase::AfterToolResult => Some(OracleId::L9),
        Phase::AfterStep => Some(OracleId::L10),
        _ => None,
    }
}

/// Whether a hook's decision stops its chain.
fn stops(d: &NoteDecision) -> bool {
    matches!(
        d,
        NoteDecision::Run(RunDecision::Respond(_))
            | NoteDecision::ToolCall(ToolCallDecision::Reject { .. })
    )
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    for inv in invocations(o.events) {
        let Some(oracle) = rule(inv.phase) else {
            continue;
        };
        if matches!(
            inv.end.kind,
            EventKind::Failed { .. } | EventKind::Cancelled { .. }
        ) {
            continue; // a failed chain is L4's to judge
        }
        let problem = order(o, &inv).or_else(|| joined(&inv));
        if let Some(p) = problem {
            out.push(Violation::new(
                oracle,
                Some(&inv.end.run_id),
                format!("{}: {p}", inv.phase),
            ));
        }
    }
    out
}

/// The hooks that decided are the phase's hooks in order, up to the first
/// that stopped the chain.
fn order(o: &Observed<'_>, inv: &Invocation<'_>) -> Option<String> {
    let names: Vec<&str> = inv.notes.iter().map(|n| n.hook.as_str()).collect();
    let all = handlers(o.scenario, inv.phase);
    let stop = inv.notes.iter().position(|n| stops(&n.decision));
    let expected = match stop {
        Some(k) => &all[..(k + 1).min(all.len())],
        None => &all[..],
    };
    (names != expected).then(|| format!("hooks {names:?} decided; expected {expected:?}"))
}

/// The decision the runtime acted on is the join of the hooks' decisions.
fn joined(inv: &Invocation<'_>) -> Option<String> {
    let notes = || inv.notes.iter().map(|n| &n.decision);
    match &inv.end.kind {
        EventKind::BeforeToolCall { decision, .. } => {
            let mut want = ToolCallDecision::Continue;
            for d in notes() {
                match d {
                    NoteDecision::ToolCall(r @ ToolCallDecision::Reject { .. }) => {
                        want = r.clone();
                        break;
                    }
                    NoteDecision::ToolCall(r @ ToolCallDecision::ReplaceInput(_)) => {
                        want = r.clone()
                    }
                    _ => {}
                }
            }
            (*decision != want)
                .then(|| format!("acted on {decision:?}; the hooks decided {want:?}"))
        }
        EventKind::AfterToolResult { decision, .. } => {
            let want = notes()
                .rev()
                .find_map(|d| match d {
                    NoteDecision::ToolResult(r @ ToolResultDecision::ReplaceOutput(_)) => {
                        Some(r.clone())
                    }
                    _ => None,
                })
                .unwrap_or(ToolResultDecision::Continue);
            (*decision != want)
                .then(|| format!("acted on {decision:?}; the hooks decided {want:?}"))
        }
        EventKind::AfterStep { decision, .. } => {
            let want = notes()
                .filter_map(|d| match d {
                    NoteDecision::AfterStep(a) => Some(*a),
                    _ => None,
                })
                .max()
                .unwrap_or(AfterStepDecision::Natural);
            (*decision != want)
                .then(|| format!("acted on {decision:?}; the strongest decision was {want:?}"))
        }
        _ => None,
    }
}
