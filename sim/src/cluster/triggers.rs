//! Faults placed at a store request (issue 25): the store host counts the
//! requests it receives per worker and kind, and when one matches an armed
//! placement it tells the simulator's loop, which carries the fault out
//! right after that turmoil step and schedules its end. A request placed
//! `lost` is dropped unapplied and unanswered. Everything runs on turmoil's
//! one thread in step order, so the counts, and so the firings, replay
//! exactly under a seed (D1).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::scenario::Placed;

/// What the store does with a request that arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Apply it and answer.
    Apply,
    /// Apply it, and answer once the simulator has carried out the fault
    /// placed at it (after this turmoil step): the answer is in flight
    /// when the fault happens.
    Fired,
    /// Drop it: a fault placed `lost` cut the link just before it arrived.
    Lose,
}

/// The placements and what became of them, shared by the store host, the
/// simulator's loop and the client host.
#[derive(Debug)]
pub struct Triggers {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    placed: Vec<Placed>,
    /// Requests received, per (worker, kind).
    counts: BTreeMap<(String, &'static str), usize>,
    /// Placements that fired and wait for the loop to carry them out.
    due: Vec<usize>,
    /// Placements the loop carried out, with when their end comes.
    fired: BTreeMap<usize, u64>,
    /// The liveness phase began (or the run settled): nothing fires any more.
    disarmed_at: Option<u64>,
}

impl Triggers {
    pub fn new(placed: Vec<Placed>) -> Triggers {
        let state = State {
            placed,
            ..State::default()
        };
        Triggers {
            state: Mutex::new(state),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a request of `kind` from `from`, and fires the placements
    /// it matches.
    pub fn arrive(&self, from: &str, kind: &'static str) -> Arrival {
        let mut s = self.lock();
        if s.placed.is_empty() {
            return Arrival::Apply;
        }
        let n = s.counts.entry((from.to_string(), kind)).or_default();
        *n += 1;
        let n = *n;
        if s.disarmed_at.is_some() {
            return Arrival::Apply;
        }
        let matched: Vec<usize> = (0..s.placed.len())
            .filter(|&i| {
                let p = &s.placed[i];
                p.by == from && p.request == kind && p.nth == n
            })
            .collect();
        let lost = matched.iter().any(|&i| s.placed[i].lost);
        let fired = !matched.is_empty();
        s.due.extend(matched);
        match (lost, fired) {
            (true, _) => Arrival::Lose,
            (false, true) => Arrival::Fired,
            (false, false) => Arrival::Apply,
        }
    }

    /// The placements that fired since the last call, for the loop to carry
    /// out at `now`; each is remembered with its end.
    pub fn take_due(&self, now: u64) -> Vec<Placed> {
        let mut s = self.lock();
        let due = std::mem::take(&mut s.due);
        due.into_iter()
            .map(|i| {
                let end = now + s.placed[i].length.unwrap_or(0);
                s.fired.insert(i, end);
                s.placed[i].clone()
            })
            .collect()
    }

    /// When the last placed fault that fired ends (0 with none).
    pub fn healed_at(&self) -> u64 {
        let s = self.lock();
        s.fired.values().copied().max().unwrap_or(0)
    }

    /// Whether a placement fired and the loop has not carried it out yet.
    pub fn pending(&self) -> bool {
        !self.lock().due.is_empty()
    }

    /// From `now` on nothing fires: the liveness phase began.
    pub fn disarm(&self, now: u64) {
        let mut s = self.lock();
        if s.disarmed_at.is_none() {
            s.disarmed_at = Some(now);
        }
    }

    /// The placements that never fired, by fault index, with why.
    pub fn unfired(&self) -> BTreeMap<usize, String> {
        let s = self.lock();
        let fired = |i: usize| s.fired.contains_key(&i) || s.due.contains(&i);
        (0..s.placed.len())
            .filter(|&i| !fired(i))
            .map(|i| {
                let p = &s.placed[i];
                let sent = s
                    .counts
                    .get(&(p.by.clone(), p.request))
                    .copied()
                    .unwrap_or(0);
                let when = match s.disarmed_at {
                    Some(at) => format!(" before the liveness phase began at {at}ms"),
                    None => String::new(),
                };
                let why = format!(
                    "{} {} {} never fired: the store received {sent} {} request(s) from {}{when}",
                    p.action.as_str(),
                    p.worker,
                    p.at(),
                    p.request,
                    p.by,
                );
                (p.fault, why)
            })
            .collect()
    }
}
