//! SPEC H1: every commit bumps its thread's version by one, and watchers
//! get one invalidation per commit, in version order.

use std::collections::BTreeMap;

use pai_runtime::{
    Event,
    event::{EventKind, LiveEvent},
    store::StoredThread,
};

use super::facts::run_commit_version;
use super::observed::{Observed, Violation};
use crate::scenario::{Action, OracleId};
use crate::world::CommitRecord;

/// SPEC H1, as the store reported it (both modes): every commit bumps its
/// thread's version by exactly one, counting every root change (messages,
/// metadata, visibility, run status, lease revisions), by runs, clients
/// and trusted writers alike. So the versions the store's answers report,
/// in the order it answered, are each one more than the last, and each
/// thread ends at the last. A mutation that staged nothing reports the
/// version it found without a commit.
pub(super) fn versions_reported(
    commits: &[CommitRecord],
    threads: &[StoredThread],
) -> Vec<Violation> {
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for c in commits {
        let prev = last.get(c.thread.as_str()).copied().unwrap_or(0);
        if c.request == "mutate" && c.version == prev {
            continue;
        }
        if c.version != prev + 1 {
            out.push(Violation::new(
                OracleId::H1,
                None,
                format!(
                    "{} by {} reported version {} on thread {} after version {prev}",
                    c.request, c.from, c.version, c.thread
                ),
            ));
        }
        last.insert(&c.thread, c.version.max(prev));
    }
    for t in threads {
        let reported = last.get(t.id.as_str()).copied().unwrap_or(0);
        if t.version != reported {
            out.push(Violation::new(
                OracleId::H1,
                None,
                format!(
                    "thread {} is at version {} after commits the store reported up to {reported}",
                    t.id, t.version
                ),
            ));
        }
    }
    out
}

/// SPEC H1 in one process, as the log reports it: the versions a thread's
/// events carry (commits, claims, waits, cancels, ends) rise strictly.
pub(super) fn versions(events: &[Event]) -> Vec<Violation> {
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let Some(version) = logged_version(&e.kind) else {
            continue;
        };
        let prev = last.insert(e.thread_id.as_str(), version);
        if prev.is_some_and(|p| version <= p) {
            out.push(Violation {
                oracle: OracleId::H1.into(),
                run: Some(e.run_id.to_string()),
                message: format!(
                    "version went from {} to {version} on thread {}",
                    prev.unwrap_or_default(),
                    e.thread_id
                ),
            });
        }
    }
    out
}

/// The version of the commit an event reports, if it reports one.
fn logged_version(kind: &EventKind) -> Option<u64> {
    match kind {
        EventKind::Answered { version, .. }
        | EventKind::LeaseAcquired { version, .. }
        | EventKind::LeaseRenewed { version, .. }
        | EventKind::Waiting { version, .. }
        | EventKind::Awaiting { version, .. }
        | EventKind::CancelRequested { version } => Some(*version),
        EventKind::Ended { version, .. } => *version,
        EventKind::Mutated {
            version,
            appended,
            metadata,
            private,
            visibility,
        } if !(appended.is_empty()
            && metadata.is_empty()
            && private.is_empty()
            && visibility.is_empty()) =>
        {
            Some(*version)
        }
        EventKind::HistoryRewritten { version, kind, .. } if *kind == "regenerate" => {
            Some(*version)
        }
        kind => run_commit_version(kind),
    }
}

/// SPEC H1 (watchers): each watcher gets one invalidation per commit, in
/// version order: the versions it is told about rise by exactly one, up to
/// its thread's final version. Among workers (the store's change feed)
/// also none invented: each is a version the store reported committing on
/// the thread; a run cut short by the time limit is not judged at its tail.
pub(super) fn watchers(o: &Observed<'_>) -> Vec<Violation> {
    let live = o.live;
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut out = Vec::new();
    if o.cluster.is_some() {
        out.extend(invented(o));
    }
    for (name, e) in live {
        if let LiveEvent::Committed { version, .. } = e
            && let Some(prev) = last.insert(name.as_str(), *version)
            && *version != prev + 1
        {
            out.push(Violation {
                oracle: OracleId::H1.into(),
                run: None,
                message: format!("watcher {name} was told version {version} after {prev}"),
            });
        }
    }
    for (name, version) in last {
        let thread = o.scenario.timeline.iter().find_map(|m| match &m.action {
            Action::Watch { name: n, .. } if n == name => Some(m.thread.as_str()),
            _ => None,
        });
        // A deletion closes the thread's watchers (H5).
        let closed = o.events.iter().any(|e| {
            Some(e.thread_id.as_str()) == thread
                && matches!(e.kind, EventKind::ThreadDeleted { .. })
        });
        if closed || (o.cluster.is_some() && o.cut_short) {
            continue;
        }
        let final_version = o
            .threads
            .iter()
            .find(|t| Some(t.id.as_str()) == thread)
            .map(|t| t.version);
        if final_version.is_some_and(|f| f != version) {
            let message = format!(
                "watcher {name} was last told version {version}; the thread ended at {}",
                final_version.unwrap_or_default()
            );
            out.push(Violation::new(OracleId::H1, None, message));
        }
    }
    out
}

/// Versions a watcher was told that the store never reported committing
/// on its thread.
fn invented(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    for (name, e) in o.live {
        let LiveEvent::Committed { version, .. } = e else {
            continue;
        };
        let Some(thread) = watched_thread(o, name) else {
            continue;
        };
        let known = o
            .commits
            .iter()
            .any(|c| c.thread == thread && c.version == *version);
        if !known {
            let message = format!(
                "watcher {name} was told version {version}, which the store never committed on thread {thread}"
            );
            out.push(Violation::new(OracleId::H1, None, message));
        }
    }
    out
}

fn watched_thread<'a>(o: &Observed<'a>, name: &str) -> Option<&'a str> {
    o.scenario.timeline.iter().find_map(|m| match &m.action {
        Action::Watch { name: n, .. } if n == name => Some(m.thread.as_str()),
        _ => None,
    })
}
