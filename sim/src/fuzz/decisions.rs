//! What each of a harness's hooks decided in a case (issue 39, item 2):
//! the hook notes of the event log (a composition reports each inner
//! hook's decision), read by the hook's registered name, as the kinds of
//! decision that change something: a hook that held no such decision in
//! any case never acted, however many cases held it.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::Event;
use pai_runtime::event::EventKind;
use pai_runtime::hook::{
    AfterStepDecision, AttemptPatch, NoteDecision, RunDecision, StepDecision, ToolCallDecision,
    ToolResultDecision,
};
use pai_runtime::model::Patch;

use crate::scenario::{HookSource, Scenario};

/// The kinds of decision counted, in the report's order.
pub const DECISIONS: &[&str] = &[
    "rejected",
    "replaced",
    "responded",
    "patched",
    "transitioned",
    "transformed",
];

/// Per registered hook name (`use = "..."`), the kinds of decision its
/// hooks made in one run.
pub type Decisions = BTreeMap<String, BTreeSet<&'static str>>;

/// What the registered hooks of `s` decided in the run logged as `events`.
pub(crate) fn decisions(s: &Scenario, events: &[Event]) -> Decisions {
    let registered: BTreeMap<&str, &str> = s
        .hooks
        .iter()
        .filter_map(|h| match &h.source {
            HookSource::User(u) => Some((h.name.as_str(), u.use_name.as_str())),
            HookSource::Library(_) => None,
        })
        .collect();
    let mut out = Decisions::new();
    for e in events {
        let EventKind::Hook(note) = &e.kind else {
            continue;
        };
        let Some(use_name) = registered.get(note.hook.as_str()) else {
            continue;
        };
        if let Some(kind) = kind(&note.decision) {
            out.entry(use_name.to_string()).or_default().insert(kind);
        }
    }
    out
}

/// The kind of a decision that changes something; `None` for one that
/// lets things be (continue with no patch, a natural transition).
fn kind(d: &NoteDecision) -> Option<&'static str> {
    let changed = |p: &Patch| *p != Patch::default();
    match d {
        NoteDecision::Run(RunDecision::Respond(_)) => Some("responded"),
        NoteDecision::Run(RunDecision::Continue(p))
        | NoteDecision::Step(StepDecision::Continue(p))
            if changed(p) =>
        {
            Some("patched")
        }
        NoteDecision::ToolCall(ToolCallDecision::Reject { .. }) => Some("rejected"),
        NoteDecision::ToolCall(ToolCallDecision::ReplaceInput(_))
        | NoteDecision::ToolResult(ToolResultDecision::ReplaceOutput(_)) => Some("replaced"),
        NoteDecision::AfterStep(AfterStepDecision::NextStep | AfterStepDecision::Complete) => {
            Some("transitioned")
        }
        NoteDecision::Next { patch } if *patch != AttemptPatch::default() => Some("patched"),
        NoteDecision::Transform { installed: true } => Some("transformed"),
        _ => None,
    }
}
