//! SPEC R1 with H6: a cut never separates a kept tool call from its stored
//! result. Two views of one promise:
//!
//! - **At the rewrite.** A regeneration that keeps a step's message (its
//!   tool calls) removes none of that step's committed result messages.
//!   Judged from the log alone: each run's `commit_step` names a step's
//!   message, each `commit_tool_results` a result message of that step;
//!   what a rewrite removed is in its `history_rewritten`.
//! - **In the model's context.** No step is sent the pairing's stand-in
//!   ("The tool call did not complete.", written again here) for a call
//!   whose result was stored, context-visible, before the step began (its
//!   sequence number at or below the step's anchor, M1) and is still
//!   stored: the model reads the result the thread holds. A result whose
//!   visibility a mutation ever changed is left aside (a visibility rewrite
//!   may hide it from the model, and the stand-in then answers its call);
//!   so is every run whose context a registered hook shapes.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::hook::ToolResultDecision;
use pai_runtime::message::ModelContent;
use pai_runtime::{Event, Part, event::EventKind};
use serde_json::Value;

use super::facts::{CONTEXT_PHASES, committed_messages, registered_in};
use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

/// What the runtime answers a call that has no result, as a model reads it.
const STAND_IN: &str = "The tool call did not complete.";

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = cuts(o.events);
    if !registered_in(o.scenario, &CONTEXT_PHASES) {
        out.extend(stand_ins(o));
    }
    out
}

/// A step of a run on a thread: its message and its result messages.
type StepKey<'a> = (&'a str, &'a str, u32);

/// Regenerations that removed a result message of a step whose message
/// (its calls) they kept.
fn cuts(events: &[Event]) -> Vec<Violation> {
    let mut steps: BTreeMap<StepKey<'_>, (Option<&str>, Vec<&str>)> = BTreeMap::new();
    let mut stored: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut out = Vec::new();
    for e in events {
        let (thread, run) = (e.thread_id.as_str(), e.run_id.as_str());
        for id in committed_messages(&e.kind) {
            stored.insert((thread, id));
        }
        match &e.kind {
            EventKind::CommitStep { step, message, .. } => {
                steps.entry((thread, run, *step)).or_default().0 = Some(message);
            }
            EventKind::CommitToolResults { step, message, .. } => {
                steps
                    .entry((thread, run, *step))
                    .or_default()
                    .1
                    .push(message);
            }
            EventKind::ThreadDeleted { .. } => {
                stored.retain(|(t, _)| *t != thread);
                steps.retain(|(t, _, _), _| *t != thread);
            }
            EventKind::HistoryRewritten { removed, .. } => {
                let gone: BTreeSet<&str> = removed.iter().map(|m| m.as_str()).collect();
                for (&(t, run, step), (call, results)) in &steps {
                    let Some(call) = call.filter(|c| t == thread && !gone.contains(c)) else {
                        continue;
                    };
                    if !stored.contains(&(t, call)) {
                        continue;
                    }
                    for r in results.iter().filter(|r| gone.contains(*r)) {
                        let message = format!(
                            "a regeneration removed result message {r} of step {step} while \
                             keeping that step's message {call} (its calls): the model reads \
                             no result for them"
                        );
                        out.push(Violation::new(OracleId::R1Kept, Some(run), message));
                    }
                }
                stored.retain(|(t, m)| *t != thread || !gone.contains(m));
            }
            _ => {}
        }
    }
    out
}

/// Steps sent the stand-in for a call whose result they should have read.
fn stand_ins(o: &Observed<'_>) -> Vec<Violation> {
    let stored = match o.cluster {
        None => ResultsStored::in_log(o.events),
        Some(c) => ResultsStored::by_anchor(o.events.iter().chain(&c.raw_events), o.threads),
    };
    let mut out = Vec::new();
    for c in o.calls {
        let (run, step) = (c.request.run_id.as_str(), c.request.step);
        for part in o.calls.messages(c).iter().flat_map(|m| &m.content) {
            let ModelContent::ToolResult {
                call_id,
                output: Value::String(text),
                is_error: true,
                ..
            } = part
            else {
                continue;
            };
            if text != STAND_IN {
                continue;
            }
            if let Some(result) = stored.before(call_id, run, step) {
                let message = format!(
                    "step {step} read the stand-in \"{STAND_IN}\" for call {call_id}, whose \
                     result {result} was committed before the step began"
                );
                out.push(Violation::new(OracleId::R1Kept, Some(run), message));
            }
        }
    }
    out
}

/// When each call's result was committed, against when each step began.
#[derive(Debug, Default)]
struct ResultsStored<'a> {
    /// Call → its result message and where it was committed.
    results: BTreeMap<&'a str, (&'a str, u64)>,
    /// (run, step) → where the step began (its context's anchor or log
    /// position, whichever the results are placed by).
    began: BTreeMap<(&'a str, u32), u64>,
}

