//! SPEC K5, sharpened: what hooks write about a tool result (an
//! `on_output` handler's or an `after_tool_result` hook's run metadata)
//! commits in the same write as that result, so a result that is never
//! committed leaves no trace of it and a call run again after a crash
//! counts once. Judged two ways:
//!
//! - **By the counts the store kept.** A run-metadata key that only
//!   counting writers touch (one tool's `on_output` `count`, or one
//!   `patch_metadata` counting in `after_tool_result`) must, in the stored
//!   thread, equal the committed results it counts: that tool's successful
//!   outputs, or every result, of the run. A count above them is a hook's
//!   write about a result that was never committed (or committed apart
//!   from it and counted again on a re-run); one below is a result whose
//!   hooks' write was lost. Left aside: keys any other writer touches
//!   (`set_metadata` replaces the whole metadata, so a scenario with one is
//!   not judged), scenarios with registered hooks, and threads a
//!   regeneration cut (their results are gone; the counts stay).
//! - **By the run's log.** Once a result is there (`tool_end`) and until
//!   the results' `commit_tool_results`, only its hooks run
//!   (`on_output`, `after_tool_result`): a run-metadata write that reports
//!   a commit of its own there is committed apart from the result; and a
//!   results commit that follows a staged write must say it carried the
//!   metadata. A new episode, a lost lease or a run's end abandons what
//!   was staged.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    Event, Part, Role, event::EventKind, hook::Phase, message::ToolStatus, store::StoredThread,
};
use serde_json::Value;

use super::observed::{Observed, Violation};
use crate::hooks::{HookSpec, MetadataPhase};
use crate::scenario::{OracleId, Scenario};

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = committed_apart(o.events);
    let counted = counted_keys(o.scenario);
    if counted.is_empty() {
        return out;
    }
    let regenerated = regenerated(o.events);
    for t in o
        .threads
        .iter()
        .filter(|t| !regenerated.contains(t.id.as_str()))
    {
        out.extend(counts(t, &counted));
    }
    out
}

/// What a counted key of the run metadata counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counts<'a> {
    /// The successful outputs of this tool (its `on_output` handler).
    Outputs(&'a str),
    /// Every result (`patch_metadata` in `after_tool_result`).
    Results,
}

/// Who writes a run-metadata key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writer<'a> {
    Counting(Counts<'a>),
    Other,
}

/// The keys only one counting writer touches, with what each counts;
/// none when a hook of the scenario writes run metadata in a way not
/// foreseen here (`set_metadata`, a registered hook).
fn counted_keys<'s>(s: &'s Scenario) -> BTreeMap<&'s str, Counts<'s>> {
    let mut writers: BTreeMap<&'s str, Vec<Writer<'s>>> = BTreeMap::new();
    let mut add = |key: &'s str, w: Writer<'s>| writers.entry(key).or_default().push(w);
    for h in &s.hooks {
        match h.library() {
            None | Some(HookSpec::SetMetadata(_)) => return BTreeMap::new(),
            Some(HookSpec::PatchMetadata(p)) => {
                if let Some(k) = &p.count {
                    let w = match p.phase {
                        MetadataPhase::AfterToolResult => Writer::Counting(Counts::Results),
                        _ => Writer::Other,
                    };
                    add(k, w);
                }
                for k in p.set.keys() {
                    add(k, Writer::Other);
                }
            }
            Some(_) => {}
        }
    }
    for t in &s.agent.tools {
        let Some(spec) = &t.on_output else { continue };
        if let Some(k) = &spec.count {
            add(k, Writer::Counting(Counts::Outputs(&t.name)));
        }
        if let Some(k) = &spec.keep {
            add(k, Writer::Other);
        }
    }
    writers
        .into_iter()
        .filter_map(|(k, ws)| match ws.as_slice() {
            [Writer::Counting(c)] => Some((k, *c)),
            _ => None,
        })
        .collect()
}

/// Threads a regeneration cut: their runs' committed results may be gone.
fn regenerated(events: &[Event]) -> BTreeSet<&str> {
    events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::HistoryRewritten {
                    kind: "regenerate",
                    ..
                }
            )
        })
        .map(|e| e.thread_id.as_str())
        .collect()
}

/// Each run of `t` whose counted key differs from the results it counts.
fn counts(t: &StoredThread, counted: &BTreeMap<&str, Counts<'_>>) -> Vec<Violation> {
    let mut out = Vec::new();
    for r in &t.runs {
        let results: Vec<(&str, ToolStatus)> = t
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool && m.pai.run_id.as_deref() == Some(&*r.id))
            .flat_map(|m| &m.parts)
            .filter_map(|p| match p {
                Part::ToolResult { tool, status, .. } => Some((tool.as_str(), *status)),
                _ => None,
            })
            .collect();
        for (key, what) in counted {
            let want = results
                .iter()
                .filter(|(tool, status)| match what {
                    Counts::Outputs(name) => tool == name && *status == ToolStatus::Output,
                    Counts::Results => true,
                })
                .count() as u64;
            let said = r
                .metadata
                .as_ref()
                .and_then(|m| m.get(*key))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            if said != want {
                let counted = match what {
                    Counts::Outputs(name) => format!("successful output(s) of {name}"),
                    Counts::Results => "tool result(s)".to_string(),
                };
                let message = format!(
                    "run metadata {key:?} of thread {} says {said}, but the thread holds {want} committed {counted} of the run: a hook's write about a result must commit with it",
                    t.id
                );
                out.push(Violation::new(OracleId::K5, Some(&r.id), message));
            }
        }
    }
    out
}

