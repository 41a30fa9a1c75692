//! Liveness among several workers (SPEC K3: another worker may take the
//! run after expiry and continue it): once the last fault has healed,
//! every run ends, or waits for a client's answers, within the scenario's
//! bound. The simulator's safety phase is the faults; this is the
//! liveness phase after them.

use pai_runtime::store::{RunRecord, RunStatus, StoredThread};

use super::observed::{ClusterObs, Violation};
use crate::scenario::OracleId;

pub(super) fn check(c: &ClusterObs, threads: &[StoredThread]) -> Vec<Violation> {
    let bound = c.healed_at + c.liveness_ms;
    let mut out = Vec::new();
    match c.settled_at {
        Some(at) if at <= bound => {}
        Some(at) => out.push(Violation::new(
            OracleId::Liveness,
            None,
            format!("runs settled at {at}ms, after the bound {bound}ms"),
        )),
        None => out.push(Violation::new(
            OracleId::Liveness,
            None,
            format!(
                "runs had not all ended or waited by {bound}ms ({}ms after the last fault healed)",
                c.liveness_ms
            ),
        )),
    }
    for t in threads {
        let held = t.runs.iter().any(waits_for_a_client);
        for r in t.runs.iter().filter(|r| !settled(r, held)) {
            let message = format!("run is still {} at the end", r.status.as_str());
            out.push(Violation::new(OracleId::Liveness, Some(&r.id), message));
        }
    }
    out
}

/// Over, or waiting on an answer that has not come, or queued behind a
/// run that waits so (`held`, K1).
fn settled(r: &RunRecord, held: bool) -> bool {
    match r.status {
        RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled => true,
        RunStatus::Waiting => waits_for_a_client(r),
        RunStatus::Queued => held,
        RunStatus::Running => false,
    }
}

/// A waiting run some of whose calls have no answer yet, and no cancel.
fn waits_for_a_client(r: &RunRecord) -> bool {
    r.status == RunStatus::Waiting
        && !r.cancel_requested
        && r.waiting.iter().any(|c| c.answer.is_none())
}
