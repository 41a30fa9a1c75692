//! SPEC L1: each user message is answered by at most one run. A message
//! belongs to a run when that run was started for it (its trigger), when
//! the run's `prepare_run` judged it (the newest user message it was given,
//! whether it went on or responded), or when a step of the run took it (a
//! steer stored for the run, inside the anchor of a step the run began
//! after the steer). A message that belongs to two runs was answered twice.
//!
//! A regeneration (R1) removes a message's answer and starts a run from it:
//! from then on that run alone answers it.
//!
//! Judged from the log alone: `admit`, `prepare_run`/`respond` (which name
//! the message judged), `steered` and each step's anchor, with the stored
//! thread for the steer's sequence number.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{Event, event::EventKind, store::StoredThread};

use super::facts::stored;
use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

/// Why a message belongs to a run, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Claim {
    Trigger,
    Judged,
    Taken,
}

impl Claim {
    fn as_str(self) -> &'static str {
        match self {
            Claim::Trigger => "started for it",
            Claim::Judged => "its prepare_run judged it",
            Claim::Taken => "a step took it",
        }
    }
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    judge(o.events, o.threads)
}

fn judge<'a>(events: &'a [Event], threads: &'a [StoredThread]) -> Vec<Violation> {
    let messages = stored(threads);
    // Runs a regeneration started from a stored message (R1): the old
    // answer is gone, so the message is answered anew by that run alone.
    let regenerated: BTreeSet<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HistoryRewritten { started, .. } => started.as_deref(),
            _ => None,
        })
        .collect();
    // message → run → first reason it belongs to that run
    let mut owners: BTreeMap<&'a str, BTreeMap<&'a str, Claim>> = BTreeMap::new();
    // (run) → steers stored for it, with their thread, not yet taken
    let mut steers: BTreeMap<&'a str, BTreeSet<(&'a str, &'a str)>> = BTreeMap::new();
    for e in events {
        let run = e.run_id.as_str();
        let mut own = |m: &'a str, why: Claim| {
            owners.entry(m).or_default().entry(run).or_insert(why);
        };
        match &e.kind {
            EventKind::Admitted { trigger } if regenerated.contains(run) => {
                let runs = owners.entry(trigger.as_str()).or_default();
                runs.clear();
                runs.insert(run, Claim::Trigger);
            }
            EventKind::Admitted { trigger } => own(trigger, Claim::Trigger),
            EventKind::PrepareRun {
                latest_user: Some(m),
                ..
            }
            | EventKind::Respond {
                latest_user: Some(m),
                ..
            } => own(m, Claim::Judged),
            EventKind::Steered { message } => {
                let entry = steers.entry(run).or_default();
                entry.insert((e.thread_id.as_str(), message.as_str()));
            }
            EventKind::ResolveModelContext { anchor, .. } => {
                let Some(pending) = steers.get_mut(run) else {
                    continue;
                };
                let seq = |k: &(&str, &str)| messages.get(k).map(|m| m.seq);
                let taken: Vec<_> = pending
                    .iter()
                    .filter(|k| seq(k).is_some_and(|s| s <= *anchor))
                    .copied()
                    .collect();
                for k in taken {
                    pending.remove(&k);
                    own(k.1, Claim::Taken);
                }
            }
            _ => {}
        }
    }
    answered_twice(owners)
}

/// A violation for each message more than one run owns, naming each run
/// and why it owns it.
fn answered_twice(owners: BTreeMap<&str, BTreeMap<&str, Claim>>) -> Vec<Violation> {
    owners
        .into_iter()
        .filter(|(_, runs)| runs.len() > 1)
        .map(|(m, runs)| {
            let said: Vec<String> = runs
                .iter()
                .map(|(run, why)| format!("{run} ({})", why.as_str()))
                .collect();
            let first = runs.keys().next().copied();
            let text = format!(
                "user message {m} is answered by {} runs: {}",
                runs.len(),
                said.join(", ")
            );
            Violation::new(OracleId::L1, first, text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use pai_runtime::{
        Message, Part, Role,
        message::{PaiMeta, Producer, Visibility},
    };

    use super::*;
    use crate::oracle::facts::{ev, thread_of};

    fn user(seq: u64) -> Message {
        Message {
            id: format!("m{seq}").into(),
            seq,
            role: Role::User,
            parts: vec![Part::text("hi")],
            visibility: Visibility::ALL,
            pai: PaiMeta::new(Producer::User, Some("r"), None, 0),
        }
    }

    fn of(run: &str, kind: EventKind) -> Event {
        Event {
            run_id: run.into(),
            ..ev(kind)
        }
    }

    fn judged(run: &str, m: &str) -> Event {
        of(
            run,
            EventKind::Respond {
                latest_user: Some(m.into()),
                outcome: pai_runtime::message::Outcome::Blocked,
                reason: None,
                message: "m9".into(),
                version: 1,
            },
        )
    }

    /// A steer stored for a waiting run, judged by its resumed prepare_run,
    /// that also starts a second run: answered twice (the bug of issue 25).
    #[test]
    fn l1_a_steer_judged_by_one_run_and_started_by_another_is_reported() {
        let threads = [thread_of(vec![user(1), user(3)])];
        let steered = of(
            "r1",
            EventKind::Steered {
                message: "m3".into(),
            },
        );
        let admitted = of(
            "r2",
            EventKind::Admitted {
                trigger: "m3".into(),
            },
        );
        let events = [steered.clone(), judged("r1", "m3"), admitted.clone()];
        let found = judge(&events, &threads);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("answered by 2 runs"), "{found:?}");
        // Left over (never judged or taken), the steer may start the next run.
        assert_eq!(
            judge(&[steered.clone(), admitted.clone()], &threads),
            vec![]
        );
        // Taken by a step whose anchor holds it: then it is that run's.
        let step = of(
            "r1",
            EventKind::ResolveModelContext {
                step: 1,
                anchor: 3,
                messages: 3,
            },
        );
        let found = judge(&[steered.clone(), step, admitted.clone()], &threads);
        assert_eq!(found.len(), 1, "{found:?}");
        let early = of(
            "r1",
            EventKind::ResolveModelContext {
                step: 1,
                anchor: 2,
                messages: 2,
            },
        );
        assert_eq!(judge(&[steered, early, admitted], &threads), vec![]);
    }
}
