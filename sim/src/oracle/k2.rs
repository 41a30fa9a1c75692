//! SPEC K2: a thread's fencing tokens only grow, and every commit a run makes
//! carries the thread's newest token: it is made while that run holds the
//! lease it acquired last.

use std::collections::BTreeMap;

use pai_runtime::EventKind;

use super::facts::run_commit_version;
use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    // Per thread: the newest token handed out, and who holds which token now.
    let mut newest: BTreeMap<&str, u64> = BTreeMap::new();
    let mut holder: BTreeMap<&str, (&str, u64)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in o.events {
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
            EventKind::LeaseReleased { .. } | EventKind::Waiting { .. } => {
                holder.remove(thread);
            }
            kind if run_commit_version(kind).is_some() => {
                let top = newest.get(thread).copied().unwrap_or(0);
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
