//! SPEC M1, M3: every history read a hook makes, at any time during its
//! step, returns only messages at or before the step's anchor, and the view
//! reports that anchor. Every read is fenced to its run's incarnation
//! (H5): a run whose thread was deleted after it was admitted never reads
//! a message of a later incarnation (one its thread holds at the end).

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{Event, event::EventKind, store::StoredThread};

use super::observed::{Observed, Violation};
use crate::hooks::HistoryRead;
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = anchored(o);
    out.extend(fenced(o.events, o.threads, o.reads));
    out
}

fn anchored(o: &Observed<'_>) -> Vec<Violation> {
    let anchor = anchors(o.events);
    let mut out = Vec::new();
    for r in o.reads {
        let Some(&a) = anchor.get(&(r.run_id.as_str(), r.episode, r.step)) else {
            continue;
        };
        let above: Vec<u64> = r.seqs.iter().copied().filter(|s| *s > a).collect();
        if r.anchor != a || !above.is_empty() {
            let message = format!(
                "step {} {} read {above:?} past its anchor #{a} (the view said #{})",
                r.step, r.read, r.anchor
            );
            out.push(Violation::new(OracleId::M3, Some(&r.run_id), message));
        }
    }
    out
}

/// No read of a run of a deleted incarnation returns a message of the
/// incarnation its thread holds at the end.
fn fenced(events: &[Event], threads: &[StoredThread], reads: &[HistoryRead]) -> Vec<Violation> {
    let mut thread_of: BTreeMap<&str, &str> = BTreeMap::new();
    let mut deleted: BTreeSet<&str> = BTreeSet::new();
    for e in events {
        match &e.kind {
            EventKind::Admitted { .. } => {
                thread_of.insert(&e.run_id, &e.thread_id);
            }
            EventKind::ThreadDeleted { cancelled, .. } => {
                let bound = thread_of.iter().filter(|(_, t)| **t == e.thread_id);
                deleted.extend(bound.map(|(r, _)| *r));
                deleted.extend(cancelled.iter().map(|s| s.as_str()));
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for r in reads.iter().filter(|r| deleted.contains(r.run_id.as_str())) {
        let Some(t) = thread_of
            .get(r.run_id.as_str())
            .and_then(|id| threads.iter().find(|t| t.id == *id))
        else {
            continue;
        };
        let later = t
            .messages
            .iter()
            .filter(|m| r.ids.iter().any(|id| *id == m.id));
        for m in later {
            let message = format!(
                "step {} {} read {} (#{}) of incarnation {}, after the run's own incarnation was deleted",
                r.step, r.read, m.id, m.seq, t.incarnation
            );
            out.push(Violation::new(OracleId::M3, Some(&r.run_id), message));
        }
    }
    out
}

/// The anchor of every step, by run, episode and step: a step begun again
/// in another episode (a takeover, K3) has an anchor of its own.
fn anchors(events: &[Event]) -> BTreeMap<(&str, u32, u32), u64> {
    let mut episode: BTreeMap<&str, u32> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for e in events {
        match &e.kind {
            EventKind::LeaseAcquired { episode: n, .. } => {
                episode.insert(e.run_id.as_str(), *n);
            }
            EventKind::ResolveModelContext { step, anchor, .. } => {
                let n = episode.get(e.run_id.as_str()).copied().unwrap_or(0);
                out.insert((e.run_id.as_str(), n, *step), *anchor);
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::facts::{ev, thread_of, user_message};

    fn read(run: &str, ids: &[&str]) -> HistoryRead {
        HistoryRead {
            run_id: run.into(),
            episode: 1,
            step: 0,
            anchor: 1,
            read: "collect",
            seqs: vec![1],
            ids: ids.iter().map(|i| i.to_string()).collect(),
        }
    }

    /// A run of a deleted incarnation that read a message of the thread's
    /// next incarnation is reported; a run of the current one is not.
    #[test]
    fn a_read_across_incarnations_is_reported() {
        let admit = |run: &str| Event {
            run_id: run.into(),
            ..ev(EventKind::Admitted {
                trigger: "m".into(),
            })
        };
        let events = [
            admit("old"),
            ev(EventKind::ThreadDeleted {
                incarnation: 1,
                cancelled: vec!["old".into()],
            }),
            admit("new"),
        ];
        let mut t = thread_of(vec![user_message("later", true)]);
        t.incarnation = 2;
        let threads = [t];
        let reads = [read("old", &["gone"]), read("new", &["later"])];
        assert_eq!(fenced(&events, &threads, &reads), vec![]);
        let reads = [read("old", &["later"])];
        let found = fenced(&events, &threads, &reads);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("incarnation 2"), "{found:?}");
    }
}