impl<'a> ResultsStored<'a> {
    /// One process: by log position. A call's result is the first
    /// `commit_tool_results` of its run and step after its
    /// `after_tool_result` (T4: every final result passes it); a result a
    /// mutation ever hid or showed again is left aside (the stand-in may
    /// answer a call whose result is hidden from context).
    fn in_log(events: &'a [Event]) -> ResultsStored<'a> {
        let mut r = ResultsStored::default();
        let mut decided: BTreeMap<(&str, u32), Vec<&str>> = BTreeMap::new();
        let mut rewritten: BTreeSet<&str> = BTreeSet::new();
        // A result whose own output reads like the stand-in is not judged.
        let mut alike: BTreeSet<&str> = BTreeSet::new();
        let stand_in = |v: &Value| v.as_str() == Some(STAND_IN);
        for (i, e) in events.iter().enumerate() {
            let run = e.run_id.as_str();
            match &e.kind {
                EventKind::ToolEnd { result, .. } if stand_in(&result.output) => {
                    alike.insert(&result.call_id);
                }
                EventKind::AfterToolResult {
                    step,
                    call_id,
                    decision,
                } => {
                    if matches!(decision, ToolResultDecision::ReplaceOutput(v) if stand_in(v)) {
                        alike.insert(call_id);
                    }
                    decided.entry((run, *step)).or_default().push(call_id);
                }
                EventKind::CommitToolResults { step, message, .. } => {
                    for call in decided.remove(&(run, *step)).unwrap_or_default() {
                        r.results.insert(call, (message, i as u64));
                    }
                }
                EventKind::ResolveModelContext { step, .. } => {
                    r.began.entry((run, *step)).or_insert(i as u64);
                }
                EventKind::Mutated { visibility, .. } => {
                    rewritten.extend(visibility.iter().map(|c| c.message.as_str()));
                }
                _ => {}
            }
        }
        r.results
            .retain(|call, (m, _)| !rewritten.contains(m) && !alike.contains(call));
        r
    }

    /// Among workers, logs interleave out of the store's order: a result
    /// still stored at the end, context-visible and never rewritten, with a
    /// sequence number at or below the step's anchor (the lowest any
    /// worker's attempt at that step took, M1).
    fn by_anchor(
        events: impl Iterator<Item = &'a Event>,
        threads: &'a [pai_runtime::store::StoredThread],
    ) -> ResultsStored<'a> {
        let mut r = ResultsStored::default();
        let mut rewritten: BTreeSet<&str> = BTreeSet::new();
        for e in events {
            match &e.kind {
                EventKind::ResolveModelContext { step, anchor, .. } => {
                    let a = r.began.entry((e.run_id.as_str(), *step)).or_insert(*anchor);
                    *a = (*a).min(*anchor);
                }
                EventKind::Mutated { visibility, .. } => {
                    rewritten.extend(visibility.iter().map(|c| c.message.as_str()));
                }
                _ => {}
            }
        }
        for m in threads.iter().flat_map(|t| &t.messages) {
            if !m.visibility.context || rewritten.contains(m.id.as_str()) {
                continue;
            }
            for p in &m.parts {
                if let Part::ToolResult {
                    call_id, output, ..
                } = p
                    && output.as_str() != Some(STAND_IN)
                {
                    r.results.insert(call_id, (&m.id, m.seq));
                }
            }
        }
        r
    }

    /// The result message of `call`, when it was committed before `run`'s
    /// step `step` began.
    fn before(&self, call: &str, run: &str, step: u32) -> Option<&'a str> {
        let &(message, at) = self.results.get(call)?;
        let began = *self.began.get(&(run, step))?;
        (at <= began).then_some(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::facts::ev;

    fn on(run: &str, kind: EventKind) -> Event {
        let mut e = ev(kind);
        e.run_id = run.into();
        e
    }

    fn step(message: &str) -> EventKind {
        EventKind::CommitStep {
            step: 0,
            message: message.into(),
            version: 1,
        }
    }

    fn results(message: &str) -> EventKind {
        EventKind::CommitToolResults {
            step: 0,
            message: message.into(),
            version: 2,
            metadata: false,
        }
    }

    fn regenerate(removed: &[&str]) -> Event {
        on(
            "",
            EventKind::HistoryRewritten {
                version: 3,
                kind: "regenerate",
                removed: removed.iter().map(|r| r.to_string().into()).collect(),
                patched: vec![],
                started: Some("r2".into()),
            },
        )
    }

    #[test]
    fn r1_kept_reports_a_result_cut_from_its_kept_call() {
        let events = [
            on("r1", step("call")),
            on("r1", results("res")),
            regenerate(&["res"]),
        ];
        let v = cuts(&events);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].message
                .contains("removed result message res of step 0")
        );
        assert_eq!(v[0].oracle, OracleId::R1Kept);
        assert_eq!(v[0].run.as_deref(), Some("r1"));
    }

    #[test]
    fn r1_kept_allows_a_call_removed_with_its_result() {
        let events = [
            on("r1", step("call")),
            on("r1", results("res")),
            regenerate(&["call", "res"]),
        ];
        assert!(cuts(&events).is_empty());
        // A call removed earlier, or a thread deleted, keeps nothing.
        let events = [
            on("r1", step("call")),
            on("r1", results("res")),
            regenerate(&["call"]),
            regenerate(&["res"]),
        ];
        assert!(cuts(&events).is_empty());
        let deleted = ev(EventKind::ThreadDeleted {
            incarnation: 1,
            cancelled: vec![],
        });
        let events = [
            on("r1", step("call")),
            on("r1", results("res")),
            deleted,
            regenerate(&["res"]),
        ];
        assert!(cuts(&events).is_empty());
    }
}
