//! Which runs of deleted incarnations a worker still drives (SPEC H5).
//!
//! A deletion ends its incarnation's runs in the store at once, but a
//! worker driving one learns of it only at its next renewal or write, and
//! until then its tools run and it logs the run's events. The store's
//! current incarnation does not show such a run, so the simulation asks
//! the world's records instead: the store's log names the runs each
//! deletion ended, the shared recorder shows which worker claimed each run
//! and whether it has let it go since, and the simulator's log shows which
//! workers crashed (a crash ends everything its worker drove).

use std::collections::BTreeSet;

use pai_runtime::{Event, event::EventKind};

use crate::scenario::FaultAction;
use crate::world::{ClusterEvent, ClusterRecord};

/// The (worker, run) pairs where a worker still drives a run that a
/// deletion ended: it claimed the run, and has neither logged the run's
/// end, nor lost or released its lease, nor waited, nor crashed since.
pub fn deleted_runs_driven(events: &[Event], log: &[ClusterRecord]) -> Vec<(String, String)> {
    let deleted: BTreeSet<&str> = log
        .iter()
        .flat_map(|r| match &r.what {
            ClusterEvent::Deleted { cancelled, .. } => cancelled.as_slice(),
            _ => &[],
        })
        .map(String::as_str)
        .collect();
    if deleted.is_empty() {
        return Vec::new();
    }
    // The log is in the order things happened, so crashes are too.
    let mut crashes = log
        .iter()
        .filter_map(|r| match &r.what {
            ClusterEvent::Fault {
                action: FaultAction::Crash,
                worker,
                ..
            } => Some((r.after_event, worker.as_str())),
            _ => None,
        })
        .peekable();
    let mut driving: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (i, e) in events.iter().enumerate() {
        while let Some((_, w)) = crashes.next_if(|(at, _)| *at <= i) {
            driving.retain(|(worker, _)| *worker != w);
        }
        let Some(worker) = e.worker.as_deref() else {
            continue;
        };
        let key = (worker, e.run_id.as_str());
        match e.kind {
            EventKind::LeaseAcquired { .. } | EventKind::TakenOver { .. } => {
                driving.insert(key);
            }
            EventKind::Ended { .. }
            | EventKind::LeaseLost { .. }
            | EventKind::LeaseReleased { .. }
            | EventKind::Waiting { .. } => {
                driving.remove(&key);
            }
            _ => {}
        }
    }
    for (_, w) in crashes {
        driving.retain(|(worker, _)| *worker != w);
    }
    driving
        .into_iter()
        .filter(|(_, run)| deleted.contains(run))
        .map(|(w, r)| (w.to_string(), r.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pai_runtime::{message::Outcome, store::RunStatus};

    fn ev(worker: &str, run: &str, kind: EventKind) -> Event {
        Event {
            at: 0,
            thread_id: "t".into(),
            run_id: run.into(),
            worker: Some(worker.into()),
            kind,
        }
    }

    fn claimed(worker: &str, run: &str) -> Event {
        ev(
            worker,
            run,
            EventKind::LeaseAcquired {
                version: 1,
                episode: 1,
                token: 1.into(),
            },
        )
    }

    fn ended(worker: &str, run: &str) -> Event {
        let kind = EventKind::Ended {
            version: None,
            status: RunStatus::Cancelled,
            outcome: Outcome::Cancelled,
            reason: Some("deleted".into()),
        };
        ev(worker, run, kind)
    }

    fn record(after_event: usize, what: ClusterEvent) -> ClusterRecord {
        ClusterRecord {
            at: 0,
            after_event,
            what,
        }
    }

    fn deletion(after_event: usize, runs: &[&str]) -> ClusterRecord {
        let what = ClusterEvent::Deleted {
            from: "client".into(),
            thread: "t".into(),
            incarnation: 1,
            cancelled: runs.iter().map(|r| r.to_string()).collect(),
        };
        record(after_event, what)
    }

    fn crash(after_event: usize, worker: &str) -> ClusterRecord {
        let what = ClusterEvent::Fault {
            action: FaultAction::Crash,
            worker: worker.into(),
            placed: None,
        };
        record(after_event, what)
    }

    /// A deleted run whose worker has not logged its end is still driven;
    /// a run of the new incarnation is the store's business, not this one's.
    #[test]
    fn a_deleted_run_is_driven_until_its_worker_ends_it() {
        let events = vec![claimed("w1", "old"), claimed("w2", "new")];
        let log = vec![deletion(1, &["old"])];
        let driven = deleted_runs_driven(&events, &log);
        assert_eq!(driven, vec![("w1".to_string(), "old".to_string())]);
        let mut events = events;
        events.push(ended("w1", "old"));
        assert_eq!(deleted_runs_driven(&events, &log), vec![]);
    }

    /// A crash ends what its worker drove; a claim after the crash (by the
    /// restarted worker) drives again.
    #[test]
    fn a_crash_ends_what_its_worker_drove() {
        let events = vec![claimed("w1", "a"), claimed("w1", "b")];
        let log = vec![crash(1, "w1"), deletion(2, &["a", "b"])];
        let driven = deleted_runs_driven(&events, &log);
        assert_eq!(driven, vec![("w1".to_string(), "b".to_string())]);
        let log = vec![deletion(2, &["a", "b"]), crash(2, "w1")];
        assert_eq!(deleted_runs_driven(&events, &log), vec![]);
    }
}
