//! A regeneration after a resumed run with a steer (issue 38, SPEC R1, M1,
//! T9): on the thread a first send goes to, a steer comes while that run
//! likely waits on an approval or client call, every waiting call is then
//! answered (the run resumes: its `prepare_run` takes the steer before the
//! answered calls' results are stored), and, once the thread is likely
//! quiet, a regeneration from that steer. The cut must keep each result
//! whose call it keeps, stored after the steer though it is (R1-kept);
//! `cross.regenerate_resumed_steer` counts the cases that got there.
//!
//! Drawn from its own stream of the seed, after the other generators, so
//! the cases they draw stay as they were. One process only: rewrites are
//! not generated among workers (see `facade.rs`).

use super::draw::{Features, Gen};
use super::timeline::answer;
use super::tools::waiters;
use crate::scenario::{ScenarioSpec, TimelineEntry};

/// A stream of the seed's rng apart from the other generators'.
const STREAM: u64 = 0x2e57_ee2d_5ee2_0038;

/// Adds the path to some single-process cases whose scripts call waiting
/// tools.
pub(super) fn resumed_steer(seed: u64, features: Features, spec: &mut ScenarioSpec) {
    let mut g = Gen::new(seed ^ STREAM, features);
    let waiting = waiters(spec);
    if spec.cluster.is_some() || waiting.is_empty() || !g.chance(30) {
        return;
    }
    let first = spec
        .timeline
        .iter()
        .filter(|e| e.send.is_some())
        .min_by_key(|e| e.at)
        .map(|e| (e.at, e.thread.clone()));
    let Some((sent, thread)) = first else { return };
    let steered = sent + g.range(10, 120);
    // The steer is the thread's n-th user message when every send and
    // steer drawn before it stored one (a guess: the counter says when it
    // held).
    let before = spec
        .timeline
        .iter()
        .filter(|e| e.thread == thread && e.at <= steered)
        .filter(|e| e.send.is_some() || e.steer.is_some())
        .count();
    spec.timeline.push(TimelineEntry {
        at: steered,
        thread: thread.clone(),
        steer: Some(g.text(4)),
        ..TimelineEntry::default()
    });
    let mut at = steered + g.range(5, 60);
    for w in &waiting {
        for nth in 1..=w.calls {
            let entry = answer(&mut g, w, (w.name.clone(), nth), at, thread.clone());
            spec.timeline.push(entry);
            at += g.range(0, 20);
        }
    }
    let last = spec.timeline.iter().map(|e| e.at).max().unwrap_or(at);
    spec.timeline.push(TimelineEntry {
        at: last + g.range(100, 400),
        thread,
        regenerate: Some(before + 1),
        ..TimelineEntry::default()
    });
}
