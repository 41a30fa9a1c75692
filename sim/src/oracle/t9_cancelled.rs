//! SPEC T9 with T8 and K6: a run asked to cancel gives its open calls up,
//! so from the cancel's commit on, an answer to one of its calls is not
//! answerable: the store refuses it (a typed error to the client) and
//! changes nothing. Judged in the store's own order, the thread's
//! versions, never by when clients sent: among workers a client may log
//! its answer after a worker logged what followed it.
//!
//! Once the store committed a cancel that reached the thread's current run
//! (`cancel_requested` at version `c`), that run stays current until its
//! `finish` (or the thread's `delete`) commits at version `e`: answers go to
//! the current run only, so
//! - no `answer` event of the run reports a version above `c`, or above
//!   the version of its end;
//! - the store's commit log has no `answer` commit on the thread between
//!   `c` and `e` (the store committed an answer the client may not have
//!   heard of);
//! - a call of the run whose stored result is a client's output or a
//!   denial had its answer taken before `c` (an `answer` event for it, or
//!   an `answer` commit no event reports, as when its reply was lost);
//! - in one process, no episode claimed after `c` runs `prepare_run`: the
//!   claim sees the cancel and only closes the open calls (§1
//!   `cancel_close`), whatever answers came.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{Event, Part, Role, event::EventKind, message::ResultSource};

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;
use crate::world::CommitRecord;

/// One run a cancel reached while it was current.
#[derive(Debug, Clone, Copy)]
struct Asked<'a> {
    thread: &'a str,
    /// The version of the first cancel's commit.
    at: u64,
    /// The version at which the run stopped being current: its `finish`
    /// or its thread's `delete` (the first after the cancel), or its `end`.
    end: Option<u64>,
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let asked = cancels(o.events, o.commits);
    let ends = ends(o.events);
    let (mut out, flagged) = answered_late(o.events, &asked, &ends);
    out.extend(committed_late(o.commits, &asked, &flagged));
    out.extend(results_after(o, &asked));
    if o.cluster.is_none() {
        out.extend(resumed_after(o.events, &asked));
    }
    out
}

/// Each run whose cancel the store committed while it was current, with
/// the version at which it stopped being current.
fn cancels<'a>(events: &'a [Event], commits: &[CommitRecord]) -> BTreeMap<&'a str, Asked<'a>> {
    let mut out: BTreeMap<&str, Asked<'_>> = BTreeMap::new();
    for e in events {
        if let EventKind::CancelRequested { version } = e.kind {
            let a = out.entry(e.run_id.as_str()).or_insert(Asked {
                thread: &e.thread_id,
                at: version,
                end: None,
            });
            a.at = a.at.min(version);
        }
    }
    let logged = ends(events);
    for (run, a) in out.iter_mut() {
        let closing = commits
            .iter()
            .filter(|c| c.thread == a.thread && c.version > a.at)
            .filter(|c| matches!(c.request, "finish" | "delete"))
            .map(|c| c.version);
        a.end = closing.chain(logged.get(run).copied()).min();
    }
    out
}

/// The version each run's `end` reports, where it reports one.
fn ends(events: &[Event]) -> BTreeMap<&str, u64> {
    let mut out = BTreeMap::new();
    for e in events {
        if let EventKind::Ended {
            version: Some(v), ..
        } = e.kind
        {
            let first = out.entry(e.run_id.as_str()).or_insert(v);
            *first = (*first).min(v);
        }
    }
    out
}

/// `answer` events reporting a version past the run's cancel or its end,
/// and the (thread, version) of each.
fn answered_late<'a>(
    events: &'a [Event],
    asked: &BTreeMap<&str, Asked<'_>>,
    ends: &BTreeMap<&str, u64>,
) -> (Vec<Violation>, BTreeSet<(&'a str, u64)>) {
    let mut out = Vec::new();
    let mut flagged = BTreeSet::new();
    for e in events {
        let EventKind::Answered {
            call_id, version, ..
        } = &e.kind
        else {
            continue;
        };
        let run = e.run_id.as_str();
        let late = match (asked.get(run), ends.get(run)) {
            (Some(a), _) if *version > a.at => {
                format!("after its cancel was requested at v{}", a.at)
            }
            (_, Some(end)) if version > end => format!("after the run ended at v{end}"),
            _ => continue,
        };
        flagged.insert((e.thread_id.as_str(), *version));
        let message = format!(
            "the store took the answer for {call_id} at v{version}, {late}: a run asked to cancel gives its calls up, so the answer must be refused and change nothing (T8, T9)"
        );
        out.push(Violation::new(OracleId::T9, Some(run), message));
    }
    (out, flagged)
}

/// `answer` commits in the store's log while a run asked to cancel was
/// still current, that no late `answer` event already reported.
fn committed_late(
    commits: &[CommitRecord],
    asked: &BTreeMap<&str, Asked<'_>>,
    flagged: &BTreeSet<(&str, u64)>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for c in commits.iter().filter(|c| c.request == "answer") {
        if flagged.contains(&(c.thread.as_str(), c.version)) {
            continue;
        }
        let open = |a: &Asked<'_>| {
            a.thread == c.thread && c.version > a.at && a.end.is_none_or(|e| c.version < e)
        };
        if let Some((run, a)) = asked.iter().find(|(_, a)| open(a)) {
            let message = format!(
                "the store committed an answer on {} at v{} ({}), after {run}'s cancel was requested at v{}: an answer then must change nothing (T8, T9)",
                c.thread, c.version, c.from, a.at
            );
            out.push(Violation::new(OracleId::T9, Some(run), message));
        }
    }
    out
}

