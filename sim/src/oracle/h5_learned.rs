//! SPEC H5 among workers, from the moment a worker learns of a delete:
//! its `delete_learned` event (the store refused one of the run's requests
//! because the run's thread incarnation was deleted). From then on that
//! worker cancels the run's running tools (T8) and starts no new phase: no
//! tool of the run ends with what the tool itself returned (which
//! `after_tool_result` would see as a normal result), no tool, model call
//! or compaction starts, and nothing of the run is written. A tool that
//! ended before is fine, and so is a write the store took before the
//! delete but the worker logged after (its version is below a delete's).

use pai_runtime::{Event, event::EventKind, message::ResultSource};

use super::facts::run_commit_version;
use super::observed::Violation;
use crate::scenario::OracleId;
use crate::world::CommitRecord;

pub(super) fn judge(events: &[Event], commits: &[CommitRecord]) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut judged: Vec<(&str, &str)> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let EventKind::DeleteLearned { request, .. } = &e.kind else {
            continue;
        };
        let key = (e.thread_id.as_str(), e.run_id.as_str());
        if judged.contains(&key) {
            continue;
        }
        judged.push(key);
        let later = events[i + 1..]
            .iter()
            .filter(|x| (x.thread_id.as_str(), x.run_id.as_str()) == key)
            .filter(|x| x.worker == e.worker);
        let deletes: Vec<u64> = commits
            .iter()
            .filter(|c| c.request == "delete" && c.thread == e.thread_id)
            .map(|c| c.version)
            .collect();
        if let Some(what) = later.filter_map(|x| wrong(&x.kind, &deletes)).next() {
            let worker = e.worker.as_deref().unwrap_or("local");
            out.push(Violation::new(
                OracleId::H5,
                Some(&e.run_id),
                format!(
                    "{what} after its worker {worker} knew thread {} was deleted \
                     ({request} refused)",
                    e.thread_id
                ),
            ));
        }
    }
    out
}

/// What is wrong with an event of the run once its worker knows of the
/// delete, if anything. `deletes`: the versions of the thread's deletes.
fn wrong(kind: &EventKind, deletes: &[u64]) -> Option<String> {
    let started = matches!(
        kind,
        EventKind::ToolStart { .. }
            | EventKind::ModelCall { .. }
            | EventKind::CompactionStarted { .. }
    );
    if started {
        return Some(format!("{} started", kind.name()));
    }
    if let EventKind::ToolEnd { result, .. } = kind
        && matches!(
            result.source,
            ResultSource::Tool | ResultSource::Fail | ResultSource::Throw
        )
    {
        return Some(format!(
            "tool call {} ran to its end (not cancelled)",
            result.call_id
        ));
    }
    let version = match kind {
        EventKind::Waiting { version, .. } | EventKind::Mutated { version, .. } => Some(*version),
        other if run_commit_version(other).is_some() => run_commit_version(other),
        _ => return None,
    };
    // A write the store took before a delete, logged late, is no fault.
    let landed_before = version.is_some_and(|v| deletes.iter().any(|d| v < *d));
    (!landed_before).then(|| format!("{} written", kind.name()))
}

#[cfg(test)]
mod tests {
    use pai_runtime::{hook::ToolResult, message::ToolStatus};
    use serde_json::Value;

    use super::*;

    fn on(worker: &str, kind: EventKind) -> Event {
        Event {
            at: 0,
            thread_id: "t".into(),
            run_id: "r".into(),
            worker: Some(worker.into()),
            kind,
        }
    }

    fn learned() -> Event {
        on(
            "w1",
            EventKind::DeleteLearned {
                request: "renew".into(),
                incarnation: Some(1),
            },
        )
    }

    fn tool_end(source: ResultSource) -> Event {
        let result = ToolResult {
            call_id: "c1".into(),
            tool: "slow".into(),
            status: ToolStatus::Error,
            source,
            output: Value::Null,
        };
        on(
            "w1",
            EventKind::ToolEnd {
                step: 0,
                result,
                detail: None,
            },
        )
    }

    fn commit(version: u64) -> Event {
        on(
            "w1",
            EventKind::CommitToolResults {
                step: 0,
                message: "m".into(),
                version,
                metadata: false,
            },
        )
    }

    fn delete(version: u64) -> CommitRecord {
        CommitRecord {
            from: "client".into(),
            request: "delete",
            thread: "t".into(),
            version,
            after_event: 0,
        }
    }

    #[test]
    fn a_tool_ended_before_the_worker_learned_is_fine() {
        let events = [tool_end(ResultSource::Tool), learned()];
        assert_eq!(judge(&events, &[delete(5)]), vec![]);
        let cancelled = [learned(), tool_end(ResultSource::Cancelled)];
        assert_eq!(judge(&cancelled, &[delete(5)]), vec![]);
    }

    #[test]
    fn a_tool_that_runs_to_its_end_after_the_worker_learned_is_caught() {
        let events = [learned(), tool_end(ResultSource::Tool)];
        let v = judge(&events, &[delete(5)]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("ran to its end"), "{v:?}");
    }

    #[test]
    fn a_write_counts_from_the_delete_s_version() {
        assert_eq!(judge(&[learned(), commit(4)], &[delete(5)]), vec![]);
        let v = judge(&[learned(), commit(6)], &[delete(5)]);
        assert!(
            v[0].message.contains("commit_tool_results written"),
            "{v:?}"
        );
    }

    #[test]
    fn only_the_learning_worker_is_judged() {
        let mut other = tool_end(ResultSource::Tool);
        other.worker = Some("w2".into());
        assert_eq!(judge(&[learned(), other], &[delete(5)]), vec![]);
    }
}
