//! SPEC H5: deleting a thread ends everything bound to its incarnation.
//! After `thread_deleted`, no run admitted on the thread before it (those
//! it cancelled among them) commits anything, starts a tool, waits or is
//! answered; each run it cancelled had not ended yet and ends exactly once,
//! cancelled with reason `deleted`; a run not yet ended that it left out of
//! its list was missed. Nor does such a run start a model call or a
//! compaction once its worker knows of the delete (at once in one process;
//! among workers, from the lease loss or the refusal that told it; what a
//! worker may do once it learned is judged in `h5_learned`), nor run
//! `prepare_model_step` in a step whose resolver ended by then.

use std::collections::BTreeSet;

use pai_runtime::{Event, event::EventKind, store::RunStatus};

use super::facts::run_commit_version;
use super::observed::{Observed, Violation};
use crate::scenario::OracleId;
use crate::world::CommitRecord;
use pai_runtime::id::RunId;

/// The reason a deleted thread's runs end with (SPEC H5).
const DELETED: &str = "deleted";

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = judge(o.events, o.cut_short, o.cluster.is_some(), o.commits);
    if o.cluster.is_some() {
        // Once per run: a run this check already flagged is not flagged again.
        let learned = super::h5_learned::judge(o.events, o.commits);
        let flagged: Vec<Option<String>> = out.iter().map(|v| v.run.clone()).collect();
        out.extend(learned.into_iter().filter(|v| !flagged.contains(&v.run)));
    }
    out
}

/// `cut_short`: a run's end may be missing from the log (the time limit
/// stopped the scenario first); `workers`: a run's end may have been
/// stored by a worker that vanished before logging it.
fn judge(
    events: &[Event],
    cut_short: bool,
    workers: bool,
    commits: &[CommitRecord],
) -> Vec<Violation> {
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let EventKind::ThreadDeleted { cancelled, .. } = &e.kind else {
            continue;
        };
        let d = Deletion {
            thread: e.thread_id.as_str(),
            cancelled,
            before: &events[..i],
            after: &events[i + 1..],
        };
        for run in d.bound() {
            for message in d.judge_run(run, (cut_short, workers), commits) {
                out.push(Violation::new(OracleId::H5, Some(run), message));
            }
        }
    }
    out
}

/// One `thread_deleted`: its thread, the runs it says it cancelled, and
/// the log before and after it.
struct Deletion<'a> {
    thread: &'a str,
    cancelled: &'a [RunId],
    before: &'a [Event],
    after: &'a [Event],
}

impl<'a> Deletion<'a> {
    /// The runs bound to the deleted incarnation: admitted on the thread
    /// before the deletion, and those it cancelled.
    fn bound(&self) -> BTreeSet<&'a str> {
        let thread = self.thread;
        let mut bound: BTreeSet<&str> = self
            .before
            .iter()
            .filter(|x| x.thread_id == thread && !x.run_id.is_empty())
            .filter(|x| matches!(x.kind, EventKind::Admitted { .. }))
            .map(|x| x.run_id.as_str())
            .collect();
        // Runs an earlier deletion of this thread cancelled belong to an
        // earlier incarnation: that deletion judges them.
        for x in self.before.iter().filter(|x| x.thread_id == thread) {
            if let EventKind::ThreadDeleted { cancelled, .. } = &x.kind {
                for c in cancelled {
                    bound.remove(c.as_str());
                }
            }
        }
        bound.extend(self.cancelled.iter().map(|r| r.as_str()));
        bound
    }

    /// What bound `run` did wrong around the deletion.
    fn judge_run(
        &self,
        run: &str,
        (cut_short, workers): (bool, bool),
        commits: &[CommitRecord],
    ) -> Vec<String> {
        let (thread, before, after) = (self.thread, self.before, self.after);
        let mut out = Vec::new();
        let of_run = |x: &&Event| x.run_id == run;
        // Among workers the run's worker may log its end (reason
        // `deleted`) before the client logs the delete.
        let ended_before = before.iter().filter(of_run).any(|x| match &x.kind {
            EventKind::Ended { reason, .. } => !workers || reason.as_deref() != Some(DELETED),
            _ => false,
        });
        let listed = self.cancelled.iter().any(|c| c == run);
        // In one process the log's order is the store's.
        let commits = if workers { commits } else { &[] };
        let late = late_write((before, after), run, thread, commits);
        if let Some(x) = late {
            out.push(format!(
                "{} after its thread {thread} was deleted",
                x.kind.name()
            ));
        } else if let Some(x) = started_after(after, run, workers) {
            out.push(format!(
                "{} started after its worker knew thread {thread} was deleted",
                x.kind.name()
            ));
        }
        let ends: Vec<&Event> = after
            .iter()
            .filter(of_run)
            .filter(|x| matches!(x.kind, EventKind::Ended { .. }))
            .collect();
        let ending = match (ended_before, listed) {
            (true, true) => Some(format!(
                "had ended before thread {thread} was deleted, yet the deletion says it cancelled it"
            )),
            (true, false) if !ends.is_empty() => {
                Some("ended again after its thread was deleted".to_string())
            }
            (true, false) => None,
            (false, false) if workers => None,
            (false, false) => Some(format!(
                "was still open when thread {thread} was deleted, but the deletion did not cancel it"
            )),
            (false, true) => match ends.as_slice() {
                [] if cut_short || workers => None,
                [] => Some(format!("never ended after thread {thread} was deleted")),
                [end] => not_deleted(&end.kind),
                more => Some(format!(
                    "ended {} times after its thread was deleted",
                    more.len()
                )),
            },
        };
        out.extend(ending);
        out
    }
}

