//! SPEC H1: every commit bumps its thread's version by one, and watchers
//! get one invalidation per commit, in version order.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{Event, EventKind, LiveEvent, StoredThread};

use super::observed::Violation;
use crate::scenario::OracleId;

/// SPEC H1: each commit bumps its thread's version by exactly one, so the
/// versions the log reports rise strictly and the final version equals the
/// number of commits (user messages plus the run commits in the log).
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
            EventKind::Respond { version, .. }
            | EventKind::CommitStep { version, .. }
            | EventKind::CommitToolResults { version, .. } => *version,
            _ => continue,
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
    out
}

/// SPEC H1 (watchers): each watcher gets one invalidation per commit, in
/// version order: the versions it is told about rise by exactly one.
pub(super) fn watchers(live: &[(String, LiveEvent)]) -> Vec<Violation> {
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
    out
}
