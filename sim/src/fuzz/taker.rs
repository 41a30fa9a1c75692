//! Faults where a worker that takes a run over must settle its last
//! committed step first (SPEC K3, issue 38), and the counters that say a
//! case got there:
//!
//! - **`cross.fault_at_final_commit`**: a worker falters at the commit of
//!   a step without tool calls (its last event is that step's stream): the
//!   committed answer may already end the run.
//! - **`cross.fault_after_step_decision`**: a worker falters after its
//!   `after_step` decided (the hook's note or the step's transition is its
//!   last event) and before the run's end is stored, with a transition that
//!   ends the run (or a hook decision `complete`).
//! - **`cross.renew_before_answered_tool`**: a fault placed at a worker's
//!   renewal fires while a call of its run has its approval recorded and
//!   has not run yet: the renewal that confirms the lease before the
//!   approved call starts (a resumed run, or one answered while its step's
//!   backend tools ran, T9).
//!
//! In half the cases with workers, one fault is placed at the request that
//! instant sends: a step's commit (`append`), the look for a steer or the
//! run's end (`has_steer`, `finish`); or, where the scripts call an
//! approval tool, every worker is cut off at one of its first renewals
//! (background renewals pushed late) and the tool's first call is
//! approved early and often. Drawn from a stream of their own, after the
//! other generators, so the cases they draw stay as they were.

use std::collections::BTreeSet;

use pai_runtime::Event;
use pai_runtime::event::{EventKind, Transition};
use pai_runtime::hook::{AfterStepDecision, NoteDecision, Phase};
use pai_runtime::store::Answer;

use super::draw::{Features, Gen};
use super::tools::waiters;
use crate::report::Report;
use crate::scenario::{CallRef, FaultSpec, RequestAt, ScenarioSpec, TimelineEntry, TurnSpec};
use crate::world::ClusterEvent;

/// A stream of the seed's rng apart from the other generators'.
const STREAM: u64 = 0x7a4e_0e3e_5eed_0038;

/// The counters this module's faults aim at.
pub(super) const KEYS: [&str; 3] = [
    "cross.fault_at_final_commit",
    "cross.fault_after_step_decision",
    "cross.renew_before_answered_tool",
];

/// Adds faults at a taker's crossing to half the cases with workers.
pub(super) fn taker_faults(seed: u64, features: Features, spec: &mut ScenarioSpec) {
    let mut g = Gen::new(seed ^ STREAM, features);
    if spec.workers.is_empty() || !g.chance(50) {
        return;
    }
    let approvals: Vec<(String, usize)> = waiters(spec)
        .into_iter()
        .filter(|w| !w.client)
        .map(|w| (w.name, w.calls))
        .collect();
    if !approvals.is_empty() && g.chance(70) {
        return before_approved(&mut g, spec, &approvals);
    }
    let (request, nth, lost) = match g.chance(50) {
        true => ("append", g.range(1, 3), g.chance(25)),
        false => match g.chance(50) {
            true => ("finish", g.range(1, 2), g.chance(50)),
            false => ("has_steer", g.range(1, 3), false),
        },
    };
    let worker = g.pick(&spec.workers).name.clone();
    let at = RequestAt {
        worker: None,
        request: request.to_string(),
        nth: nth as usize,
        lost,
    };
    let fault = fault(&mut g, spec, worker, at);
    spec.faults.push(fault);
}

/// The renewal before an approved call runs. The case keeps one run (its
/// first send; its watchers) and no other fault; every worker is cut off
/// at its first or second renewal (background renewals pushed late, so
/// those are the ones that confirm a lease before tools start); and the
/// calls of the approval tools are approved soon after the send, again and
/// again (an answer to an answered call is a typed error, T9), so whoever
/// resumes the run, or runs its step, has an approved call to run.
fn before_approved(g: &mut Gen, spec: &mut ScenarioSpec, approvals: &[(String, usize)]) {
    // Other faults would use the renewals up, or cut the run off first.
    spec.faults.clear();
    if let Some(c) = spec.cluster.as_mut() {
        c.renew_ms = Some(c.lease_ms - 1);
    }
    // The first renewal of a worker that resumes a run; the second of one
    // whose step ran a backend tool first (T9).
    let nth = if g.chance(70) { 1 } else { 2 };
    let workers: Vec<String> = spec.workers.iter().map(|w| w.name.clone()).collect();
    for worker in workers {
        let at = RequestAt {
            worker: None,
            request: "renew".to_string(),
            nth,
            lost: false,
        };
        let fault = match g.chance(50) {
            true => FaultSpec::Hold {
                worker,
                at_ms: None,
                at: Some(at),
                release_after_ms: lasting(g, spec),
            },
            false => FaultSpec::Partition {
                worker,
                at_ms: None,
                at: Some(at),
                heal_after_ms: lasting(g, spec),
            },
        };
        spec.faults.push(fault);
    }
    let Some(sent) = spec.timeline.iter().find(|e| e.send.is_some()).cloned() else {
        return;
    };
    // One run to resume, and only these answers to it; its first step
    // asks for approval.
    spec.timeline.retain(|e| e.watch.is_some());
    spec.timeline.push(sent.clone());
    let asks = |t: &TurnSpec| {
        t.tool_calls
            .iter()
            .any(|c| approvals.iter().any(|a| a.0 == c.tool))
    };
    if let Some(i) = spec.model.turns.iter().position(asks) {
        let turn = spec.model.turns.remove(i);
        spec.model.turns.insert(0, turn);
    }
    let mut at = sent.at + g.range(20, 120);
    for _ in 0..g.range(2, 4) {
        for (tool, calls) in approvals {
            for nth in 1..=*calls {
                spec.timeline.push(approve(&sent.thread, at, tool, nth));
            }
        }
        at += g.range(30, 300);
    }
}

