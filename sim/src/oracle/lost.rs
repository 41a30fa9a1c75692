//! SPEC R1 ("R-lost"): nothing committed is lost except what a rewrite
//! removed, and the rewrite says what it removed. Every message the log
//! announces as committed (a run's trigger, a steer, a step's message, its
//! tool results, a response, a hidden context message, what a mutation
//! appended) is in its thread as stored at the end, unless a later
//! `history_rewritten` names it among the removed or a later deletion took
//! the thread's incarnation (H5).

use std::collections::BTreeSet;

use pai_runtime::{Event, store::StoredThread};

use super::facts::committed_messages;
use super::observed::{Observed, Violation};
use super::rewrites::Erasures;
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    judge(o.events, o.threads)
}

fn judge(events: &[Event], threads: &[StoredThread]) -> Vec<Violation> {
    let stored: BTreeSet<(&str, &str)> = threads
        .iter()
        .flat_map(|t| t.messages.iter().map(|m| (t.id.as_str(), m.id.as_str())))
        .collect();
    let erased = Erasures::of(events);
    let old = super::facts::old_incarnation_runs(events);
    let mut reported = BTreeSet::new();
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let thread = e.thread_id.as_str();
        for id in committed_messages(&e.kind) {
            if id.is_empty()
                || stored.contains(&(thread, id))
                || erased.excused(thread, id, i)
                || old.contains(&(thread, e.run_id.as_str()))
                || !reported.insert((thread, id))
            {
                continue;
            }
            let run = Some(e.run_id.as_str()).filter(|r| !r.is_empty());
            let message = format!(
                "message {id} ({} on thread {thread}) is gone, and no rewrite says it removed it",
                e.kind.name()
            );
            out.push(Violation::new(OracleId::RLost, run, message));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pai_runtime::{
        Message, Part, Role,
        event::EventKind,
        message::{PaiMeta, Producer, Visibility},
    };

    use super::*;
    use crate::oracle::facts::{ev, thread_of};

    fn message(id: &str) -> Message {
        Message {
            id: id.into(),
            seq: 1,
            role: Role::User,
            parts: vec![Part::text("x")],
            visibility: Visibility::ALL,
            pai: PaiMeta::new(Producer::User, None, None, 0),
        }
    }

    fn admit(trigger: &str) -> Event {
        ev(EventKind::Admitted {
            trigger: trigger.into(),
        })
    }

    fn commit(message: &str) -> Event {
        ev(EventKind::CommitStep {
            step: 0,
            message: message.into(),
            version: 2,
        })
    }

    fn regenerate(removed: &[&str]) -> Event {
        let mut e = ev(EventKind::HistoryRewritten {
            version: 3,
            kind: "regenerate",
            removed: removed.iter().map(|r| r.to_string().into()).collect(),
            patched: vec![],
            started: Some("r2".into()),
        });
        e.run_id = Default::default();
        e
    }

    #[test]
    fn r_lost_excuses_what_a_rewrite_says_it_removed() {
        let t = thread_of(vec![message("u")]);
        let events = [admit("u"), commit("a"), regenerate(&["a"]), admit("u")];
        assert_eq!(judge(&events, std::slice::from_ref(&t)), vec![]);
    }

    #[test]
    fn r_lost_reports_what_a_rewrite_took_without_saying_so() {
        let t = thread_of(vec![message("u")]);
        let appended = ev(EventKind::Mutated {
            version: 3,
            appended: vec!["n".into()],
            metadata: vec![],
            private: vec![],
            visibility: vec![],
        });
        // The rewrite names only `a`; `b` and the mutation's `n` vanished.
        let events = [
            admit("u"),
            commit("a"),
            commit("b"),
            appended,
            regenerate(&["a"]),
        ];
        let v = judge(&events, std::slice::from_ref(&t));
        let gone: Vec<&str> = v.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(v.len(), 2, "{gone:?}");
        assert!(gone[0].starts_with("message b") && gone[1].starts_with("message n"));
        assert!(v.iter().all(|v| v.oracle == OracleId::RLost));
        // A removal said before the commit does not excuse it.
        let events = [regenerate(&["a"]), commit("a")];
        assert_eq!(judge(&events, std::slice::from_ref(&t)).len(), 1);
    }

    #[test]
    fn r_lost_excuses_a_deleted_incarnation() {
        let deleted = ev(EventKind::ThreadDeleted {
            incarnation: 1,
            cancelled: vec![],
        });
        let events = [admit("u"), commit("a"), deleted];
        assert_eq!(judge(&events, &[]), vec![]);
    }
}
