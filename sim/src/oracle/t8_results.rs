//! SPEC T8, K3, H5, H6 on the stored thread: every tool call a run
//! committed has exactly one committed result once that run has completed
//! or been cancelled (by the client, by a delete, found cancelled by the
//! worker that took it over, or while it waited). A failed run commits
//! nothing more (L4), so its open calls may stay without one. Never two
//! results for one call, at any time.
//!
//! Judged on each thread as stored at the end, for runs whose end the log
//! shows. Left aside: threads a rewrite removed messages from (a
//! regeneration may drop a result and keep its call, R1), messages whose
//! run the log does not know, and threads deleted since (their messages
//! are gone with their incarnation).

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    Event, Part,
    event::{EventKind, RunStage},
    store::{RunStatus, StoredThread},
};

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    judge(o.events, o.threads)
}

fn judge(events: &[Event], threads: &[StoredThread]) -> Vec<Violation> {
    // A failed run commits nothing more (L4): its open calls stay without
    // a result, which the model view pairs with a stand-in (H6). So does a
    // run ended inside a hook phase (a hook that fails once the run is
    // stopped ends it cancelled there, L4).
    let cut: BTreeSet<&str> = events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Cancelled {
                    phase: RunStage::Phase(_)
                }
            )
        })
        .map(|e| e.run_id.as_str())
        .collect();
    let ended: BTreeSet<&str> = events
        .iter()
        .filter(|e| match e.kind {
            EventKind::Ended { status, .. } => status != RunStatus::Failed,
            _ => false,
        })
        .map(|e| e.run_id.as_str())
        .filter(|r| !cut.contains(r))
        .collect();
    let removed: BTreeSet<&str> = events
        .iter()
        .filter(|e| match &e.kind {
            EventKind::HistoryRewritten { removed, .. } => !removed.is_empty(),
            _ => false,
        })
        .map(|e| e.thread_id.as_str())
        .collect();
    let mut out = Vec::new();
    for t in threads {
        // call id → (run that committed the call, results stored)
        let mut calls: BTreeMap<&str, (Option<&str>, usize)> = BTreeMap::new();
        for m in &t.messages {
            for p in &m.parts {
                match p {
                    Part::ToolCall { call_id, .. } => {
                        calls.entry(call_id).or_default().0 = m.pai.run_id.as_deref();
                    }
                    Part::ToolResult { call_id, .. } => calls.entry(call_id).or_default().1 += 1,
                    Part::Text { .. } => {}
                }
            }
        }
        for (call, (run, results)) in calls {
            let over = run.is_some_and(|r| ended.contains(r)) && !removed.contains(t.id.as_str());
            let problem = match results {
                0 if over => "no result",
                0 | 1 => continue,
                _ => "more than one result",
            };
            let message = format!(
                "call {call} on thread {} has {problem} ({results} stored) after its run ended",
                t.id
            );
            out.push(Violation::new(OracleId::T8, run, message));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pai_runtime::{
        Message, Role,
        message::{PaiMeta, Producer, Visibility},
    };
    use serde_json::json;

    use super::*;
    use crate::oracle::facts::{ev, thread_of};

    fn with(seq: u64, role: Role, part: Part) -> Message {
        Message {
            id: format!("m{seq}").into(),
            seq,
            role,
            parts: vec![part],
            visibility: Visibility::ALL,
            pai: PaiMeta::new(Producer::Model, Some("r"), None, 0),
        }
    }

    fn call(seq: u64) -> Message {
        let part = Part::ToolCall {
            call_id: "c1".into(),
            tool: "t".into(),
            input: json!({}),
        };
        with(seq, Role::Assistant, part)
    }

    fn result(seq: u64) -> Message {
        let part = Part::ToolResult {
            call_id: "c1".into(),
            tool: "t".into(),
            status: pai_runtime::message::ToolStatus::Output,
            source: pai_runtime::message::ResultSource::Tool,
            output: json!(1),
        };
        with(seq, Role::Tool, part)
    }

    fn end() -> Event {
        ev(EventKind::Ended {
            status: RunStatus::Cancelled,
            outcome: pai_runtime::message::Outcome::Cancelled,
            reason: None,
            version: None,
        })
    }

    #[test]
    fn t8_a_call_without_a_result_after_its_run_ended_is_reported() {
        let bare = [thread_of(vec![call(1)])];
        let found = judge(&[end()], &bare);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("no result"), "{found:?}");
        // While the run goes on (or waits), a call may still lack its result.
        assert_eq!(judge(&[], &bare), vec![]);
        let paired = [thread_of(vec![call(1), result(2)])];
        assert_eq!(judge(&[end()], &paired), vec![]);
        let twice = [thread_of(vec![call(1), result(2), result(3)])];
        let found = judge(&[], &twice);
        assert!(found[0].message.contains("more than one"), "{found:?}");
    }
}
