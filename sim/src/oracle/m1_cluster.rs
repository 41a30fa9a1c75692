//! SPEC M1 among several workers: placing a visibility change, or a queued
//! run's trigger, against a step's read without the log's positions.
//!
//! A worker records an event when it hears the store's answer, so the
//! merged log does not order one process's write against another's read.
//! What does order them:
//!
//! - **Thread versions.** Every commit the step's own worker recorded for
//!   the run before the step's `resolve_model_context` landed before the
//!   read (the lower bound); every one it recorded after landed after it
//!   (the upper bound). A change committed at or below the lower bound was
//!   in force at the read; one at or above the upper bound was not yet; one
//!   between them is not judged.
//! - **Lease tokens.** A thread's tokens only grow (K2). Another run's
//!   trigger left the queue (K1) before the step's read when that run's
//!   first lease token, in the store's log, is below the token the step ran
//!   under. Otherwise the trigger is not judged: whether it had left the
//!   queue cannot be told.
//!
//! A step that more than one worker resolved (a stale worker's and the new
//! holder's) is not judged: the calls do not say which read they came from.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::store::FencingToken;
use pai_runtime::{Event, Message, event::EventKind};

use super::facts::run_commit_version;
use super::m1_begun::Begun;
use super::observed::ClusterObs;
use crate::world::{ClusterEvent, CommitRecord};

/// Each message's visibility changes, by (thread, message id): thread
/// version, context-visible before, after; in version order.
type Changes<'a> = super::facts::LookupMap<(&'a str, &'a str), Vec<Change>>;

/// One visibility change: thread version, context-visible before, after.
type Change = (u64, bool, bool);

/// What places a change or a trigger against a step's read among workers.
#[derive(Debug)]
pub(super) struct StoreOrder<'a> {
    events: &'a [Event],
    changes: Changes<'a>,
    /// Trigger message id → the run it started.
    triggers: BTreeMap<&'a str, &'a str>,
    /// Each run's first lease token, from the store's log.
    first_token: BTreeMap<&'a str, FencingToken>,
    /// Steps resolved more than once, in the raw log of every worker.
    ambiguous: BTreeSet<(&'a str, u32)>,
    /// Threads with a mutation the store committed that no process logged
    /// (its answer was lost): what it changed cannot be told.
    unlogged: BTreeSet<&'a str>,
}

impl<'a> StoreOrder<'a> {
    pub(super) fn of(
        events: &'a [Event],
        c: &'a ClusterObs,
        commits: &'a [CommitRecord],
    ) -> StoreOrder<'a> {
        let mut triggers = BTreeMap::new();
        for e in events {
            if let EventKind::Admitted { trigger } = &e.kind {
                triggers.insert(trigger.as_str(), e.run_id.as_str());
            }
        }
        // Every change that committed: the run's story, and every worker's
        // own log (a holder that hears its mutation's answer only after
        // another worker took the run over keeps no event in the run's
        // story, yet its change landed, under its token, before the
        // takeover). One version is one commit: a change logged in both
        // counts once.
        let mut found: BTreeMap<(&'a str, &'a str), BTreeSet<Change>> = BTreeMap::new();
        let mut logged: BTreeSet<(&'a str, u64)> = BTreeSet::new();
        for e in events.iter().chain(&c.raw_events) {
            if let EventKind::Mutated {
                version,
                visibility,
                ..
            } = &e.kind
            {
                logged.insert((e.thread_id.as_str(), *version));
                for v in visibility {
                    let key = (e.thread_id.as_str(), v.message.as_str());
                    let change = (*version, v.before.context, v.after.context);
                    found.entry(key).or_default().insert(change);
                }
            }
        }
        let changes: Changes<'a> = found
            .into_iter()
            .map(|(key, list)| (key, list.into_iter().collect()))
            .collect();
        for (m, run) in super::facts::leftover_steers(events) {
            triggers.entry(m).or_insert(run);
        }
        let unlogged = commits
            .iter()
            .filter(|r| r.request == "mutate" && !logged.contains(&(r.thread.as_str(), r.version)))
            .map(|r| r.thread.as_str())
            .collect();
        StoreOrder {
            events,
            changes,
            triggers,
            first_token: first_tokens(c),
            ambiguous: ambiguous(&c.raw_events),
            unlogged,
        }
    }

