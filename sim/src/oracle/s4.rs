//! SPEC S4: a step aborted by a canonical transform stores the replacement
//! only (through the canonical stages, L12), as a lifecycle message with the
//! abort's outcome and reason, and asks for no tool.

use std::collections::BTreeMap;

use pai_runtime::{Part, event::EventKind, message::Producer};

use super::facts::stored;
use super::observed::{Observed, Violation};
use super::reference::canonical;
use crate::hooks::HookSpec;
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let messages = stored(o.threads);
    let mut out = Vec::new();
    // Each run's aborted stream, until its step commits (runs of several
    // threads, or workers, interleave in the log).
    let mut aborted: BTreeMap<&str, (u32, &str)> = BTreeMap::new();
    for e in o.events {
        match &e.kind {
            EventKind::Stream {
                step,
                aborted: Some(reason),
                ..
            } => {
                aborted.insert(&e.run_id, (*step, reason));
            }
            // A step its worker lost (K3) is begun again by the next holder.
            EventKind::LeaseLost { .. } | EventKind::TakenOver { .. } => {
                aborted.remove(e.run_id.as_str());
            }
            EventKind::CommitStep { step, message, .. } => {
                let taken = aborted.remove(e.run_id.as_str());
                let Some((s, reason)) = taken.filter(|(s, _)| s == step) else {
                    continue;
                };
                let Some(m) = messages.get(&(e.thread_id.as_str(), message.as_str())) else {
                    continue;
                };
                let mut problems = Vec::new();
                if m.pai.producer != Producer::Lifecycle || m.pai.reason.as_deref() != Some(reason)
                {
                    problems.push(format!("is not a lifecycle message with reason {reason:?}"));
                }
                if m.parts.iter().any(|p| matches!(p, Part::ToolCall { .. })) {
                    problems.push("asks for a tool".to_string());
                }
                if let Some(expected) = replacement(o, reason)
                    && m.text() != expected
                {
                    problems.push(format!(
                        "holds {:?}, not the replacement {expected:?}",
                        m.text()
                    ));
                }
                for p in problems {
                    let message = format!("the aborted step {s}'s message #{} {p}", m.seq);
                    out.push(Violation::new(OracleId::S4, Some(&e.run_id), message));
                }
            }
            _ => {}
        }
    }
    out
}

/// The replacement a scenario's guard with this reason stores, transformed.
fn replacement(o: &Observed<'_>, reason: &str) -> Option<String> {
    o.scenario.hooks.iter().find_map(|h| match h.library()? {
        HookSpec::StreamGuard(g) if g.reason == reason => canonical(o.scenario, &g.replacement),
        _ => None,
    })
}