/// The approval of call `nth` of `tool` on `thread` at `at`.
fn approve(thread: &str, at: u64, tool: &str, nth: usize) -> TimelineEntry {
    TimelineEntry {
        at,
        thread: thread.to_string(),
        approve: Some(CallRef {
            tool: Some(tool.to_string()),
            nth: Some(nth),
            call: None,
        }),
        ..TimelineEntry::default()
    }
}

/// How long a taker fault lasts: past the lease, so another worker may
/// take the run over.
fn lasting(g: &mut Gen, spec: &ScenarioSpec) -> u64 {
    spec.cluster.as_ref().map_or(300, |c| c.lease_ms) + g.range(50, 800)
}

/// A crash (with a restart), partition, hold or pause of `worker`, at `at`.
fn fault(g: &mut Gen, spec: &ScenarioSpec, worker: String, at: RequestAt) -> FaultSpec {
    let lasts = lasting(g, spec);
    placed(g.index(4), worker, Some(at), lasts, Some(lasts))
}

/// Fault `kind` (0 crash, 1 partition, 2 hold, else pause) of `worker` at
/// `at`, lasting `lasts` ms; a crash restarts after `restart_after_ms`.
pub(super) fn placed(
    kind: usize,
    worker: String,
    at: Option<RequestAt>,
    lasts: u64,
    restart_after_ms: Option<u64>,
) -> FaultSpec {
    match kind {
        0 => FaultSpec::Crash {
            worker,
            at_ms: None,
            at,
            restart_after_ms,
        },
        1 => FaultSpec::Partition {
            worker,
            at_ms: None,
            at,
            heal_after_ms: lasts,
        },
        2 => FaultSpec::Hold {
            worker,
            at_ms: None,
            at,
            release_after_ms: lasts,
        },
        _ => FaultSpec::Pause {
            worker,
            at_ms: None,
            at,
            for_ms: lasts,
        },
    }
}

/// The taker crossings one case among workers reached.
pub(super) fn reached(report: &Report) -> BTreeSet<&'static str> {
    let mut hit = BTreeSet::new();
    let Some(c) = &report.cluster else {
        return hit;
    };
    for r in &c.log {
        let ClusterEvent::Fault {
            action,
            worker,
            placed,
        } = &r.what
        else {
            continue;
        };
        if !matches!(action.as_str(), "crash" | "partition" | "hold" | "pause") {
            continue;
        }
        let before = &c.raw_events[..r.after_event.min(c.raw_events.len())];
        let Some(last) = last_phase_event(before, worker) else {
            continue;
        };
        if final_stream(&last.kind) {
            hit.insert(KEYS[0]);
        }
        if ending_decision(before, last) {
            hit.insert(KEYS[1]);
        }
        let at_renewal = placed.as_deref().is_some_and(|p| p.contains("renew"));
        if at_renewal && approved_not_run(before, &last.run_id) {
            hit.insert(KEYS[2]);
        }
    }
    hit
}

/// `worker`'s last event of a run's phases: lease renewals, which any
/// phase may come with, are passed over.
fn last_phase_event<'a>(events: &'a [Event], worker: &str) -> Option<&'a Event> {
    events.iter().rev().find(|e| {
        e.worker.as_deref() == Some(worker) && !matches!(e.kind, EventKind::LeaseRenewed { .. })
    })
}

/// The stream of a step without tool calls: its commit comes next.
fn final_stream(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Stream {
            tool_calls: 0,
            error: None,
            ..
        }
    )
}

/// `last` is an `after_step` whose transition ends the run, or a hook's
/// `after_step` decision (its transition not yet applied) that completes
/// it or comes after a step without tool calls.
fn ending_decision(events: &[Event], last: &Event) -> bool {
    match &last.kind {
        EventKind::AfterStep { transition, .. } => matches!(
            transition,
            Transition::Complete { .. } | Transition::Aborted { .. }
        ),
        EventKind::Hook(n) if n.phase == Phase::AfterStep => {
            let completes = n.decision == NoteDecision::AfterStep(AfterStepDecision::Complete);
            let stream = events.iter().rev().find(|e| {
                e.worker == last.worker
                    && e.run_id == last.run_id
                    && matches!(e.kind, EventKind::Stream { .. })
            });
            completes || stream.is_some_and(|e| final_stream(&e.kind))
        }
        _ => false,
    }
}

/// Whether a call of `run` has its approval recorded and no tool start or
/// result logged yet.
fn approved_not_run(events: &[Event], run: &str) -> bool {
    events.iter().any(|e| {
        let EventKind::Answered {
            call_id,
            answer: Answer::Approved,
            ..
        } = &e.kind
        else {
            return false;
        };
        e.run_id == run
            && !events.iter().any(|s| match &s.kind {
                EventKind::ToolStart { call_id: c, .. } => c == call_id,
                EventKind::ToolEnd { result, .. } => result.call_id == *call_id,
                _ => false,
            })
    })
}