    /// Whether `m` was context-visible when step `b` read the thread, if
    /// the versions and tokens tell.
    pub(super) fn visible(&self, b: &Begun<'_>, m: &Message) -> Option<bool> {
        if self.ambiguous.contains(&(b.run, b.step)) {
            return None;
        }
        if let Some(&run) = self.triggers.get(m.id.as_str())
            && run != b.run
        {
            let first = self.first_token.get(run)?;
            if *first >= self.token(b)? {
                return None;
            }
        }
        let Some(list) = self.changes.get(&(b.thread, m.id.as_str())) else {
            // A mutation nobody heard of may have changed it at any time.
            return match self.unlogged.contains(b.thread) {
                true => None,
                false => Some(m.visibility.context),
            };
        };
        let (low, high) = self.bounds(b);
        if list.iter().any(|&(v, ..)| v > low && v < high) {
            return None;
        }
        match list.iter().rev().find(|&&(v, ..)| v <= low) {
            Some(&(_, _, after)) => Some(after),
            None => list.first().map(|&(_, before, _)| before),
        }
    }

    /// The step's run's events recorded by the step's worker, before and
    /// after the step's read.
    fn own(&self, b: &Begun<'_>) -> (&'a [Event], &'a [Event]) {
        let (before, after) = self.events.split_at(b.at.min(self.events.len()));
        (before, after.get(1..).unwrap_or_default())
    }

    /// The newest version the run's worker saw commit before the read (0
    /// if none), and the oldest it saw commit after it (`u64::MAX` if none).
    fn bounds(&self, b: &Begun<'_>) -> (u64, u64) {
        let (before, after) = self.own(b);
        let mine = |e: &&Event| e.run_id == b.run && e.worker.as_deref() == b.worker;
        let low = before.iter().filter(mine).filter_map(committed).max();
        let high = after.iter().filter(mine).filter_map(committed).min();
        (low.unwrap_or(0), high.unwrap_or(u64::MAX))
    }

    /// The lease token the step ran under: its worker's newest claim of
    /// the run before the read.
    fn token(&self, b: &Begun<'_>) -> Option<FencingToken> {
        let (before, _) = self.own(b);
        before.iter().rev().find_map(|e| match e.kind {
            EventKind::LeaseAcquired { token, .. }
                if e.run_id == b.run && e.worker.as_deref() == b.worker =>
            {
                Some(token)
            }
            _ => None,
        })
    }
}

/// The thread version a run's own commit reached, for the events a worker
/// records once the store answered its write: the commits the other
/// oracles count (`run_commit_version`), and the run's own mutations and
/// compactions, which commit a version too.
fn committed(e: &Event) -> Option<u64> {
    match e.kind {
        EventKind::Mutated { version, .. } | EventKind::Compacted { version, .. } => Some(version),
        ref kind => run_commit_version(kind),
    }
}

/// Each run's first lease token, as the store handed it out.
fn first_tokens(c: &ClusterObs) -> BTreeMap<&str, FencingToken> {
    let mut out: BTreeMap<&str, FencingToken> = BTreeMap::new();
    for r in &c.log {
        if let ClusterEvent::Claimed { run, token, .. } = &r.what {
            let first = out.entry(run.as_str()).or_insert(*token);
            *first = (*first).min(*token);
        }
    }
    out
}

