//! SPEC L4: a hook that fails (returns an error or panics) fails its run:
//! the run ends failed with the hook's message, the hooks after it in that
//! phase do not run, and nothing the run had not committed is stored.

use std::collections::BTreeSet;

use pai_runtime::{
    Event,
    event::EventKind,
    hook::{NoteDecision, RunDecision, ToolCallDecision},
    store::RunStatus,
};

use super::facts::{committed_message, handlers, invocations};
use super::observed::{Observed, Violation};
use crate::hooks::HookSpec;
use crate::scenario::OracleId;
use crate::world::ClusterEvent;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = ended_failed(o);
    out.extend(reached_failures_fail(o));
    out.extend(later_hooks_skipped(o));
    out.extend(nothing_uncommitted_stored(o));
    out
}

/// Each failed run ends failed, with the failure's message as its reason;
/// among workers, unless its driver lost the lease before the end was
/// stored (the failure was never committed: the run goes on elsewhere, K3).
fn ended_failed(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    for (i, e) in o.events.iter().enumerate() {
        let EventKind::Failed { message, .. } = &e.kind else {
            continue;
        };
        let end = o.events[i..].iter().find_map(|x| match &x.kind {
            _ if x.run_id != e.run_id => None,
            EventKind::Ended { status, reason, .. } => Some(Some((*status, reason))),
            EventKind::LeaseLost { .. } | EventKind::TakenOver { .. } => Some(None),
            _ => None,
        });
        let ok = match end {
            Some(None) => true,
            Some(Some((s, r))) => s == RunStatus::Failed && r.as_deref() == Some(message),
            None => false,
        };
        if !ok {
            let message = format!("the run failed with {message:?} but did not end failed with it");
            out.push(Violation::new(OracleId::L4, Some(&e.run_id), message));
        }
    }
    out
}

/// The step a phase's own event names, if it names one.
fn step_of(kind: &EventKind) -> Option<u32> {
    match kind {
        EventKind::PrepareModelStep { step, .. }
        | EventKind::BeforeToolCall { step, .. }
        | EventKind::AfterToolResult { step, .. }
        | EventKind::AfterStep { step, .. } => Some(*step),
        _ => None,
    }
}

/// A scenario's failing hook that a phase invocation reached (every hook
/// before it decided, none stopping the chain) ends that invocation failed:
/// the run never goes on past it.
fn reached_failures_fail(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    for inv in invocations(o.events) {
        if matches!(
            inv.end.kind,
            EventKind::Failed { .. } | EventKind::Cancelled { .. }
        ) {
            continue;
        }
        let all = handlers(o.scenario, inv.phase);
        let step = step_of(&inv.end.kind);
        for (k, h) in o
            .scenario
            .hooks
            .iter()
            .filter(|h| h.handles(inv.phase))
            .enumerate()
        {
            let Some(HookSpec::Fail(f)) = h.library() else {
                continue;
            };
            let at_step = f.step.is_none_or(|s| step.is_none_or(|t| s == t))
                && (!f.on_resume || in_resumed_episode(o.events, inv.end));
            let before: Vec<&str> = inv.notes.iter().take(k).map(|n| n.hook.as_str()).collect();
            let reached = inv.notes.len() >= k && before == all[..k];
            let stopped = inv.notes.iter().take(k).any(|n| {
                matches!(
                    n.decision,
                    NoteDecision::Run(RunDecision::Respond(_))
                        | NoteDecision::ToolCall(ToolCallDecision::Reject { .. })
                )
            });
            if at_step && reached && !stopped {
                let message = format!(
                    "hook {} fails in {}, was reached, and the run went on",
                    h.name, inv.phase
                );
                out.push(Violation::new(OracleId::L4, Some(&inv.end.run_id), message));
            }
        }
    }
    out
}

/// Whether `end`'s episode resumes its run, judged from the log alone: the
/// run waited (or was taken over) before the claim that began the episode.
fn in_resumed_episode(events: &[Event], end: &Event) -> bool {
    let Some(at) = events.iter().position(|e| std::ptr::eq(e, end)) else {
        return false;
    };
    let of_run = |e: &&Event| e.thread_id == end.thread_id && e.run_id == end.run_id;
    let before = &events[..at];
    let Some(claim) = before
        .iter()
        .rposition(|e| of_run(&e) && matches!(e.kind, EventKind::LeaseAcquired { .. }))
    else {
        return false;
    };
    before[..claim].iter().filter(of_run).any(|e| {
        matches!(
            e.kind,
            EventKind::Waiting { .. } | EventKind::TakenOver { .. }
        )
    })
}

/// In a phase invocation that failed, only the hooks before the failing one
/// reported a decision.
fn later_hooks_skipped(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    for inv in invocations(o.events) {
        if !matches!(inv.end.kind, EventKind::Failed { .. }) {
            continue;
        }
        let names: Vec<&str> = inv.notes.iter().map(|n| n.hook.as_str()).collect();
        let all = handlers(o.scenario, inv.phase);
        if names.len() >= all.len() || all[..names.len()] != names[..] {
            let message = format!(
                "{} failed after hooks {names:?} decided; its hooks are {all:?}",
                inv.phase
            );
            out.push(Violation::new(OracleId::L4, Some(&inv.end.run_id), message));
        }
    }
    out
}

/// Every message stored for a run was committed by a commit the log shows.
fn nothing_uncommitted_stored(o: &Observed<'_>) -> Vec<Violation> {
    let mut committed: BTreeSet<(&str, &str)> = o
        .events
        .iter()
        .filter_map(|e| Some((e.thread_id.as_str(), committed_message(&e.kind)?)))
        .collect();
    // A mutation's messages (SPEC H2) are committed by its one commit.
    for e in o.events {
        if let pai_runtime::event::EventKind::Mutated { appended, .. } = &e.kind {
            committed.extend(appended.iter().map(|m| (e.thread_id.as_str(), m.as_str())));
        }
    }
    // Among workers, a commit whose answer was lost on the way back is in
    // no process's log, but the store applied it.
    for r in o.cluster.into_iter().flat_map(|c| &c.log) {
        if let ClusterEvent::Wrote {
            thread, messages, ..
        } = &r.what
        {
            committed.extend(messages.iter().map(|m| (thread.as_str(), m.as_str())));
        }
    }
    let mut out = Vec::new();
    for t in o.threads {
        for m in &t.messages {
            if !committed.contains(&(t.id.as_str(), m.id.as_str())) {
                let message = format!(
                    "message #{} is stored but no commit in the log made it",
                    m.seq
                );
                out.push(Violation::new(
                    OracleId::L4,
                    m.pai.run_id.as_deref(),
                    message,
                ));
            }
        }
    }
    out
}
