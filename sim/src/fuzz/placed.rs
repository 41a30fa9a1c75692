//! Timeline entries placed after a moment of a run (issue 38): an answer
//! after its run waits, a cancel or a delete after a step commits or a run
//! ends, a steer after a wait. In a case with runtime faults an entry
//! placed at a time lands wherever the faults left the runs, and the
//! fault-free twin cannot judge it (`crate::twin`); placed after a moment,
//! it lands at the same point of the run in both. So cases among workers
//! with faults move most of their entries to moments; other cases move a
//! few, so that the placement itself is tested everywhere.
//!
//! Drawn from its own stream of the seed, after the other generators.

use std::collections::BTreeMap;

use super::draw::{Features, Gen};
use crate::scenario::{AfterEvent, AfterSpec, ScenarioSpec, TimelineEntry};

/// A stream of the seed's rng apart from the other generators'.
const STREAM: u64 = 0x9a1c_ed0f_7e11_0038;

/// Moves some of the case's entries to moments of its runs.
pub(super) fn placed(seed: u64, features: Features, spec: &mut ScenarioSpec) {
    let mut g = Gen::new(seed ^ STREAM, features);
    let faulted = !spec.faults.is_empty() && !spec.workers.is_empty();
    let share = if faulted { 100 } else { 15 };
    let max_steps = spec.agent.max_steps.max(1);
    // In play order: an entry placed after a moment keeps its place
    // behind the entry before it.
    spec.timeline.sort_by_key(|e| e.at);
    let mut sends: BTreeMap<String, usize> = BTreeMap::new();
    for e in &mut spec.timeline {
        let sent = sends.get(&e.thread).copied().unwrap_or(0);
        if faulted && sent == 0 && e.steer.is_some() {
            // A steer that finds no run is a send: made one, the entries
            // after it can be placed after its run's moments.
            e.send = e.steer.take();
        }
        if e.send.is_some() {
            *sends.entry(e.thread.clone()).or_default() += 1;
        }
        if sent == 0 || e.watch.is_some() || e.after.is_some() || !g.chance(share) {
            continue;
        }
        // Mostly the thread's latest run, now and then an earlier one.
        let run = match g.chance(75) {
            true => sent,
            false => g.range(1, sent as u64) as usize,
        };
        if let Some(after) = moment(&mut g, e, run, max_steps) {
            e.after = Some(after);
            e.at = 0;
        }
    }
}

/// The moment entry `e` waits for, by its action: what lands alike in a
/// run and its fault-free twin (an answer or a steer after a wait; a
/// cancel or a delete anywhere, its lateness allowed), now and then what
/// does not (a steer after a step), so misses stay tested too.
fn moment(g: &mut Gen, e: &TimelineEntry, run: usize, max_steps: u32) -> Option<AfterSpec> {
    let answer = e.approve.is_some() || e.deny.is_some() || e.submit_result.is_some();
    let at = |event, step: Option<u32>| AfterSpec {
        run,
        event,
        step,
        nth: None,
    };
    let step = |g: &mut Gen| Some(g.range(0, u64::from(max_steps) - 1) as u32);
    Some(if answer || e.expect_waiting.is_some() {
        at(AfterEvent::Wait, None)
    } else if e.steer.is_some() {
        match g.chance(90) {
            true => at(AfterEvent::Wait, None),
            false => at(AfterEvent::CommitStep, step(g)),
        }
    } else if !e.cancel.is_none() || e.delete_thread {
        match g.index(3) {
            0 => at(AfterEvent::End, None),
            1 => at(AfterEvent::Wait, None),
            _ => at(AfterEvent::CommitStep, Some(0)),
        }
    } else if e.send.is_some() {
        // Mostly after an end, which comes unless the run waits for good: a
        // send that never comes leaves the entries placed after its run's
        // moments undone too.
        match g.chance(80) {
            true => at(AfterEvent::End, None),
            false => at(AfterEvent::CommitStep, Some(0)),
        }
    } else if e.read_thread || e.mutate.is_some() {
        at(AfterEvent::Wait, None)
    } else {
        return None;
    })
}
