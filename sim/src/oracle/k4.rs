//! SPEC K4: trusted history rewrites wait for, or are refused by, an
//! active run. A `history_rewritten` by trusted code (no run) is a
//! violation when, at that point of the log, a run of its thread has
//! acquired a lease (or been taken over) and not ended: running, between
//! episodes, or waiting for a client (its pending calls must not lose
//! their messages). A regeneration also may not commit while a run of the
//! thread is admitted and not ended (it would start a run of its own).
//! Deleting the thread retires its runs (H5): they no longer count.

use std::collections::BTreeMap;

use pai_runtime::{Event, event::EventKind};

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

/// Where a run of a thread stands, as far as K4 cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stand {
    /// Admitted, never leased yet.
    Queued,
    /// Leased at least once, not ended (running, between episodes, waiting).
    Active,
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    judge(o.events)
}

fn judge(events: &[Event]) -> Vec<Violation> {
    // Per thread: its runs not ended yet.
    let mut open: BTreeMap<&str, BTreeMap<&str, Stand>> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let (thread, run) = (e.thread_id.as_str(), e.run_id.as_str());
        let runs = open.entry(thread).or_default();
        match &e.kind {
            _ if run.is_empty() => match &e.kind {
                EventKind::ThreadDeleted { .. } => runs.clear(),
                EventKind::HistoryRewritten { kind, version, .. } => {
                    let regenerate = *kind == "regenerate";
                    let busy = runs
                        .iter()
                        .find(|(_, s)| **s == Stand::Active || regenerate)
                        .map(|(r, s)| (*r, *s));
                    if let Some((r, s)) = busy {
                        let how = match s {
                            Stand::Active => "active",
                            Stand::Queued => "queued",
                        };
                        let message = format!(
                            "a {kind} rewrite committed version {version} on thread {thread} while run {r} was {how}"
                        );
                        out.push(Violation::new(OracleId::K4, None, message));
                    }
                }
                _ => {}
            },
            EventKind::Admitted { .. } => {
                runs.entry(run).or_insert(Stand::Queued);
            }
            EventKind::LeaseAcquired { .. } | EventKind::TakenOver { .. } => {
                runs.insert(run, Stand::Active);
            }
            EventKind::Ended { .. } => {
                runs.remove(run);
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pai_runtime::{message::Outcome, store::RunStatus};

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

    fn rewrite(kind: &'static str) -> Event {
        on(
            "",
            EventKind::HistoryRewritten {
                version: 9,
                kind,
                removed: vec![],
                patched: vec![],
                started: None,
            },
        )
    }

    fn admit(run: &str) -> Event {
        on(
            run,
            EventKind::Admitted {
                trigger: "m".into(),
            },
        )
    }

    fn lease(run: &str) -> Event {
        on(
            run,
            EventKind::LeaseAcquired {
                version: 1,
                episode: 1,
                token: 1.into(),
            },
        )
    }

    fn end(run: &str) -> Event {
        on(
            run,
            EventKind::Ended {
                version: None,
                status: RunStatus::Completed,
                outcome: Outcome::Completed,
                reason: None,
            },
        )
    }

    fn wait(run: &str) -> Event {
        on(
            run,
            EventKind::Waiting {
                version: 1,
                calls: vec!["c".into()],
            },
        )
    }

    #[test]
    fn k4_is_quiet_when_no_run_is_active() {
        let events = [
            admit("r"),
            lease("r"),
            end("r"),
            rewrite("visibility"),
            rewrite("regenerate"),
        ];
        assert_eq!(judge(&events), vec![]);
        // A visibility rewrite may pass a queued run; a deleted thread's
        // runs no longer count.
        let deleted = on(
            "",
            EventKind::ThreadDeleted {
                incarnation: 1,
                cancelled: vec!["r".into()],
            },
        );
        let events = [
            admit("q"),
            rewrite("visibility"),
            admit("r"),
            lease("r"),
            deleted,
            rewrite("regenerate"),
        ];
        assert_eq!(judge(&events), vec![]);
    }

    #[test]
    fn k4_reports_a_rewrite_beside_a_waiting_run() {
        let events = [admit("r"), lease("r"), wait("r"), rewrite("visibility")];
        let v = judge(&events);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].oracle, OracleId::K4);
        assert!(v[0].message.contains("run r was active"), "{v:?}");
    }

    #[test]
    fn k4_reports_a_regeneration_beside_a_queued_run() {
        let events = [admit("q"), rewrite("regenerate")];
        let v = judge(&events);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("run q was queued"), "{v:?}");
    }
}
