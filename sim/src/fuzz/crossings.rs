//! Where features cross (issue 25): each counter says a case reached a
//! meeting of two features that the oracles judge there. Counted from the
//! event log alone, like the rest of the coverage.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{Event, event::EventKind, store::RunStatus};

use crate::scenario::{ScenarioSpec, TimelineEntry};

/// The crossings one case reached (each at most once per case).
pub fn reached(events: &[Event]) -> BTreeSet<&'static str> {
    let mut hit = BTreeSet::new();
    // thread → its run that waits now (from `wait` to its next lease or end)
    let mut waiting: BTreeMap<&str, &str> = BTreeMap::new();
    // runs that registered answerable calls and have not waited since
    let mut awaiting: BTreeSet<&str> = BTreeSet::new();
    // runs a cancel reached, and runs admitted behind a waiting run
    let mut cancelled: BTreeSet<&str> = BTreeSet::new();
    let mut behind_waiting: BTreeSet<&str> = BTreeSet::new();
    let mut claimed: BTreeSet<&str> = BTreeSet::new();
    let mut deleted: BTreeSet<&str> = BTreeSet::new();
    let mut queued: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    // runs giving answerable calls up (A3), from their after_step's time
    let mut giving_up: BTreeMap<&str, u64> = BTreeMap::new();
    // runs whose own mutation just conflicted (before its hook's decision)
    let mut conflicted: BTreeSet<&str> = BTreeSet::new();
    // thread → its run whose compaction's summary is being produced
    let mut summarizing: BTreeMap<&str, &str> = BTreeMap::new();
    let workers = events.iter().any(|e| e.worker.is_some());
    for e in events {
        let (thread, run) = (e.thread_id.as_str(), e.run_id.as_str());
        match &e.kind {
            EventKind::Waiting { .. } => {
                waiting.insert(thread, run);
                awaiting.remove(run);
            }
            EventKind::Awaiting { .. } => {
                awaiting.insert(run);
            }
            EventKind::LeaseAcquired { .. } => {
                claimed.insert(run);
                if waiting.get(thread) == Some(&run) {
                    waiting.remove(thread);
                }
            }
            EventKind::Steered { .. } if waiting.get(thread) == Some(&run) => {
                hit.insert("cross.steer_while_waiting");
            }
            EventKind::Answered { .. } if awaiting.contains(run) => {
                hit.insert("cross.answer_before_wait");
            }
            EventKind::AfterStep { transition, .. }
                if awaiting.contains(run)
                    && *transition != pai_runtime::event::Transition::Wait =>
            {
                giving_up.insert(run, e.at);
            }
            EventKind::CommitToolResults { .. }
                if giving_up.remove(run).is_some_and(|from| e.at > from) =>
            {
                hit.insert("cross.give_up_window");
            }
            EventKind::Admitted { .. } if waiting.contains_key(thread) => {
                behind_waiting.insert(run);
            }
            EventKind::CancelRequested { .. } => {
                cancelled.insert(run);
            }
            EventKind::TakenOver { .. } if cancelled.contains(run) => {
                hit.insert("cross.cancel_while_cut_off");
            }
            EventKind::ThreadDeleted {
                cancelled: runs, ..
            } => {
                deleted.insert(thread);
                if workers && !runs.is_empty() {
                    hit.insert("cross.delete_among_workers");
                }
            }
            EventKind::Mutated { .. } if run.is_empty() && summarizing.contains_key(thread) => {
                hit.insert("cross.slow_summary");
            }
            EventKind::MutationRefused { conflict: true, .. } if !run.is_empty() => {
                conflicted.insert(run);
            }
            EventKind::Hook(n) if conflicted.remove(run) && n.hook.starts_with("mutate_thread") => {
                hit.insert("cross.hook_expectation");
            }
            EventKind::MutationRefused { reason, .. }
                if run.is_empty() && reason.ends_with("was deleted") =>
            {
                hit.insert("cross.bound_handle_after_delete");
            }
            EventKind::Mutated { .. } | EventKind::MutationRefused { .. }
                if run.is_empty() && deleted.contains(thread) =>
            {
                hit.insert("cross.expect_across_incarnation");
            }
            EventKind::Ended {
                status: RunStatus::Cancelled,
                ..
            } if behind_waiting.contains(run) && !claimed.contains(run) => {
                hit.insert("cross.queued_cancel_behind_waiting");
            }
            EventKind::CompactionStarted { .. }
                if queued
                    .get(thread)
                    .is_some_and(|q| q.iter().any(|r| *r != run)) =>
            {
                hit.insert("cross.compaction_behind_queue");
            }
            _ => {}
        }
        track_queue(&mut queued, e);
        track_summaries(&mut summarizing, e);
        if let EventKind::Ended { .. } = e.kind
            && waiting.get(thread) == Some(&run)
        {
            waiting.remove(thread);
        }
    }
    hit
}

/// Each thread's run whose compaction summary is being produced: from
/// `compaction_started` to its `compacted` or `compaction_skipped`.
fn track_summaries<'a>(summarizing: &mut BTreeMap<&'a str, &'a str>, e: &'a Event) {
    match e.kind {
        EventKind::CompactionStarted { .. } => {
            summarizing.insert(&e.thread_id, &e.run_id);
        }
        EventKind::Compacted { .. }
        | EventKind::CompactionSkipped { .. }
        | EventKind::Ended { .. } => {
            summarizing.remove(e.thread_id.as_str());
        }
        _ => {}
    }
}

/// Each thread's runs admitted and not yet claimed or ended.
fn track_queue<'a>(queued: &mut BTreeMap<&'a str, BTreeSet<&'a str>>, e: &'a Event) {
    let (thread, run) = (e.thread_id.as_str(), e.run_id.as_str());
    match e.kind {
        EventKind::Admitted { .. } => {
            queued.entry(thread).or_default().insert(run);
        }
        EventKind::LeaseAcquired { .. } | EventKind::Ended { .. } => {
            if let Some(q) = queued.get_mut(thread) {
                q.remove(run);
            }
        }
        _ => {}
    }
}

/// `cross.answer_by_call_id`: an answer naming its call by `call` (SPEC
/// T9) came after its thread was deleted or regenerated, so it may name a
/// call of a deleted incarnation or of a message that is gone (H5, R1).
pub fn answer_by_call_id(spec: &ScenarioSpec, events: &[Event]) -> bool {
    let rewritten = |thread: &str, at: u64| {
        events.iter().any(|e| {
            e.thread_id == thread
                && e.at < at
                && matches!(
                    e.kind,
                    EventKind::ThreadDeleted { .. }
                        | EventKind::HistoryRewritten {
                            kind: "regenerate",
                            ..
                        }
                )
        })
    };
    spec.timeline
        .iter()
        .any(|t| by_id(t) && rewritten(&t.thread, t.at))
}

fn by_id(t: &TimelineEntry) -> bool {
    t.approve.as_ref().is_some_and(|c| c.call.is_some())
        || t.deny.as_ref().is_some_and(|c| c.call.is_some())
        || t.submit_result.as_ref().is_some_and(|c| c.call.is_some())
}
