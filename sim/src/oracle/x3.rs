//! SPEC X3: whatever failed, nothing committed is lost or reordered.

use std::collections::BTreeMap;

use pai_runtime::{Event, store::StoredThread};

use super::facts::committed_message;
use super::observed::Violation;
use crate::scenario::OracleId;

/// SPEC X3: whatever failed along the way, every message the log says was
/// committed is still stored, and stored messages keep strictly rising
/// sequence numbers.
pub(super) fn check(events: &[Event], threads: &[StoredThread]) -> Vec<Violation> {
    let stored: BTreeMap<(&str, &str), ()> = threads
        .iter()
        .flat_map(|t| {
            t.messages
                .iter()
                .map(move |m| ((t.id.as_str(), m.id.as_str()), ()))
        })
        .collect();
    let old = super::facts::old_incarnation_runs(events);
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let Some(id) = committed_message(&e.kind) else {
            continue;
        };
        let gone = old.contains(&(e.thread_id.as_str(), e.run_id.as_str()));
        if !stored.contains_key(&(e.thread_id.as_str(), id))
            && !gone
            && !rewritten_away(&events[i..], e, id)
        {
            out.push(Violation {
                oracle: OracleId::X3.into(),
                run: Some(e.run_id.to_string()),
                message: format!("committed message {id} is not stored any more"),
            });
        }
    }
    for t in threads {
        let mut ids = std::collections::BTreeSet::new();
        if let Some(m) = t.messages.iter().find(|m| !ids.insert(m.id.as_str())) {
            out.push(Violation {
                oracle: OracleId::X3.into(),
                run: m.pai.run_id.as_ref().map(|r| r.to_string()),
                message: format!("thread {} stores message {} twice", t.id, m.id),
            });
        }
        if let Some(w) = t.messages.windows(2).find(|w| w[0].seq >= w[1].seq) {
            out.push(Violation {
                oracle: OracleId::X3.into(),
                run: None,
                message: format!("thread {} stores #{} before #{}", t.id, w[0].seq, w[1].seq),
            });
        }
    }
    out
}

/// Whether a later rewrite on `e`'s thread says it removed message `id`
/// (a regeneration, R1), or the thread's incarnation was deleted (H5).
fn rewritten_away(later: &[Event], e: &Event, id: &str) -> bool {
    later
        .iter()
        .filter(|l| l.thread_id == e.thread_id)
        .any(|l| match &l.kind {
            pai_runtime::event::EventKind::HistoryRewritten { removed, .. } => {
                removed.iter().any(|r| r == id)
            }
            pai_runtime::event::EventKind::ThreadDeleted { .. } => true,
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use pai_runtime::{Event, event::EventKind, store::StoredThread};

    use super::*;

    fn commit(message: &str) -> Event {
        Event {
            at: 0,
            thread_id: "t".into(),
            run_id: "r".into(),
            worker: None,
            kind: EventKind::CommitStep {
                step: 0,
                message: message.into(),
                version: 2,
            },
        }
    }

    #[test]
    fn x3_reports_a_committed_message_that_is_gone() {
        let thread = StoredThread {
            id: "t".into(),
            agent: "a".into(),
            owner: "o".into(),
            incarnation: 1,
            version: 2,
            messages: vec![],
            metadata: Default::default(),
            private_metadata: Default::default(),
            runs: vec![],
            lease_holder: None,
            lease_token: 0.into(),
        };
        let v = check(&[commit("m2")], &[thread]);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].oracle, OracleId::X3);
    }
}