/// Stored client outputs and denials of runs asked to cancel whose answer
/// the store did not take before the cancel.
fn results_after(o: &Observed<'_>, asked: &BTreeMap<&str, Asked<'_>>) -> Vec<Violation> {
    // (run, call) → the versions of its `answer` events; and every
    // (thread, version) an `answer` event reports.
    let mut answers: BTreeMap<(&str, &str), Vec<u64>> = BTreeMap::new();
    let mut reported: BTreeSet<(&str, u64)> = BTreeSet::new();
    for e in o.events {
        if let EventKind::Answered {
            call_id, version, ..
        } = &e.kind
        {
            let key = (e.run_id.as_str(), call_id.as_str());
            answers.entry(key).or_default().push(*version);
            reported.insert((e.thread_id.as_str(), *version));
        }
    }
    // An answer the store took whose reply no client heard.
    let unreported = |thread: &str, before: u64| {
        o.commits.iter().any(|c| {
            c.request == "answer"
                && c.thread == thread
                && c.version < before
                && !reported.contains(&(thread, c.version))
        })
    };
    let mut out = Vec::new();
    for t in o.threads {
        for m in t.messages.iter().filter(|m| m.role == Role::Tool) {
            let Some(a) = m.pai.run_id.as_deref().and_then(|r| asked.get(r)) else {
                continue;
            };
            let run = m.pai.run_id.as_deref().unwrap_or_default();
            for p in &m.parts {
                let Part::ToolResult {
                    call_id, source, ..
                } = p
                else {
                    continue;
                };
                if !matches!(source, ResultSource::Client | ResultSource::Denied) {
                    continue;
                }
                let taken = answers
                    .get(&(run, call_id.as_str()))
                    .is_some_and(|v| v.iter().any(|v| *v < a.at));
                if taken || unreported(&t.id, a.at) {
                    continue;
                }
                let message = format!(
                    "call {call_id} has a {} result, but the store took no answer for it before {run}'s cancel was requested at v{}: an answer after the cancel must not be recorded (T8, T9)",
                    source.as_str(),
                    a.at
                );
                out.push(Violation::new(OracleId::T9, Some(run), message));
            }
        }
    }
    out
}

/// In one process: episodes claimed after the run's cancel that ran
/// `prepare_run` (a resume) instead of only closing the open calls.
fn resumed_after(events: &[Event], asked: &BTreeMap<&str, Asked<'_>>) -> Vec<Violation> {
    let mut claimed: BTreeMap<&str, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let run = e.run_id.as_str();
        match e.kind {
            EventKind::LeaseAcquired { version, .. } => {
                claimed.insert(run, version);
            }
            EventKind::PrepareRun { .. } | EventKind::Respond { .. } => {
                let (Some(a), Some(at)) = (asked.get(run), claimed.get(run)) else {
                    continue;
                };
                if *at > a.at {
                    let message = format!(
                        "{} in an episode claimed at v{at}, after the cancel was requested at v{}: a cancelled run only closes its open calls (T8, §1 cancel_close)",
                        e.kind.name(),
                        a.at
                    );
                    out.push(Violation::new(OracleId::T9, Some(run), message));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pai_runtime::store::Answer;

    use super::*;
    use crate::oracle::facts::ev;

    fn commit(request: &'static str, version: u64) -> CommitRecord {
        CommitRecord {
            from: "client".into(),
            request,
            thread: "t".into(),
            version,
            after_event: 0,
        }
    }

    fn answered(version: u64) -> Event {
        ev(EventKind::Answered {
            call_id: "c1".into(),
            answer: Answer::Approved,
            version,
        })
    }

    fn judge(events: &[Event], commits: &[CommitRecord]) -> Vec<String> {
        let asked = cancels(events, commits);
        let (mut out, flagged) = answered_late(events, &asked, &ends(events));
        out.extend(committed_late(commits, &asked, &flagged));
        out.into_iter().map(|v| v.message).collect()
    }

    /// SPEC T8, T9: in the store's order, an answer taken before the cancel
    /// is fine; one taken after it (reported or only committed) is not;
    /// after the run's `finish` the next run's answers are its own.
    #[test]
    fn t9_answers_after_the_cancel_are_judged_by_version() {
        let cancel = ev(EventKind::CancelRequested { version: 5 });
        // The client logged its answer after the cancel, but the store
        // took it first (v4): fine.
        let early = [cancel.clone(), answered(4)];
        let commits = [
            commit("answer", 4),
            commit("cancel", 5),
            commit("finish", 8),
        ];
        assert_eq!(judge(&early, &commits), Vec::<String>::new());
        // Taken at v6, after the cancel at v5: reported once.
        let late = [cancel.clone(), answered(6)];
        let commits = [
            commit("cancel", 5),
            commit("answer", 6),
            commit("finish", 8),
        ];
        let found = judge(&late, &commits);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("after its cancel was requested at v5"));
        // Committed at v7 without a client hearing of it: still found.
        let commits = [
            commit("cancel", 5),
            commit("answer", 7),
            commit("finish", 8),
        ];
        let found = judge(std::slice::from_ref(&cancel), &commits);
        assert!(
            found[0].contains("committed an answer on t at v7"),
            "{found:?}"
        );
        // After the finish (v8) the thread's next run takes answers.
        let commits = [
            commit("cancel", 5),
            commit("finish", 8),
            commit("answer", 9),
        ];
        assert_eq!(judge(&[cancel], &commits), Vec::<String>::new());
    }
}
