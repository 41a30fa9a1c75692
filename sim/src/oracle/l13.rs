//! SPEC L13: a hidden lifecycle context message is stored context-visible,
//! transcript-hidden, with producer lifecycle, and stays stored: it
//! survives waiting and resume.

use pai_runtime::{event::EventKind, message::Producer};

use super::observed::{Observed, Violation};
use super::rewrites::Erasures;
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let erased = Erasures::of(o.events);
    let mut out = Vec::new();
    for (i, e) in o.events.iter().enumerate() {
        let EventKind::ContextMessage { message, .. } = &e.kind else {
            continue;
        };
        // Trusted code may rewrite or delete it later (R1, H5). A worker
        // logs the message when it hears the store's answer: the store may
        // have stored it before a change logged in between (its claim of
        // the run is logged in the store's order).
        let from = written_from(o.events, i);
        if erased.excused(&e.thread_id, message, from)
            || erased.visibility_changed_after(&e.thread_id, message, from)
        {
            continue;
        }
        let stored = o
            .threads
            .iter()
            .filter(|t| t.id == e.thread_id)
            .flat_map(|t| &t.messages)
            .find(|m| m.id == *message);
        let problem = match stored {
            None => Some("is no longer stored".to_string()),
            Some(m) if m.visibility.transcript || !m.visibility.context => Some(format!(
                "is stored with visibility transcript={} context={}",
                m.visibility.transcript, m.visibility.context
            )),
            Some(m) if m.pai.producer != Producer::Lifecycle => {
                Some(format!("is stored as produced by {:?}", m.pai.producer))
            }
            Some(_) => None,
        };
        if let Some(p) = problem {
            let text = format!("hidden context message {message} {p}");
            out.push(Violation::new(OracleId::L13, Some(&e.run_id), text));
        }
    }
    out
}

/// Where event `i`'s write may have landed at the earliest, in log order:
/// among workers, right after its worker's newest claim of the run before
/// it; in one process, where it is logged.
fn written_from(events: &[pai_runtime::Event], i: usize) -> usize {
    let e = &events[i];
    if e.worker.is_none() {
        return i;
    }
    events[..i]
        .iter()
        .rposition(|c| {
            c.run_id == e.run_id
                && c.worker == e.worker
                && matches!(c.kind, EventKind::LeaseAcquired { .. })
        })
        .unwrap_or(i)
}