/// Per run: whether its results are being produced (a result's hooks ran
/// since its last results commit), and whether a write was staged then.
#[derive(Debug, Default, Clone, Copy)]
struct Batch {
    open: bool,
    staged: bool,
}

/// Run-metadata writes of a result's hooks that the log says committed
/// apart from the result, and results commits that left staged metadata
/// out.
fn committed_apart(events: &[Event]) -> Vec<Violation> {
    let mut batches: BTreeMap<(&str, &str), Batch> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let key = (e.thread_id.as_str(), e.run_id.as_str());
        let b = batches.entry(key).or_default();
        match &e.kind {
            EventKind::OnOutput { changed, .. } => {
                b.open = true;
                b.staged |= *changed;
            }
            EventKind::ToolEnd { .. } | EventKind::AfterToolResult { .. } => b.open = true,
            EventKind::Hook(n) if n.phase == Phase::AfterToolResult => b.open = true,
            EventKind::RunMetadata { version: None } => b.staged = true,
            EventKind::RunMetadata { version: Some(v) } if b.open => {
                let message = format!(
                    "a hook wrote run metadata at v{v} while tool results were produced, in a commit of its own: what hooks write about a result must commit with it"
                );
                out.push(Violation::new(OracleId::K5, Some(&e.run_id), message));
            }
            EventKind::CommitToolResults {
                message, metadata, ..
            } => {
                if b.staged && !metadata {
                    let message = format!(
                        "results commit {message} left out the run metadata its results' hooks staged"
                    );
                    out.push(Violation::new(OracleId::K5, Some(&e.run_id), message));
                }
                *b = Batch::default();
            }
            EventKind::LeaseAcquired { .. }
            | EventKind::LeaseLost { .. }
            | EventKind::TakenOver { .. }
            | EventKind::Ended { .. } => *b = Batch::default(),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pai_runtime::{
        Message,
        message::{PaiMeta, Producer, ResultSource, Visibility},
        store::{RunRecord, RunStatus},
    };
    use serde_json::json;

    use super::*;
    use crate::oracle::facts::ev;

    fn thread(outputs: usize, metadata: Value) -> StoredThread {
        let part = |_| Part::ToolResult {
            call_id: "c".into(),
            tool: "book".into(),
            status: ToolStatus::Output,
            source: ResultSource::Tool,
            output: Value::Null,
        };
        let message = Message {
            id: "m".into(),
            seq: 1,
            role: Role::Tool,
            parts: (0..outputs).map(part).collect(),
            visibility: Visibility::ALL,
            pai: PaiMeta::new(Producer::Tool, Some("r"), Some(0), 0),
        };
        let run = RunRecord {
            id: "r".into(),
            status: RunStatus::Completed,
            outcome: None,
            reason: None,
            steps: 1,
            trigger: "u".into(),
            episodes: 1,
            metadata: Some(metadata),
            waiting: Vec::new(),
            cancel_requested: false,
            calls_closed: false,
            handed_over: None,
        };
        StoredThread {
            id: "t".into(),
            agent: "a".into(),
            owner: "o".into(),
            incarnation: 1,
            version: 1,
            messages: vec![message],
            metadata: Default::default(),
            private_metadata: Default::default(),
            runs: vec![run],
            lease_holder: None,
            lease_token: 0.into(),
        }
    }

    /// SPEC K5: a count that says two for one committed output is reported;
    /// one that says one is not.
    #[test]
    fn k5_a_count_above_the_committed_results_is_reported() {
        let counted = BTreeMap::from([("bookings", Counts::Outputs("book"))]);
        assert!(counts(&thread(1, json!({"bookings": 1})), &counted).is_empty());
        let v = counts(&thread(1, json!({"bookings": 2})), &counted);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("says 2"), "{}", v[0].message);
        let all = BTreeMap::from([("results", Counts::Results)]);
        assert_eq!(counts(&thread(2, json!({"results": 1})), &all).len(), 1);
    }

    /// SPEC K5: a metadata write committed on its own inside a batch of
    /// results, or a results commit that drops a staged write, is reported.
    #[test]
    fn k5_a_write_committed_apart_from_its_results_is_reported() {
        let output = |changed| {
            ev(EventKind::OnOutput {
                step: 0,
                call_id: "c".into(),
                tool: "book".into(),
                input: Value::Null,
                changed,
            })
        };
        let commit = |metadata| {
            ev(EventKind::CommitToolResults {
                step: 0,
                message: "m".into(),
                version: 3,
                metadata,
            })
        };
        let written = ev(EventKind::RunMetadata { version: Some(2) });
        let staged = ev(EventKind::RunMetadata { version: None });
        assert!(committed_apart(&[output(true), staged.clone(), commit(true)]).is_empty());
        assert!(committed_apart(&[written.clone(), output(false), commit(false)]).is_empty());
        assert_eq!(
            committed_apart(&[output(false), written, commit(false)]).len(),
            1
        );
        assert_eq!(committed_apart(&[output(true), commit(false)]).len(), 1);
    }
}
