//! SPEC K2: a thread's fencing tokens only grow, and every commit a run makes
//! carries the thread's newest token: it is made while that run holds the
//! lease it acquired last.
//!
//! A lease belongs to one incarnation (SPEC H5): a deletion retires it, so
//! no run of the deleted incarnation holds a lease after it (a commit it
//! logged later is under a retired token), while tokens still only grow
//! across incarnations and the next incarnation's first claim is judged
//! like any other.

use std::collections::BTreeMap;

use pai_runtime::store::FencingToken;
use pai_runtime::{Event, event::EventKind};

use super::facts::run_commit_version;
use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    judge(o.events)
}

fn judge(events: &[Event]) -> Vec<Violation> {
    // Per thread: the newest token handed out, and who holds which token now.
    let mut newest: BTreeMap<&str, FencingToken> = BTreeMap::new();
    let mut holder: BTreeMap<&str, (&str, FencingToken)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let (thread, run) = (e.thread_id.as_str(), e.run_id.as_str());
        match &e.kind {
            EventKind::LeaseAcquired { token, .. } => {
                let last = newest.entry(thread).or_default();
                if *token <= *last {
                    let message = format!("token {token} handed out after token {last}");
                    out.push(Violation::new(OracleId::K2, Some(run), message));
                }
                *last = (*last).max(*token);
                holder.insert(thread, (run, *token));
            }
            // A run that waits releases its lease with the wait (T7).
            // A deletion retires the incarnation's lease (H5).
            EventKind::LeaseReleased { .. }
            | EventKind::Waiting { .. }
            | EventKind::ThreadDeleted { .. } => {
                holder.remove(thread);
            }
            kind if run_commit_version(kind).is_some() => {
                let top = newest.get(thread).copied().unwrap_or_default();
                let ok = holder
                    .get(thread)
                    .is_some_and(|(r, t)| *r == run && *t == top);
                if !ok {
                    let held = holder
                        .get(thread)
                        .map_or("nobody".to_string(), |(r, t)| format!("{r} with token {t}"));
                    let message = format!(
                        "{} committed while {held} held the lease (newest token {top})",
                        e.kind.name()
                    );
                    out.push(Violation::new(OracleId::K2, Some(run), message));
                }
            }
            _ => {}
        }
    }
    out
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

    fn commit(run: &str, version: u64) -> Event {
        ev(
            run,
            EventKind::CommitStep {
                step: 0,
                message: "m".into(),
                version,
            },
        )
    }

    fn acquired(run: &str, token: u64) -> Event {
        ev(
            run,
            EventKind::LeaseAcquired {
                version: 1,
                episode: 1,
                token: token.into(),
            },
        )
    }

    fn deleted(cancelled: &[&str]) -> Event {
        ev(
            "",
            EventKind::ThreadDeleted {
                incarnation: 1,
                cancelled: cancelled.iter().map(|r| r.to_string().into()).collect(),
            },
        )
    }

    /// The next incarnation's first claim takes a newer token and commits
    /// under it, while the deleted run winds down without a release.
    #[test]
    fn a_new_incarnation_s_claim_commits_under_its_token() {
        let found = judge(&[
            acquired("old", 1),
            commit("old", 2),
            deleted(&["old"]),
            acquired("new", 3),
            commit("new", 5),
            ev(
                "old",
                EventKind::Ended {
                    version: None,
                    status: pai_runtime::store::RunStatus::Cancelled,
                    outcome: pai_runtime::message::Outcome::Cancelled,
                    reason: Some("deleted".into()),
                },
            ),
            commit("new", 6),
        ]);
        assert_eq!(found, vec![]);
    }

    /// A deleted run's commit after the deletion holds no lease, even
    /// before any run of the next incarnation claimed; a token that goes
    /// back across incarnations is reported.
    #[test]
    fn a_deleted_run_holds_no_lease_and_tokens_never_go_back() {
        let found = judge(&[
            acquired("old", 2),
            deleted(&["old"]),
            commit("old", 3),
            acquired("new", 1),
        ]);
        let messages: Vec<&str> = found.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(found.len(), 2, "{messages:?}");
        assert!(
            messages[0].contains("while nobody held the lease"),
            "{messages:?}"
        );
        assert!(
            messages[1].contains("token 1 handed out after token 2"),
            "{messages:?}"
        );
    }
}
