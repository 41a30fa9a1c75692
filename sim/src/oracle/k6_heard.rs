//! SPEC K6, its last sentence: once a cancel has reached the store, no
//! step of that run is committed, and no model call or tool of it starts
//! after its holder's next exchange with the store.
//!
//! Judged in the store's order. Among workers, the cancel's version `c` is
//! the one its `cancel_requested` reports; a `commit_step` of the run
//! reporting a version above `c` is a step committed after the cancel. A
//! worker's event of the run that reports a version above `c` (a commit,
//! a renewal, a claim, a wait) is the answer of a request the store
//! applied after the cancel: from that event on, and from its
//! `cancel_learned`, that worker starts no model call (`around_model_call`)
//! and no tool of the run. An exchange whose answer reports no version (a
//! refused write, a read) is not seen here, so this judges less than the
//! rule allows, never more. In one process, where the log's order is the
//! store's, the cancel's place is where the client's cancel returned: no
//! step of the run is committed and no model call starts after it (a tool
//! started after it is `k6`'s to report).

use std::collections::BTreeMap;

use pai_runtime::{Event, event::EventKind};

use super::facts::run_commit_version;
use super::observed::{Observed, Violation};
use crate::scenario::{Action, OracleId};

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    match o.cluster {
        Some(_) => among_workers(o.events),
        None => in_process(o),
    }
}

/// Among workers: from the versions the store reported.
fn among_workers(events: &[Event]) -> Vec<Violation> {
    let mut cancelled: BTreeMap<&str, u64> = BTreeMap::new();
    for e in events {
        if let EventKind::CancelRequested { version } = e.kind {
            let c = cancelled.entry(e.run_id.as_str()).or_insert(version);
            *c = (*c).min(version);
        }
    }
    let mut out = Vec::new();
    for (run, c) in cancelled {
        out.extend(judge_run(events, run, c));
    }
    out
}

/// One run the store took a cancel for at version `c`: the first wrong
/// event, if any.
fn judge_run(events: &[Event], run: &str, c: u64) -> Option<Violation> {
    // worker → the event that told it (reported a version past the cancel).
    let mut told: BTreeMap<Option<&str>, String> = BTreeMap::new();
    for e in events.iter().filter(|e| e.run_id == run) {
        let worker = e.worker.as_deref();
        if let EventKind::CommitStep { step, version, .. } = e.kind
            && version > c
        {
            let message = format!(
                "step {step} committed at v{version}, after the cancel reached the store at v{c}"
            );
            return Some(Violation::new(OracleId::K6, Some(run), message));
        }
        if let Some(how) = told.get(&worker)
            && let Some(what) = started(&e.kind)
        {
            let who = worker.unwrap_or("local");
            let message =
                format!("{what} by {who} after the store told it of the cancel (at v{c}): {how}");
            return Some(Violation::new(OracleId::K6, Some(run), message));
        }
        let heard = match &e.kind {
            EventKind::CancelLearned { request } => Some(format!("cancel_learned at {request}")),
            kind => reported(kind)
                .filter(|v| *v > c)
                .map(|v| format!("{} v{v}", kind.name())),
        };
        if let Some(how) = heard {
            told.entry(worker).or_insert(how);
        }
    }
    None
}

/// What a starting model call or tool is, if `kind` is one.
fn started(kind: &EventKind) -> Option<String> {
    match kind {
        EventKind::ModelCall { step, attempt, .. } => Some(format!(
            "a model call (step {step}, attempt {attempt}) started"
        )),
        EventKind::ToolStart { call_id, .. } => Some(format!("tool call {call_id} started")),
        _ => None,
    }
}

/// The thread version an event of a run reports, if it reports the answer
/// to one of the run's own requests.
fn reported(kind: &EventKind) -> Option<u64> {
    match kind {
        EventKind::LeaseRenewed { version, .. }
        | EventKind::LeaseAcquired { version, .. }
        | EventKind::Awaiting { version, .. }
        | EventKind::Waiting { version, .. } => Some(*version),
        other => run_commit_version(other),
    }
}

/// In one process: no step of a run the client's cancel reached is
/// committed, and no model call of it starts, after the cancel returned.
fn in_process(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    for a in o.actions {
        if !matches!(o.scenario.timeline[a.moment].action, Action::Cancel(_)) {
            continue;
        }
        let Ok(Some(run)) = &a.outcome else {
            continue;
        };
        let after = o.events.iter().skip(a.after_event);
        // A tool started after the cancel is `k6`'s (T8) to report.
        let wrong = after
            .filter(|e| e.run_id == *run)
            .find_map(|e| match &e.kind {
                EventKind::CommitStep { step, .. } => Some(format!("step {step} committed")),
                kind @ EventKind::ModelCall { .. } => started(kind),
                _ => None,
            });
        if let Some(what) = wrong {
            let message = format!("{what} after the cancel at {}ms reached it", a.at);
            out.push(Violation::new(OracleId::K6, Some(run), message));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::facts::ev;

    fn by(worker: &str, kind: EventKind) -> Event {
        Event {
            worker: Some(worker.into()),
            ..ev(kind)
        }
    }

    fn commit(step: u32, version: u64) -> EventKind {
        EventKind::CommitStep {
            step,
            message: "m".into(),
            version,
        }
    }

    fn results(version: u64) -> EventKind {
        EventKind::CommitToolResults {
            step: 0,
            message: "m".into(),
            version,
            metadata: false,
        }
    }

    fn tool_start() -> EventKind {
        EventKind::ToolStart {
            step: 1,
            call_id: "c2".into(),
            tool: "t".into(),
            input: serde_json::Value::Null,
            idempotency_key: "r/c2".into(),
        }
    }

    fn cancel(version: u64) -> Event {
        Event {
            worker: None,
            ..ev(EventKind::CancelRequested { version })
        }
    }

    /// SPEC K6: a step committed after the cancel's version is caught; one
    /// the store took before it, logged after, is not.
    #[test]
    fn k6_a_step_committed_after_the_cancel_is_caught() {
        let late = [cancel(5), by("w1", commit(1, 7))];
        let found = among_workers(&late);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0]
                .message
                .contains("after the cancel reached the store at v5")
        );
        let early = [cancel(5), by("w1", commit(1, 4))];
        assert_eq!(among_workers(&early), vec![]);
    }

    /// SPEC K6: a tool that starts after the holder's exchange told it is
    /// caught; a tool started before, or by another worker, is not.
    #[test]
    fn k6_a_start_after_the_told_exchange_is_caught() {
        let told = [cancel(5), by("w1", results(6)), by("w1", tool_start())];
        let found = among_workers(&told);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].message.contains("commit_tool_results v6"),
            "{found:?}"
        );
        let before = [cancel(5), by("w1", results(4)), by("w1", tool_start())];
        assert_eq!(among_workers(&before), vec![]);
        let other = [cancel(5), by("w1", results(6)), by("w2", tool_start())];
        assert_eq!(among_workers(&other), vec![]);
        let learned = EventKind::CancelLearned {
            request: "has_steer".into(),
        };
        let found = among_workers(&[cancel(5), by("w1", learned), by("w1", tool_start())]);
        assert!(
            found[0].message.contains("cancel_learned at has_steer"),
            "{found:?}"
        );
    }
}