/// Events that write to the thread, or act for the run as if it went on:
/// commits, mutations, tool starts, waits and answers.
fn writes(kind: &EventKind) -> bool {
    match kind {
        EventKind::CommitStep { .. }
        | EventKind::CommitToolResults { .. }
        | EventKind::Respond { .. }
        | EventKind::ContextMessage { .. }
        | EventKind::Mutated { .. }
        | EventKind::ToolStart { .. }
        | EventKind::Waiting { .. }
        | EventKind::Answered { .. } => true,
        // A write staged with tool results is no write of its own (K5).
        EventKind::RunMetadata { version } => version.is_some(),
        _ => false,
    }
}

/// A model call, tool or compaction of `run` started once its worker knew
/// of the delete: at once in one process; among workers, once it lost its
/// lease after the delete (its next renewal or write told it, and no other
/// worker may take a deleted run over). Nor does the step whose resolver
/// (a compaction refused by the delete among them) ended by then go on to
/// `prepare_model_step`: the episode ends there.
fn started_after<'a>(after: &'a [Event], run: &str, workers: bool) -> Option<&'a Event> {
    let known = match workers {
        false => 0,
        true => after.iter().position(|x| {
            x.run_id == run
                && matches!(
                    x.kind,
                    EventKind::LeaseLost { .. } | EventKind::DeleteLearned { .. }
                )
        })?,
    };
    let mut resolved = None;
    after[known..]
        .iter()
        .filter(|x| x.run_id == run)
        .find(|x| match x.kind {
            EventKind::ModelCall { .. } | EventKind::CompactionStarted { .. } => true,
            // A resolver (or compaction) that ended once the worker knew ends
            // the episode: no later hook of its step runs.
            EventKind::ResolveModelContext { step, .. } => {
                resolved = Some(step);
                false
            }
            EventKind::PrepareModelStep { step, .. } => resolved == Some(step),
            _ => false,
        })
}

/// The first write of `run` after its thread's delete. Among workers a
/// write the store took before the delete may be logged after it: the
/// delete's version orders them; a tool start counts from the worker's
/// last word from the store before it (its renewal just before the tool).
fn late_write<'a>(
    (before, after): (&[Event], &'a [Event]),
    run: &str,
    thread: &str,
    commits: &[CommitRecord],
) -> Option<&'a Event> {
    let deleted_at = commits
        .iter()
        .filter(|c| c.request == "delete" && c.thread == thread)
        .map(|c| c.version)
        .max();
    let mut heard = before
        .iter()
        .rev()
        .filter(|x| x.run_id == run)
        .find_map(|x| heard_version(&x.kind));
    after.iter().filter(|x| x.run_id == run).find(|x| {
        let v = heard_version(&x.kind);
        let own = v.or(match x.kind {
            EventKind::ToolStart { .. } => heard,
            _ => None,
        });
        heard = v.or(heard);
        let landed_before = own.zip(deleted_at).is_some_and(|(v, d)| v < d);
        writes(&x.kind) && !landed_before
    })
}

/// The thread version an event of a run reports hearing from the store.
fn heard_version(kind: &EventKind) -> Option<u64> {
    match kind {
        EventKind::LeaseRenewed { version, .. } | EventKind::Mutated { version, .. } => {
            Some(*version)
        }
        other => run_commit_version(other),
    }
}

/// What is wrong with a cancelled run's end, if anything.
fn not_deleted(kind: &EventKind) -> Option<String> {
    let EventKind::Ended { status, reason, .. } = kind else {
        return None;
    };
    (*status != RunStatus::Cancelled || reason.as_deref() != Some(DELETED)).then(|| {
        format!(
            "ended {} (reason {}) after its thread was deleted, not cancelled with reason {DELETED}",
            status.as_str(),
            reason.as_deref().unwrap_or("-")
        )
    })
}

