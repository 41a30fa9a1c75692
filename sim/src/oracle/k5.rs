//! SPEC K5: a call whose result is committed never runs again, and no
//! call's result is committed twice; every attempt of a call carries the
//! same idempotency key, its run id and call id.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{Event, Part, Role, event::EventKind, store::StoredThread};

use super::facts::stored;
use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = results_once(o.threads);
    // Among workers, a stale worker's tool starts count too: a side effect
    // is one whoever causes it.
    let events = o.cluster.map_or(o.events, |c| &c.raw_events);
    out.extend(no_run_after_commit(events, o.threads));
    out
}

/// Across each stored thread, no call has two results.
fn results_once(threads: &[StoredThread]) -> Vec<Violation> {
    let mut out = Vec::new();
    for t in threads {
        let mut count: BTreeMap<&str, (usize, Option<&str>)> = BTreeMap::new();
        for m in t.messages.iter().filter(|m| m.role == Role::Tool) {
            for id in result_ids(&m.parts) {
                let c = count.entry(id).or_insert((0, m.pai.run_id.as_deref()));
                c.0 += 1;
            }
        }
        for (call, (n, run)) in count.into_iter().filter(|(_, (n, _))| *n > 1) {
            let message = format!("call {call} has {n} results on thread {}", t.id);
            out.push(Violation::new(OracleId::K5, run, message));
        }
    }
    out
}

/// No tool starts for a call whose result a commit already stored, and
/// every start's idempotency key is its run id and call id.
fn no_run_after_commit(events: &[Event], threads: &[StoredThread]) -> Vec<Violation> {
    let messages = stored(threads);
    let mut committed: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut out = Vec::new();
    for e in events {
        let (thread, run) = (e.thread_id.as_str(), e.run_id.as_str());
        match &e.kind {
            EventKind::CommitToolResults { message, .. } => {
                if let Some(m) = messages.get(&(thread, message.as_str())) {
                    committed.extend(result_ids(&m.parts).map(|c| (thread, c)));
                }
            }
            EventKind::ToolStart {
                call_id,
                idempotency_key,
                ..
            } => {
                if committed.contains(&(thread, call_id.as_str())) {
                    let message = format!("call {call_id} started after its result was committed");
                    out.push(Violation::new(OracleId::K5, Some(run), message));
                }
                let want = format!("{run}/{call_id}");
                if *idempotency_key != want {
                    let message = format!(
                        "call {call_id} started with idempotency key {idempotency_key:?}, not {want:?}"
                    );
                    out.push(Violation::new(OracleId::K5, Some(run), message));
                }
            }
            _ => {}
        }
    }
    out
}

/// The call ids of the results among a message's parts.
fn result_ids(parts: &[Part]) -> impl Iterator<Item = &str> {
    parts.iter().filter_map(|p| match p {
        Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use pai_runtime::{
        Message,
        message::{PaiMeta, Producer, ResultSource, ToolStatus, Visibility},
    };
    use serde_json::Value;

    use super::*;
    use crate::oracle::facts::ev;

    fn thread(results: &[&str]) -> StoredThread {
        let part = |c: &&str| Part::ToolResult {
            call_id: (*c).into(),
            tool: "x".into(),
            status: ToolStatus::Output,
            source: ResultSource::Tool,
            output: Value::Null,
        };
        let message = Message {
            id: "m".into(),
            seq: 1,
            role: Role::Tool,
            parts: results.iter().map(part).collect(),
            visibility: Visibility::ALL,
            pai: PaiMeta::new(Producer::Tool, Some("r"), Some(0), 0),
        };
        StoredThread {
            id: "t".into(),
            agent: "a".into(),
            owner: "o".into(),
            incarnation: 1,
            version: 1,
            messages: vec![message],
            metadata: Default::default(),
            private_metadata: Default::default(),
            runs: vec![],
            lease_holder: None,
            lease_token: 0.into(),
        }
    }

    fn start(call: &str, key: &str) -> Event {
        ev(EventKind::ToolStart {
            step: 0,
            call_id: call.into(),
            tool: "x".into(),
            input: Value::Null,
            idempotency_key: key.into(),
        })
    }

    /// SPEC K5: a call with two results is reported.
    #[test]
    fn k5_a_result_committed_twice() {
        assert!(results_once(&[thread(&["a", "b"])]).is_empty());
        let v = results_once(&[thread(&["a", "b", "a"])]);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].oracle, OracleId::K5);
    }

    /// SPEC K5: no start after the commit of the call's result; the key is
    /// run id and call id.
    #[test]
    fn k5_no_start_after_commit_and_the_same_key() {
        let commit = ev(EventKind::CommitToolResults {
            step: 0,
            message: "m".into(),
            version: 1,
            metadata: false,
        });
        let t = [thread(&["a"])];
        let fine = [start("a", "r/a"), commit.clone(), start("b", "r/b")];
        assert!(no_run_after_commit(&fine, &t).is_empty());
        let v = no_run_after_commit(&[commit, start("a", "r/a"), start("b", "b")], &t);
        let messages: Vec<&str> = v.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "call a started after its result was committed",
                "call b started with idempotency key \"b\", not \"r/b\"",
            ]
        );
    }
}
