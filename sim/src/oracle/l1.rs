//! SPEC L1: `prepare_run` is given the newest user message of its own run
//! (the one that started it, or a steer stored for it), never a message of
//! a run queued behind it.

use std::collections::BTreeMap;

use pai_runtime::event::EventKind;

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    // Each run's own user messages, in the order they were stored.
    let mut own: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    // The run's newest own message when its episode began: `prepare_run`
    // reads the thread then (a steer stored while it runs is the next
    // step's to take). Among workers the read crosses the network after
    // the claim: a steer stored in between may be the one it reads.
    let mut at_start: BTreeMap<&str, (Option<&str>, usize)> = BTreeMap::new();
    let distributed = o.cluster.is_some();
    let mut out = Vec::new();
    for e in o.events {
        let run = e.run_id.as_str();
        match &e.kind {
            EventKind::Admitted { trigger: m } | EventKind::Steered { message: m } => {
                own.entry(run).or_default().push(m);
            }
            EventKind::LeaseAcquired { .. } => {
                let mine = own.get(run).map(Vec::as_slice).unwrap_or_default();
                at_start.insert(run, (mine.last().copied(), mine.len()));
            }
            EventKind::PrepareRun { latest_user, .. } => {
                let (expected, count) = at_start.get(run).copied().unwrap_or_default();
                let mine = own.get(run).map(Vec::as_slice).unwrap_or_default();
                let since = mine.get(count..).unwrap_or_default();
                let got_later =
                    distributed && latest_user.as_deref().is_some_and(|m| since.contains(&m));
                if latest_user.as_deref() != expected && !got_later {
                    let got = latest_user.as_deref().unwrap_or("none");
                    let message = format!(
                        "prepare_run was given {got} as the latest user message; the run's own newest is {}",
                        expected.unwrap_or("none")
                    );
                    out.push(Violation::new(OracleId::L1, Some(run), message));
                }
            }
            _ => {}
        }
    }
    out
}