#[cfg(test)]
mod tests {
    use pai_runtime::{event::RunStage, message::Outcome};

    use super::*;

    fn on(run: &str, kind: EventKind) -> Event {
        Event {
            at: 0,
            thread_id: "t".into(),
            run_id: run.into(),
            worker: None,
            kind,
        }
    }

    fn admit(run: &str) -> Event {
        on(
            run,
            EventKind::Admitted {
                trigger: format!("m-{run}").into(),
            },
        )
    }

    fn end(run: &str, status: RunStatus, reason: Option<&str>) -> Event {
        on(
            run,
            EventKind::Ended {
                version: None,
                status,
                outcome: Outcome::Cancelled,
                reason: reason.map(str::to_string),
            },
        )
    }

    fn deleted(cancelled: &[&str]) -> Event {
        on(
            "",
            EventKind::ThreadDeleted {
                incarnation: 1,
                cancelled: cancelled.iter().map(|c| c.to_string().into()).collect(),
            },
        )
    }

    fn commit(run: &str) -> Event {
        on(
            run,
            EventKind::CommitStep {
                step: 0,
                message: "m".into(),
                version: 3,
            },
        )
    }

    /// A running run and a queued one cancelled by the deletion, each ending
    /// once with reason deleted; a run that had completed before stays out.
    fn good() -> Vec<Event> {
        vec![
            admit("done"),
            end("done", RunStatus::Completed, None),
            admit("r1"),
            admit("r2"),
            deleted(&["r1", "r2"]),
            end("r2", RunStatus::Cancelled, Some(DELETED)),
            on(
                "r1",
                EventKind::Cancelled {
                    phase: RunStage::EpisodeEnd,
                },
            ),
            end("r1", RunStatus::Cancelled, Some(DELETED)),
            admit("next"),
            commit("next"),
        ]
    }

    #[test]
    fn h5_is_quiet_when_deleted_runs_stop_and_end_deleted() {
        assert_eq!(judge(&good(), false, false, &[]), vec![]);
    }

    #[test]
    fn h5_reports_a_commit_after_the_delete() {
        let mut events = good();
        events.insert(6, commit("r1"));
        let v = judge(&events, false, false, &[]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].oracle, OracleId::H5);
        assert!(v[0].message.contains("commit_step after"), "{v:?}");
    }

    #[test]
    fn h5_reports_wrong_missing_or_double_ends() {
        let mut events = good();
        events[7] = end("r1", RunStatus::Cancelled, Some("cancelled by the client"));
        let v = judge(&events, false, false, &[]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("not cancelled with reason deleted"));

        let mut events = good();
        events.remove(7);
        assert_eq!(judge(&events, false, false, &[]).len(), 1);
        assert_eq!(
            judge(&events, true, false, &[]),
            vec![],
            "a cut-short run may lack its end"
        );

        let mut events = good();
        events.push(end("r2", RunStatus::Cancelled, Some(DELETED)));
        let v = judge(&events, false, false, &[]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("ended 2 times"));
    }

    #[test]
    fn h5_reports_a_cancelled_list_that_is_wrong() {
        // The completed run listed, and the queued run left out.
        let mut events = good();
        events[4] = deleted(&["r1", "done"]);
        let v = judge(&events, false, false, &[]);
        let runs: Vec<_> = v.iter().filter_map(|v| v.run.as_deref()).collect();
        assert!(runs.contains(&"done") && runs.contains(&"r2"), "{v:?}");
    }

    fn compaction_started(run: &str) -> Event {
        on(
            run,
            EventKind::CompactionStarted {
                step: 1,
                through: 1,
                messages: 1,
            },
        )
    }

    fn lost(run: &str) -> Event {
        on(
            run,
            EventKind::LeaseLost {
                token: 1.into(),
                reason: "deleted".into(),
            },
        )
    }

    /// In one process the delete is known at once: nothing starts after it.
    /// Among workers, from the lease loss that told the worker.
    #[test]
    fn h5_nothing_starts_once_the_worker_knows_of_the_delete() {
        let late = [admit("r"), deleted(&["r"]), compaction_started("r")];
        let found = judge(&late, true, false, &[]);
        assert!(
            found.iter().any(|v| v.message.contains("started after")),
            "{found:?}"
        );
        assert_eq!(judge(&late, true, true, &[]), vec![]);
        let learned = [
            admit("r"),
            deleted(&["r"]),
            lost("r"),
            compaction_started("r"),
        ];
        let found = judge(&learned, true, true, &[]);
        assert!(
            found.iter().any(|v| v.message.contains("started after")),
            "{found:?}"
        );
    }
}
