//! Where features cross (issue 25): each counter says a case reached a
//! meeting of two features that the oracles judge there. Counted from the
//! event log alone, like the rest of the coverage.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    Event,
    event::EventKind,
    store::RunStatus,
    text::{Pattern, matches_any},
};

use crate::hooks::HookSpec;
use crate::scenario::{ScenarioSpec, TimelineEntry};

/// The crossings one case reached (each at most once per case).
pub fn reached(events: &[Event]) -> BTreeSet<&'static str> {
    let mut c = Crossings {
        workers: events.iter().any(|e| e.worker.is_some()),
        ..Crossings::default()
    };
    for e in events {
        c.run_event(e);
        c.thread_event(e);
        track_queue(&mut c.queued, e);
        track_summaries(&mut c.summarizing, e);
        let (thread, run) = (e.thread_id.as_str(), e.run_id.as_str());
        if let EventKind::Ended { .. } = e.kind
            && c.waiting.get(thread) == Some(&run)
        {
            c.waiting.remove(thread);
        }
    }
    c.hit
}

/// What the walk through a case's log remembers, and the crossings hit.
#[derive(Default)]
struct Crossings<'a> {
    hit: BTreeSet<&'static str>,
    /// Whether several workers drove the case.
    workers: bool,
    // thread → its run that waits now (from `wait` to its next lease or end)
    waiting: BTreeMap<&'a str, &'a str>,
    // runs that registered answerable calls and have not waited since
    awaiting: BTreeSet<&'a str>,
    // runs a cancel reached, and runs admitted behind a waiting run
    cancelled: BTreeSet<&'a str>,
    behind_waiting: BTreeSet<&'a str>,
    claimed: BTreeSet<&'a str>,
    deleted: BTreeSet<&'a str>,
    queued: BTreeMap<&'a str, BTreeSet<&'a str>>,
    // runs giving answerable calls up (A3), from their after_step's time
    giving_up: BTreeMap<&'a str, u64>,
    // runs whose own mutation just conflicted (before its hook's decision)
    conflicted: BTreeSet<&'a str>,
    // thread → its run whose compaction's summary is being produced
    summarizing: BTreeMap<&'a str, &'a str>,
    // (run, call) of the tools started and not ended yet
    running: BTreeSet<(&'a str, &'a str)>,
    // run → steers stored while it waited; once it resumed, by thread
    steered_waiting: BTreeMap<&'a str, Vec<&'a str>>,
    resumed_steers: BTreeSet<(&'a str, &'a str)>,
    // the run a regeneration just started, by thread
    regenerated: BTreeMap<&'a str, &'a str>,
}

impl<'a> Crossings<'a> {
    /// A run's own events: waits, answers, leases, cancels and hand-overs.
    fn run_event(&mut self, e: &'a Event) {
        let (thread, run) = (e.thread_id.as_str(), e.run_id.as_str());
        match &e.kind {
            EventKind::Waiting { .. } => {
                self.waiting.insert(thread, run);
                self.awaiting.remove(run);
            }
            EventKind::Awaiting { .. } => {
                self.awaiting.insert(run);
            }
            EventKind::LeaseAcquired { .. } => {
                self.claimed.insert(run);
                if self.waiting.get(thread) == Some(&run) {
                    self.waiting.remove(thread);
                }
                for steer in self.steered_waiting.remove(run).unwrap_or_default() {
                    self.resumed_steers.insert((thread, steer));
                }
            }
            EventKind::Steered { message } if self.waiting.get(thread) == Some(&run) => {
                self.hit.insert("cross.steer_while_waiting");
                self.steered_waiting.entry(run).or_default().push(message);
            }
            EventKind::Answered { .. } if self.awaiting.contains(run) => {
                self.hit.insert("cross.answer_before_wait");
            }
            EventKind::AfterStep { transition, .. }
                if self.awaiting.contains(run)
                    && *transition != pai_runtime::event::Transition::Wait =>
            {
                self.giving_up.insert(run, e.at);
            }
            EventKind::CommitToolResults { .. }
                if self.giving_up.remove(run).is_some_and(|from| e.at > from) =>
            {
                self.hit.insert("cross.give_up_window");
            }
            EventKind::Admitted { trigger } if self.regenerated.get(thread) == Some(&run) => {
                self.regenerated.remove(thread);
                if self.resumed_steers.contains(&(thread, trigger.as_str())) {
                    self.hit.insert("cross.regenerate_resumed_steer");
                }
            }
            EventKind::Admitted { .. } if self.waiting.contains_key(thread) => {
                self.behind_waiting.insert(run);
            }
            EventKind::ToolStart { call_id, .. } => {
                self.running.insert((run, call_id));
            }
            EventKind::ToolEnd { result, .. } => {
                self.running.remove(&(run, result.call_id.as_str()));
            }
            EventKind::CancelRequested { .. } => {
                self.cancelled.insert(run);
                // In the store's order (client writes are placed where the
                // store applied them), while one of the run's tools ran.
                if self.workers && self.running.iter().any(|(r, _)| *r == run) {
                    self.hit
                        .insert("cross.cancel_while_a_tool_runs_among_workers");
                }
            }
            EventKind::TakenOver { .. } if self.cancelled.contains(run) => {
                self.hit.insert("cross.cancel_while_cut_off");
            }
            EventKind::Ended {
                status: RunStatus::Cancelled,
                ..
            } if self.behind_waiting.contains(run) && !self.claimed.contains(run) => {
                self.hit.insert("cross.queued_cancel_behind_waiting");
            }
            _ => {}
        }
    }

