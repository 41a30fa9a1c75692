//! SPEC L13: a hidden lifecycle context message is stored context-visible,
//! transcript-hidden, with producer lifecycle, and stays stored: it
//! survives waiting and resume.

use pai_runtime::{EventKind, Producer};

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
        // Trusted code may rewrite or delete it later (R1, H5).
        if erased.excused(&e.thread_id, message, i)
            || erased.visibility_changed_after(&e.thread_id, message, i)
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
