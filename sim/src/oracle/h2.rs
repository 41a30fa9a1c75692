//! SPEC H2: a mutation's staged writes commit as one change. Judged from
//! the log and the stored threads:
//!
//! - every `mutated` that changed something reports a version above every
//!   version its thread reported before (commits, answers, mutations,
//!   rewrites, compactions), and no other commit on the thread reports the
//!   same version: one mutation, one version bump. A visibility rewrite
//!   and compaction's `compacted` name the version of the mutation they
//!   announce, so they may share it. (Among workers the logs interleave
//!   out of version order: only the sharing is judged then.)
//! - every message a mutation appended is in its thread as stored at the
//!   end, unless a later rewrite says it removed it or a later deletion
//!   took the thread's incarnation (R1, H5).

use std::collections::BTreeMap;

use pai_runtime::{Event, event::EventKind, store::StoredThread};

use super::facts::run_commit_version;
use super::observed::{Observed, Violation};
use super::rewrites::Erasures;
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = one_version_each(o.events, o.cluster.is_none());
    out.extend(appended_stay(o.events, o.threads));
    out
}

/// The version an event reports, and whether it is a commit of its own
/// (`false`: it announces the commit of the mutation logged before it).
fn reported(kind: &EventKind) -> Option<(u64, bool)> {
    Some(match kind {
        EventKind::Answered { version, .. } | EventKind::Mutated { version, .. } => {
            (*version, true)
        }
        EventKind::HistoryRewritten { version, kind, .. } => (*version, *kind == "regenerate"),
        EventKind::Compacted { version, .. } => (*version, false),
        kind => (run_commit_version(kind)?, true),
    })
}

/// A mutation that changed nothing reports the version it found.
fn changed(kind: &EventKind) -> bool {
    match kind {
        EventKind::Mutated {
            appended,
            metadata,
            private,
            visibility,
            ..
        } => {
            !(appended.is_empty()
                && metadata.is_empty()
                && private.is_empty()
                && visibility.is_empty())
        }
        _ => false,
    }
}

/// Each mutation that changed something is one version bump of its own;
/// `ordered`: the log is in version order per thread (one process).
fn one_version_each(events: &[Event], ordered: bool) -> Vec<Violation> {
    // Per (thread, version): the commits of their own that report it.
    let mut owners: BTreeMap<(&str, u64), Vec<&Event>> = BTreeMap::new();
    for e in events {
        if let Some((v, true)) = reported(&e.kind)
            && !matches!(e.kind, EventKind::Mutated { .. } if !changed(&e.kind))
        {
            owners.entry((e.thread_id.as_str(), v)).or_default().push(e);
        }
    }
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let Some((version, _)) = reported(&e.kind) else {
            continue;
        };
        let thread = e.thread_id.as_str();
        let run = Some(e.run_id.as_str()).filter(|r| !r.is_empty());
        let before = last.get(thread).copied();
        if changed(&e.kind) {
            if ordered && let Some(b) = before.filter(|b| version <= *b) {
                let message = format!(
                    "a mutation on thread {thread} reports version {version}, not above version {b} reported before it"
                );
                out.push(Violation::new(OracleId::H2, run, message));
            }
            let others = owners.get(&(thread, version)).map_or(0, |o| o.len() - 1);
            if others > 0 {
                let message = format!(
                    "a mutation on thread {thread} reports version {version}, which {others} other commit(s) report too"
                );
                out.push(Violation::new(OracleId::H2, run, message));
            }
        }
        let top = before.map_or(version, |b| b.max(version));
        last.insert(thread, top);
    }
    out
}

/// What a mutation appended is still stored, unless a later rewrite or
/// deletion took it.
fn appended_stay(events: &[Event], threads: &[StoredThread]) -> Vec<Violation> {
    let erased = Erasures::of(events);
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let EventKind::Mutated { appended, .. } = &e.kind else {
            continue;
        };
        let thread = e.thread_id.as_str();
        let stored = threads.iter().find(|t| t.id == thread);
        for id in appended {
            let kept = stored.is_some_and(|t| t.messages.iter().any(|m| m.id == *id));
            if !kept && !erased.excused(thread, id, i) {
                let run = Some(e.run_id.as_str()).filter(|r| !r.is_empty());
                let message = format!(
                    "message {id}, appended by a mutation on thread {thread}, is not stored"
                );
                out.push(Violation::new(OracleId::H2, run, message));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::facts::{ev, thread_of};

    fn mutated(version: u64, appended: &[&str]) -> Event {
        let mut e = ev(EventKind::Mutated {
            version,
            appended: appended.iter().map(|a| a.to_string().into()).collect(),
            metadata: vec!["k".into()],
            private: vec![],
            visibility: vec![],
        });
        e.run_id = Default::default();
        e
    }

    fn commit(version: u64) -> Event {
        ev(EventKind::CommitStep {
            step: 0,
            message: "c".into(),
            version,
        })
    }

    fn compacted(version: u64) -> Event {
        ev(EventKind::Compacted {
            step: 0,
            summary: "s".into(),
            through: 2,
            version,
        })
    }

    #[test]
    fn h2_is_quiet_on_one_bump_per_mutation() {
        let empty = ev(EventKind::Mutated {
            version: 3,
            appended: vec![],
            metadata: vec![],
            private: vec![],
            visibility: vec![],
        });
        // A compaction's `compacted` shares its mutation's version; an
        // empty mutation reports the version it found.
        let events = [commit(2), mutated(3, &[]), compacted(3), empty, commit(4)];
        assert_eq!(one_version_each(&events, true), vec![]);
    }

    #[test]
    fn h2_reports_a_version_that_does_not_rise_or_is_shared() {
        let events = [commit(2), mutated(2, &[])];
        let v = one_version_each(&events, true);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v.iter().all(|v| v.oracle == OracleId::H2));
        // Out of order, but among workers only the sharing counts.
        let events = [commit(3), mutated(2, &[])];
        assert_eq!(one_version_each(&events, true).len(), 1);
        assert_eq!(one_version_each(&events, false), vec![]);
    }

    #[test]
    fn h2_reports_an_appended_message_that_is_gone() {
        let kept = crate::oracle::facts::thread_of(vec![]);
        let events = [mutated(3, &["a"])];
        let v = appended_stay(&events, std::slice::from_ref(&kept));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("message a"), "{v:?}");
        // Unless a later rewrite removed it, or a deletion took the thread.
        let rewrite = ev(EventKind::HistoryRewritten {
            version: 4,
            kind: "regenerate",
            removed: vec!["a".into()],
            patched: vec![],
            started: None,
        });
        let events = [mutated(3, &["a"]), rewrite];
        assert_eq!(appended_stay(&events, &[thread_of(vec![])]), vec![]);
    }
}