    /// The thread's events: deletions, mutations and their hooks, compaction.
    fn thread_event(&mut self, e: &'a Event) {
        let (thread, run) = (e.thread_id.as_str(), e.run_id.as_str());
        match &e.kind {
            EventKind::HistoryRewritten {
                kind: "regenerate",
                started: Some(started),
                ..
            } => {
                self.regenerated.insert(thread, started);
            }
            EventKind::ThreadDeleted {
                cancelled: runs, ..
            } => {
                self.deleted.insert(thread);
                if self.workers && !runs.is_empty() {
                    self.hit.insert("cross.delete_among_workers");
                }
            }
            EventKind::Mutated { .. }
                if run.is_empty() && self.summarizing.contains_key(thread) =>
            {
                self.hit.insert("cross.slow_summary");
            }
            EventKind::MutationRefused { conflict: true, .. } if !run.is_empty() => {
                self.conflicted.insert(run);
            }
            EventKind::Hook(n)
                if self.conflicted.remove(run) && n.hook.starts_with("mutate_thread") =>
            {
                self.hit.insert("cross.hook_expectation");
            }
            EventKind::MutationRefused { reason, .. }
                if run.is_empty() && reason.ends_with("was deleted") =>
            {
                self.hit.insert("cross.bound_handle_after_delete");
            }
            EventKind::Mutated { .. } | EventKind::MutationRefused { .. }
                if run.is_empty() && self.deleted.contains(thread) =>
            {
                self.hit.insert("cross.expect_across_incarnation");
            }
            EventKind::CompactionStarted { .. }
                if self
                    .queued
                    .get(thread)
                    .is_some_and(|q| q.iter().any(|r| *r != run)) =>
            {
                self.hit.insert("cross.compaction_behind_queue");
            }
            _ => {}
        }
    }
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

/// `cross.answer_after_cancel`: an answer came on a thread after a cancel
/// reached a run there that had made calls answerable (`awaiting` or
/// `wait`) and had not ended yet, so the answer met a run asked to cancel
/// (SPEC T8, T9: the store must refuse it and change nothing).
pub fn answer_after_cancel(spec: &ScenarioSpec, events: &[Event]) -> bool {
    let of = |run: &str, at: u64, kind: fn(&EventKind) -> bool| {
        events
            .iter()
            .any(|e| e.run_id == run && e.at <= at && kind(&e.kind))
    };
    let answerable =
        |k: &EventKind| matches!(k, EventKind::Awaiting { .. } | EventKind::Waiting { .. });
    let ended = |k: &EventKind| matches!(k, EventKind::Ended { .. });
    let met = |t: &TimelineEntry| {
        events.iter().any(|e| {
            matches!(e.kind, EventKind::CancelRequested { .. })
                && e.thread_id == t.thread
                && e.at <= t.at
                && of(&e.run_id, t.at, answerable)
                && !of(&e.run_id, t.at, ended)
        })
    };
    spec.timeline.iter().any(|t| answers(t) && met(t))
}

fn answers(t: &TimelineEntry) -> bool {
    t.approve.is_some() || t.deny.is_some() || t.submit_result.is_some()
}

fn by_id(t: &TimelineEntry) -> bool {
    t.approve.as_ref().is_some_and(|c| c.call.is_some())
        || t.deny.as_ref().is_some_and(|c| c.call.is_some())
        || t.submit_result.as_ref().is_some_and(|c| c.call.is_some())
}

/// `cross.fault_near_a_deleted_compaction`: among workers, a fault was
/// carried out on a worker while its run's compaction read the thread,
/// produced the summary or wrote it (from the worker's last event before
/// `compaction_started` to its first event after the compaction ended),
/// and the thread was deleted from that read on (SPEC H5, C1). `raw` is
/// every worker's log; `faults` each fault's worker and the number of
/// events logged when it was carried out.
pub fn fault_near_a_deleted_compaction(raw: &[Event], faults: &[(&str, usize)]) -> bool {
    raw.iter().enumerate().any(|(s, e)| {
        let (EventKind::CompactionStarted { .. }, Some(worker)) = (&e.kind, e.worker.as_deref())
        else {
            return false;
        };
        let own = |x: &Event| x.worker.as_deref() == Some(worker) && x.run_id == e.run_id;
        let from = raw[..s].iter().rposition(own).unwrap_or(s);
        let ended = raw[s..].iter().position(|x| {
            own(x)
                && matches!(
                    x.kind,
                    EventKind::Compacted { .. } | EventKind::CompactionSkipped { .. }
                )
        });
        let until = match ended {
            Some(k) => {
                let after = raw[s + k + 1..].iter().position(own);
                s + k + 1 + after.unwrap_or(0)
            }
            None => raw.len(),
        };
        let faulted = faults
            .iter()
            .any(|(w, at)| *w == worker && (from..=until).contains(at));
        let deleted = raw[from..].iter().any(|x| {
            x.thread_id == e.thread_id && matches!(x.kind, EventKind::ThreadDeleted { .. })
        });
        faulted && deleted
    })
}

/// `cross.hook_write_cut_off`: a hook's run-metadata write about a result
/// was staged (an `on_output` that changed it, or an `after_tool_result`
/// hook's write) and the run was taken over before that batch's results
/// were committed: the write must be lost with the result, and the
/// taker's re-run counted once (SPEC K5).
pub fn hook_write_cut_off(events: &[Event]) -> bool {
    let mut staged: BTreeSet<&str> = BTreeSet::new();
    for e in events {
        let run = e.run_id.as_str();
        match &e.kind {
            EventKind::OnOutput { changed: true, .. }
            | EventKind::RunMetadata { version: None } => {
                staged.insert(run);
            }
            EventKind::CommitToolResults { .. } | EventKind::LeaseAcquired { .. } => {
                staged.remove(run);
            }
            EventKind::TakenOver { .. } if staged.contains(run) => return true,
            _ => {}
        }
    }
    false
}

/// `cross.summary_redacted`: a compaction committed a summary in a case
/// whose canonical redactor masks a secret the summaries repeat (SPEC
/// C3); the second is `cross.summary_redacted_cut_off`: a run that
/// compacted was also taken over by another worker.
pub fn summary_redacted(spec: &ScenarioSpec, events: &[Event]) -> (bool, bool) {
    let patterns: Vec<Pattern> = spec
        .lifecycle
        .iter()
        .filter_map(|h| match h.library()? {
            HookSpec::Redact(r) => Some(r.patterns.iter().map(|p| p.pattern().clone())),
            _ => None,
        })
        .flatten()
        .collect();
    let masked = spec.lifecycle.iter().any(|h| match h.library() {
        Some(HookSpec::Compaction(c)) => c.summaries.iter().any(|s| matches_any(s, &patterns)),
        _ => false,
    });
    if !masked {
        return (false, false);
    }
    let compacted: BTreeSet<&str> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Compacted { .. }))
        .map(|e| e.run_id.as_str())
        .collect();
    let taken = events.iter().any(|e| {
        matches!(e.kind, EventKind::TakenOver { .. }) && compacted.contains(e.run_id.as_str())
    });
    (!compacted.is_empty(), taken)
}
