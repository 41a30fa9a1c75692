//! Facts several oracles derive from the log the same way: stored messages
//! by id, step anchors, and the hook notes of each phase invocation.

use std::collections::BTreeMap;

use pai_runtime::{Event, EventKind, HookNote, Message, Phase, RunStage, StoredThread};

use crate::hooks::HookSpec;
use crate::scenario::Scenario;

/// Stored messages by (thread, message id).
pub(super) fn stored(threads: &[StoredThread]) -> BTreeMap<(&str, &str), &Message> {
    threads
        .iter()
        .flat_map(|t| {
            t.messages
                .iter()
                .map(move |m| ((t.id.as_str(), m.id.as_str()), m))
        })
        .collect()
}

/// The anchor of every step: (run, step) → the newest sequence number it may see.
pub(super) fn anchors(events: &[Event]) -> BTreeMap<(&str, u32), u64> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ResolveModelContext { step, anchor, .. } => {
                Some(((e.run_id.as_str(), *step), *anchor))
            }
            _ => None,
        })
        .collect()
}

/// One invocation of a sequential phase: the hook notes a composition
/// reported, in order, and the event that ended it (the phase's own event,
/// or `failed`/`cancelled`).
#[derive(Debug)]
pub(super) struct Invocation<'a> {
    pub(super) phase: Phase,
    pub(super) notes: Vec<&'a HookNote>,
    pub(super) end: &'a Event,
}

/// Whether a phase's hooks are asked one after another (not an onion).
fn sequential(p: Phase) -> bool {
    !matches!(
        p,
        Phase::ResolveModelContext | Phase::AroundModelCall | Phase::TransformStepStream
    )
}

/// The sequential phase an event closes: its own event, or a failure or
/// cancellation inside it.
fn closes(kind: &EventKind) -> Option<Phase> {
    Some(match kind {
        EventKind::PrepareRun { .. } | EventKind::Respond { .. } => Phase::PrepareRun,
        EventKind::PrepareModelStep { .. } => Phase::PrepareModelStep,
        EventKind::BeforeToolCall { .. } => Phase::BeforeToolCall,
        EventKind::AfterToolResult { .. } => Phase::AfterToolResult,
        EventKind::AfterStep { .. } => Phase::AfterStep,
        EventKind::Failed {
            phase: RunStage::Phase(p),
            ..
        }
        | EventKind::Cancelled {
            phase: RunStage::Phase(p),
        } if sequential(*p) => *p,
        _ => return None,
    })
}

/// Every invocation of a sequential phase (the onions' notes nest and are
/// left out), per run: the notes of that phase since the run's previous
/// event, closed by the phase's event or a failure inside it.
pub(super) fn invocations(events: &[Event]) -> Vec<Invocation<'_>> {
    let mut open: BTreeMap<&str, (Phase, Vec<&HookNote>)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::Hook(n) if sequential(n.phase) => {
                let entry = open
                    .entry(e.run_id.as_str())
                    .or_insert((n.phase, Vec::new()));
                if entry.0 != n.phase {
                    *entry = (n.phase, Vec::new());
                }
                entry.1.push(n);
            }
            EventKind::Hook(_) | EventKind::ContextLeaf { .. } | EventKind::Steered { .. } => {}
            kind => {
                let notes = open.remove(e.run_id.as_str());
                if let Some(phase) = closes(kind) {
                    let notes = notes.filter(|(p, _)| *p == phase).map(|(_, n)| n);
                    out.push(Invocation {
                        phase,
                        notes: notes.unwrap_or_default(),
                        end: e,
                    });
                }
            }
        }
    }
    out
}

/// The names of the scenario's hooks that handle `phase`, in composition order.
pub(super) fn handlers(s: &Scenario, phase: Phase) -> Vec<&str> {
    s.hooks
        .iter()
        .filter(|h| h.spec.phase() == phase)
        .map(|h| h.name.as_str())
        .collect()
}

/// Texts a scenario's hooks write into model context themselves (a base,
/// a replacement, a system message): application messages, not stored ones,
/// so the oracles that match texts to stored messages leave them aside.
pub(super) fn hook_written(s: &Scenario) -> Vec<&str> {
    let mut out = Vec::new();
    for h in &s.hooks {
        match &h.spec {
            HookSpec::BaseContext(b) => out.extend(b.messages.iter().map(|m| m.text.as_str())),
            HookSpec::ReplaceMessages(r) => out.extend(r.messages.iter().map(|m| m.text.as_str())),
            _ => {}
        }
    }
    out
}
