//! The event log the per-run oracles read when several workers drive runs:
//! for each run, only the events of the worker that holds it now. A worker
//! that lost a run's lease (it paused, crashed or was cut off, and another
//! took the run over) may go on doing things locally for a while; those
//! events stay in the transcript and in the raw log the lease oracles
//! read (K2, K5), but they are not the run's story.

use std::collections::BTreeMap;

use pai_runtime::{Event, EventKind};

/// Each run's events from the worker that drives it, in log order. A run's
/// `admit` comes first: it is recorded when the client hears the store's
/// answer, which may be after a worker has already claimed the run.
pub fn linearize(raw: &[Event]) -> Vec<Event> {
    let mut driver: BTreeMap<(&str, &str), Option<&str>> = BTreeMap::new();
    let mut admits: BTreeMap<(&str, &str), &Event> = raw
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Admitted { .. }))
        .map(|e| ((e.thread_id.as_str(), e.run_id.as_str()), e))
        .collect();
    let mut out = Vec::with_capacity(raw.len());
    for e in raw {
        let key = (e.thread_id.as_str(), e.run_id.as_str());
        if let Some(admit) = admits.remove(&key) {
            out.push(admit.clone());
        }
        if matches!(e.kind, EventKind::Admitted { .. }) {
            continue;
        }
        let worker = e.worker.as_deref();
        let current = driver.entry(key).or_default();
        let keep = match &e.kind {
            EventKind::TakenOver { .. } | EventKind::LeaseAcquired { .. } => {
                *current = worker;
                true
            }
            _ => current.is_none() || *current == worker || from_a_client(&e.kind),
        };
        if keep {
            out.push(e.clone());
        }
    }
    out
}

/// Events a client's own call makes (through any process), not a driver's.
fn from_a_client(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Admitted { .. } | EventKind::Steered { .. } | EventKind::Answered { .. }
    )
}