/// The steps some worker resolved more than once, or more than one did.
pub(super) fn ambiguous(raw: &[Event]) -> BTreeSet<(&str, u32)> {
    let mut seen = BTreeSet::new();
    let mut twice = BTreeSet::new();
    for e in raw {
        if let EventKind::ResolveModelContext { step, .. } = e.kind
            && !seen.insert((e.run_id.as_str(), step))
        {
            twice.insert((e.run_id.as_str(), step));
        }
    }
    twice
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::facts::{ev, user_message, visibility_change};
    use crate::oracle::m1_begun::steps;
    use crate::world::ClusterRecord;

    fn by(worker: &str, run: &str, kind: EventKind) -> Event {
        let mut e = ev(kind);
        e.worker = Some(worker.into());
        e.run_id = run.into();
        e
    }

    fn lease(worker: &str, token: u64) -> Event {
        by(
            worker,
            "r",
            EventKind::LeaseAcquired {
                version: 1,
                episode: 1,
                token: token.into(),
            },
        )
    }

    fn commit(worker: &str, step: u32, version: u64) -> Event {
        let message = format!("m{version}").into();
        by(
            worker,
            "r",
            EventKind::CommitStep {
                step,
                message,
                version,
            },
        )
    }

    fn resolve(worker: &str, step: u32) -> Event {
        let kind = EventKind::ResolveModelContext {
            step,
            anchor: 9,
            messages: 1,
        };
        by(worker, "r", kind)
    }

    /// A trusted writer hides `id` at thread version `version`.
    fn hide(id: &str, version: u64) -> Event {
        let mut e = visibility_change(id, version, true, false);
        e.worker = Some("client".into());
        e.run_id = Default::default();
        e
    }

    fn admitted(run: &str, trigger: &str) -> Event {
        by(
            "client",
            run,
            EventKind::Admitted {
                trigger: trigger.into(),
            },
        )
    }

    fn message(id: &str, context: bool) -> Message {
        user_message(id, context)
    }

    fn claimed(run: &str, token: u64) -> ClusterRecord {
        let what = ClusterEvent::Claimed {
            from: "w1".into(),
            thread: "t".into(),
            run: run.into(),
            token: token.into(),
            episode: 1,
            takeover: None,
        };
        ClusterRecord {
            at: 0,
            after_event: 0,
            what,
        }
    }

    /// Whether `m` was visible at step 1 of run `r`, placed by store order.
    fn at_step_1(events: &[Event], c: &ClusterObs, m: &Message) -> Option<bool> {
        let begun = steps(events, true);
        StoreOrder::of(events, c, &[]).visible(&begun[&("r", 1)], m)
    }

    /// SPEC M1: a change at or below the versions the step's worker saw
    /// commit before the read was in force; one at or above the first it
    /// saw after was not yet; one between is not judged, wherever the log
    /// put it.
    #[test]
    fn m1_a_change_is_placed_by_the_versions_around_the_read() {
        let c = ClusterObs::default();
        let hidden_at = |version| {
            // w2's commit at 4 is another worker's: it bounds nothing.
            let events = vec![
                lease("w1", 1),
                commit("w1", 0, 2),
                commit("w2", 0, 4),
                hide("m", version),
                resolve("w1", 1),
                commit("w1", 1, 6),
            ];
            at_step_1(&events, &c, &message("m", false))
        };
        assert_eq!(hidden_at(1), Some(false), "hidden below the lower bound");
        assert_eq!(hidden_at(7), Some(true), "hidden above the upper bound");
        assert_eq!(hidden_at(3), None, "w2's commit at 4 is no lower bound");
        assert_eq!(hidden_at(5), None, "between the bounds");
        // Logged after the read, committed before it: version 1 still wins.
        let events = vec![
            lease("w1", 1),
            commit("w1", 0, 2),
            resolve("w1", 1),
            hide("m", 1),
        ];
        assert_eq!(at_step_1(&events, &c, &message("m", false)), Some(false));
        let unchanged = message("n", true);
        assert_eq!(at_step_1(&events, &c, &unchanged), Some(true));
    }

    /// SPEC M1: the run's own mutations are bounds themselves: one its
    /// worker logged before the read was in force (the lower bound is its
    /// version), one logged after it was not (the upper bound is).
    #[test]
    fn m1_the_run_s_own_change_bounds_the_read() {
        let c = ClusterObs::default();
        let own = |version| {
            let mut e = hide("m", version);
            e.worker = Some("w1".into());
            e.run_id = "r".into();
            e
        };
        let before = vec![lease("w1", 1), commit("w1", 0, 2), own(3), resolve("w1", 1)];
        assert_eq!(at_step_1(&before, &c, &message("m", false)), Some(false));
        let after = vec![lease("w1", 1), commit("w1", 0, 2), resolve("w1", 1), own(3)];
        assert_eq!(at_step_1(&after, &c, &message("m", false)), Some(true));
    }

    /// SPEC K1: another run's trigger is judged only when that run was
    /// first claimed under a token below the step's.
    #[test]
    fn k1_another_run_s_trigger_is_judged_once_its_first_token_is_older() {
        let events = |token| vec![admitted("q", "m"), lease("w1", token), resolve("w1", 1)];
        let queued_first_at = |first| ClusterObs {
            log: vec![claimed("q", first), claimed("q", first + 5)],
            ..ClusterObs::default()
        };
        let m = message("m", true);
        assert_eq!(at_step_1(&events(3), &queued_first_at(2), &m), Some(true));
        assert_eq!(at_step_1(&events(3), &queued_first_at(4), &m), None);
        assert_eq!(at_step_1(&events(3), &ClusterObs::default(), &m), None);
        // The step's own trigger is not queued for it.
        let own = vec![admitted("r", "m"), lease("w1", 1), resolve("w1", 1)];
        assert_eq!(at_step_1(&own, &ClusterObs::default(), &m), Some(true));
    }

    /// A step two workers resolved is not judged.
    #[test]
    fn m1_a_step_resolved_twice_is_not_judged() {
        let events = vec![lease("w1", 1), resolve("w1", 1)];
        let raw = vec![resolve("w2", 1), lease("w1", 1), resolve("w1", 1)];
        let c = ClusterObs {
            raw_events: raw,
            ..ClusterObs::default()
        };
        assert_eq!(at_step_1(&events, &c, &message("m", true)), None);
        let once = ClusterObs {
            raw_events: events.clone(),
            ..ClusterObs::default()
        };
        assert_eq!(at_step_1(&events, &once, &message("m", true)), Some(true));
    }
}
