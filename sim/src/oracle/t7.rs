//! SPEC T7: a run that waits for a client ends its episode and holds no
//! lease while it waits: after its `wait`, nothing of the run happens but
//! answers (and steers stored for it, T9) until its next `lease_acquired`;
//! a run stored as waiting holds no lease and waits on some calls.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    Event,
    event::EventKind,
    store::{RunStatus, StoredThread},
};

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let (mut out, left_waiting) = while_waiting(o.events);
    out.extend(stored(o.threads, &left_waiting, o.cluster.is_some()));
    out
}

/// Events of a run between its `wait` and its next `lease_acquired`: only
/// answers and steers. Returns the violations and the runs whose log ends
/// waiting.
fn while_waiting(events: &[Event]) -> (Vec<Violation>, BTreeSet<&str>) {
    let mut waiting: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    for e in events {
        let run = e.run_id.as_str();
        // A delete cancels the thread's waiting runs in the store (H5):
        // among workers no worker holds one to log its end.
        if let EventKind::ThreadDeleted { cancelled, .. } = &e.kind {
            for r in cancelled {
                waiting.remove(r.as_str());
            }
            continue;
        }
        if !waiting.contains(run) {
            if let EventKind::Waiting { .. } = e.kind {
                waiting.insert(run);
            }
            continue;
        }
        match &e.kind {
            EventKind::Answered { .. }
            | EventKind::Steered { .. }
            | EventKind::CancelRequested { .. } => {}
            // Deleting its thread ends a waiting run at once (H5).
            EventKind::Ended {
                reason: Some(r), ..
            } if r == "deleted" => {
                waiting.remove(run);
            }
            // A takeover (K3) is a new lease too: a resume whose claim never
            // reached its worker is taken over after the lease expired.
            EventKind::LeaseAcquired { .. } | EventKind::TakenOver { .. } => {
                waiting.remove(run);
            }
            kind => {
                let message = match kind {
                    EventKind::LeaseReleased { .. } => {
                        "lease_released after wait: the wait released the lease".to_string()
                    }
                    _ => format!(
                        "{} while the run waited (after its wait, before a new lease)",
                        kind.name()
                    ),
                };
                out.push(Violation::new(OracleId::T7, Some(run), message));
                waiting.remove(run);
            }
        }
    }
    (out, waiting)
}

/// At the end: a run stored as waiting is one the log leaves waiting, holds
/// no lease, and waits on calls; a run the log leaves waiting is stored so.
/// Among workers (`vanishing`), a worker may vanish after its wait landed
/// but before it logged it: the store is then the only witness.
fn stored(
    threads: &[StoredThread],
    left_waiting: &BTreeSet<&str>,
    vanishing: bool,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut status: BTreeMap<&str, RunStatus> = BTreeMap::new();
    for t in threads {
        for r in &t.runs {
            status.insert(&r.id, r.status);
            if r.status != RunStatus::Waiting {
                continue;
            }
            let mut problems = Vec::new();
            if t.lease_holder.as_deref() == Some(r.id.as_str()) {
                problems.push("holds the thread's lease");
            }
            if r.waiting.is_empty() {
                problems.push("waits on no call");
            }
            if !left_waiting.contains(r.id.as_str()) && !vanishing {
                problems.push("is not waiting in the log");
            }
            for p in problems {
                let message = format!("run stored as waiting {p}");
                out.push(Violation::new(OracleId::T7, Some(&r.id), message));
            }
        }
    }
    for run in left_waiting {
        let s = status.get(run).map_or("not stored", |s| s.as_str());
        if s != RunStatus::Waiting.as_str() {
            let message = format!("the log leaves the run waiting; the store says {s}");
            out.push(Violation::new(OracleId::T7, Some(run), message));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pai_runtime::store::Answer;

    use super::*;

    fn ev(run: &str, kind: EventKind) -> Event {
        Event {
            at: 0,
            thread_id: "t".into(),
            run_id: run.into(),
            worker: None,
            kind,
        }
    }

    fn wait() -> EventKind {
        EventKind::Waiting {
            version: 1,
            calls: vec!["c".into()],
        }
    }

    /// SPEC T7: answers (and another run's events) may come while a run
    /// waits; a lease release or a commit of the waiting run may not.
    #[test]
    fn t7_nothing_of_a_waiting_run_but_answers() {
        let answer = EventKind::Answered {
            call_id: "c".into(),
            answer: Answer::Approved,
            version: 3,
        };
        let lease = EventKind::LeaseAcquired {
            version: 1,
            episode: 2,
            token: 2.into(),
        };
        let other = EventKind::LeaseReleased { episode: 1 };
        let fine = [
            ev("r", wait()),
            ev("q", other.clone()),
            ev("r", answer),
            ev("r", lease),
            ev("r", other.clone()),
        ];
        let (v, left) = while_waiting(&fine);
        assert!(v.is_empty() && left.is_empty(), "{v:?}");
        let (v, _) = while_waiting(&[ev("r", wait()), ev("r", other)]);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].oracle, OracleId::T7);
    }

    /// A run left waiting is stored as waiting, without the lease.
    #[test]
    fn t7_a_stored_waiting_run_holds_no_lease() {
        let events = [ev("r", wait())];
        let (_, left) = while_waiting(&events);
        let thread = StoredThread {
            id: "t".into(),
            agent: "a".into(),
            owner: "o".into(),
            incarnation: 1,
            version: 1,
            messages: vec![],
            metadata: Default::default(),
            private_metadata: Default::default(),
            runs: vec![],
            lease_holder: Some("r".into()),
            lease_token: 0.into(),
        };
        let v = stored(std::slice::from_ref(&thread), &left, false);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("not stored"), "{v:?}");
        let run = pai_runtime::store::RunRecord {
            id: "r".into(),
            status: RunStatus::Waiting,
            outcome: None,
            reason: None,
            steps: 1,
            trigger: "u".into(),
            episodes: 1,
            metadata: None,
            waiting: vec![],
            cancel_requested: false,
            calls_closed: false,
            handed_over: None,
        };
        let thread = StoredThread {
            runs: vec![run],
            ..thread
        };
        let v = stored(&[thread], &left, false);
        let messages: Vec<&str> = v.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "run stored as waiting holds the thread's lease",
                "run stored as waiting waits on no call"
            ]
        );
    }
}
