//! SPEC H1: every commit bumps its thread's version by one, and watchers
//! get one invalidation per commit, in version order.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{Event, EventKind, LiveEvent, StoredThread};

use super::facts::run_commit_version;
use super::observed::{ClusterObs, Observed, Violation};
use crate::scenario::{Action, OracleId};
use crate::world::ClusterEvent;

/// SPEC H1: each commit bumps its thread's version by exactly one, so the
/// versions the log reports rise strictly and the final version equals the
/// number of commits (user messages plus the run commits in the log:
/// messages, run metadata, hidden context messages).
pub(super) fn versions(events: &[Event], threads: &[StoredThread]) -> Vec<Violation> {
    let mut commits: BTreeMap<&str, u64> = BTreeMap::new();
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut user_messages = BTreeSet::new();
    let mut out = Vec::new();
    for e in events {
        let version = match &e.kind {
            // A user message (sent or steering) is one commit; the log has no
            // version for it. A run admitted for an earlier steering message
            // names a message already counted.
            EventKind::Admitted { trigger: m } | EventKind::Steered { message: m } => {
                if user_messages.insert((e.thread_id.as_str(), m.as_str())) {
                    *commits.entry(e.thread_id.as_str()).or_default() += 1;
                }
                continue;
            }
            // A client's answer to a waiting call is one commit (T9).
            EventKind::Answered { version, .. } => *version,
            // A mutation is one commit (H2); a visibility rewrite and a
            // compaction report the version of the mutation logged just
            // before them; a regeneration is its own commit; a delete is one
            // commit the log gives no version for.
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
                *version
            }
            EventKind::HistoryRewritten { version, kind, .. } if *kind == "regenerate" => *version,
            EventKind::ThreadDeleted { .. } => {
                *commits.entry(e.thread_id.as_str()).or_default() += 1;
                continue;
            }
            kind => match run_commit_version(kind) {
                Some(v) => v,
                None => continue,
            },
        };
        *commits.entry(e.thread_id.as_str()).or_default() += 1;
        let prev = last.insert(e.thread_id.as_str(), version);
        if prev.is_some_and(|p| version <= p) {
            out.push(Violation {
                oracle: OracleId::H1,
                run: Some(e.run_id.clone()),
                message: format!(
                    "version went from {} to {version} on thread {}",
                    prev.unwrap_or_default(),
                    e.thread_id
                ),
            });
        }
    }
    final_versions(&commits, threads, &mut out);
    out
}

/// SPEC H1 among workers: a commit whose answer never reached its process
/// is in no event, and processes' logs interleave out of version order; so
/// the commits are counted from what the store applied (client writes, run
/// writes that append or write metadata, and a run's own mutations that
/// committed a version), and each thread's final version must equal them.
pub(super) fn versions_in_store(c: &ClusterObs, threads: &[StoredThread]) -> Vec<Violation> {
    let mut commits: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &c.log {
        let thread = match &r.what {
            ClusterEvent::Stored {
                thread, request, ..
            } if *request == "submit" || *request == "answer" => thread,
            ClusterEvent::Wrote {
                thread, request, ..
            } if ["append", "commit_resumed", "set_run_metadata"].contains(request) => thread,
            ClusterEvent::Wrote {
                thread,
                committed: true,
                ..
            } => thread,
            _ => continue,
        };
        *commits.entry(thread.as_str()).or_default() += 1;
    }
    let mut out = Vec::new();
    final_versions(&commits, threads, &mut out);
    out
}

/// Each thread's final version equals the commits counted for it.
fn final_versions(
    commits: &BTreeMap<&str, u64>,
    threads: &[StoredThread],
    out: &mut Vec<Violation>,
) {
    for t in threads {
        let n = commits.get(t.id.as_str()).copied().unwrap_or(0);
        if t.version != n {
            out.push(Violation {
                oracle: OracleId::H1,
                run: None,
                message: format!(
                    "thread {} is at version {} after {n} commits",
                    t.id, t.version
                ),
            });
        }
    }
}

/// SPEC H1 (watchers): each watcher gets one invalidation per commit, in
/// version order: the versions it is told about rise by exactly one, up to
/// its thread's final version.
pub(super) fn watchers(o: &Observed<'_>) -> Vec<Violation> {
    let live = o.live;
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for (name, e) in live {
        if let LiveEvent::Committed { version, .. } = e
            && let Some(prev) = last.insert(name.as_str(), *version)
            && *version != prev + 1
        {
            out.push(Violation {
                oracle: OracleId::H1,
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
        if closed {
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
