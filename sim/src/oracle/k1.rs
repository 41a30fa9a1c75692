//! SPEC K1: one active run per thread; runs start in arrival order; the
//! message that starts a queued run waits for it: no step of another run
//! sees it before that run starts.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{Event, Role, event::EventKind};

use super::facts::{hook_written, model_text_ref, stored};

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;
use crate::world::ModelCallRecord;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = order(o.events);
    out.extend(queued_messages_wait(o));
    out
}

/// Runs start one at a time, in arrival order, per incarnation: a deletion
/// (H5) ends the incarnation's runs, so the next incarnation's first run
/// may start while a deleted one still winds down.
fn order(events: &[Event]) -> Vec<Violation> {
    // Per thread: runs admitted and not yet started, in order; the active run.
    let mut waiting: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut active: BTreeMap<&str, &str> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let (thread, run) = (e.thread_id.as_str(), e.run_id.as_str());
        match &e.kind {
            EventKind::Admitted { .. } => waiting.entry(thread).or_default().push(run),
            EventKind::LeaseAcquired { episode: 1, .. } => {
                let queue = waiting.entry(thread).or_default();
                if let Some(other) = active.get(thread) {
                    let message = format!("started while {other} was still active");
                    out.push(Violation::new(OracleId::K1, Some(run), message));
                }
                if queue.first() != Some(&run) {
                    let message =
                        format!("started before {:?}, which arrived first", queue.first());
                    out.push(Violation::new(OracleId::K1, Some(run), message));
                }
                queue.retain(|r| *r != run);
                active.insert(thread, run);
            }
            EventKind::Ended { .. } => {
                waiting.entry(thread).or_default().retain(|r| *r != run);
                if active.get(thread) == Some(&run) {
                    active.remove(thread);
                }
            }
            // Deleting the thread retires its runs (H5): a running one may
            // log its end after the next incarnation's first run started.
            EventKind::ThreadDeleted { .. } => {
                waiting.remove(thread);
                active.remove(thread);
            }
            _ => {}
        }
    }
    out
}

/// No step's request holds the trigger of a run admitted but not started
/// when the step anchored.
fn queued_messages_wait(o: &Observed<'_>) -> Vec<Violation> {
    let stored = stored(o.threads);
    let Some(written) = hook_written(o.scenario) else {
        return Vec::new();
    };
    // Texts of stored user messages, and how often each occurs.
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for m in stored.values().filter(|m| m.role == Role::User) {
        *count.entry(m.text()).or_default() += 1;
    }
    let by_step = calls_by_step(o);
    // Runs admitted and not yet started, with their thread and their
    // trigger's text.
    let mut waiting: Vec<(&str, &str, String)> = Vec::new();
    let mut out = Vec::new();
    for e in o.events {
        let run = e.run_id.as_str();
        match &e.kind {
            EventKind::Admitted { trigger } => {
                if let Some(m) = stored.get(&(e.thread_id.as_str(), trigger.as_str())) {
                    waiting.push((e.thread_id.as_str(), run, m.text()));
                }
            }
            EventKind::LeaseAcquired { .. } | EventKind::Ended { .. } => {
                waiting.retain(|(_, r, _)| *r != run);
            }
            EventKind::ResolveModelContext { step, .. } => {
                let unique =
                    |t: &String| count.get(t) == Some(&1) && !written.contains(&t.as_str());
                let others: Vec<(&str, &String)> = waiting
                    .iter()
                    .filter(|(th, r, t)| *th == e.thread_id && *r != run && unique(t))
                    .map(|(_, queued, text)| (*queued, text))
                    .collect();
                if others.is_empty() {
                    continue;
                }
                let calls = by_step.get(&(run, *step)).map_or(&[][..], Vec::as_slice);
                let seen = user_texts_among(o, calls, others.iter().map(|(_, t)| t.as_str()));
                for (queued, text) in others {
                    if seen.contains(text.as_str()) {
                        let message = format!(
                            "step {step} saw {text:?}, the message of {queued}, which had not started"
                        );
                        out.push(Violation::new(OracleId::K1, Some(run), message));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Each step's model calls (all its attempts), by run and step.
fn calls_by_step<'a>(o: &'a Observed<'_>) -> BTreeMap<(&'a str, u32), Vec<&'a ModelCallRecord>> {
    let mut out: BTreeMap<(&str, u32), Vec<&ModelCallRecord>> = BTreeMap::new();
    for c in o.calls {
        let key = (c.request.run_id.as_str(), c.request.step);
        out.entry(key).or_default().push(c);
    }
    out
}

/// Which of `wanted` the user messages of `calls` carry, read one
/// request at a time (no step's texts are kept past its own check).
fn user_texts_among<'a>(
    o: &Observed<'_>,
    calls: &[&ModelCallRecord],
    wanted: impl Iterator<Item = &'a str>,
) -> BTreeSet<&'a str> {
    let wanted: BTreeSet<&str> = wanted.collect();
    let mut seen = BTreeSet::new();
    for c in calls {
        for m in o.calls.messages(c).iter().filter(|m| m.role == Role::User) {
            if let Some(t) = wanted.get(model_text_ref(m).as_ref()) {
                seen.insert(*t);
            }
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(run: &str, kind: EventKind) -> Event {
        Event {
            run_id: run.into(),
            ..super::super::facts::ev(kind)
        }
    }

    fn admit(run: &str) -> Event {
        let trigger = format!("m-{run}");
        ev(
            run,
            EventKind::Admitted {
                trigger: trigger.into(),
            },
        )
    }

    fn acquired(run: &str) -> Event {
        ev(
            run,
            EventKind::LeaseAcquired {
                version: 1,
                episode: 1,
                token: 1.into(),
            },
        )
    }

    fn deleted() -> Event {
        let cancelled = vec!["old".into(), "queued".into()];
        ev(
            "",
            EventKind::ThreadDeleted {
                incarnation: 1,
                cancelled,
            },
        )
    }

    /// The next incarnation's run starts while the deleted one has not
    /// logged its end yet, and a run queued in the deleted incarnation is
    /// not ahead of it.
    #[test]
    fn a_new_incarnation_s_first_run_starts_beside_a_deleted_one() {
        let found = order(&[
            admit("old"),
            acquired("old"),
            admit("queued"),
            deleted(),
            admit("new"),
            acquired("new"),
        ]);
        assert_eq!(found, vec![]);
    }

    /// Within one incarnation, a second run started while the first is
    /// active, ahead of its queue, is reported twice.
    #[test]
    fn a_run_started_beside_the_active_one_is_reported() {
        let found = order(&[
            admit("a"),
            acquired("a"),
            admit("b"),
            admit("c"),
            acquired("c"),
        ]);
        assert_eq!(found.len(), 2, "{found:?}");
    }
}
