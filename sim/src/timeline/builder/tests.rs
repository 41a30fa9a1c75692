//! The lane builder's tests: stories fed event by event, and the spans
//! and marks they must leave.

use pai_runtime::{
    Event,
    event::EventKind,
    hook::ToolResult,
    message::{ResultSource, ToolStatus},
};
use serde_json::json;

use super::*;

/// Feeds `(worker, kind)` events, one millisecond apart, with a fault
/// where the kind is `None`.
fn lane(workers: bool, story: Vec<(&str, Option<EventKind>)>) -> RunLane {
    let mut b = Builder::new(workers);
    for (n, (worker, kind)) in story.into_iter().enumerate() {
        let pos = Pos {
            at: n as u64,
            rank: 0,
        };
        match kind {
            Some(kind) => b.feed(
                pos,
                &Event {
                    at: pos.at,
                    thread_id: "t".into(),
                    run_id: "r".into(),
                    worker: workers.then(|| worker.to_string()),
                    kind,
                },
            ),
            None => b.fault(pos, FaultAction::Crash, worker),
        }
    }
    b.finish("r".into())
}

fn acquired(episode: u32) -> Option<EventKind> {
    Some(EventKind::LeaseAcquired {
        version: 1,
        episode,
        token: u64::from(episode).into(),
    })
}

fn start() -> Option<EventKind> {
    Some(EventKind::ToolStart {
        step: 0,
        call_id: "c1".into(),
        tool: "charge".into(),
        input: json!({}),
        idempotency_key: "r/c1".into(),
    })
}

fn end() -> Option<EventKind> {
    Some(EventKind::ToolEnd {
        step: 0,
        result: ToolResult {
            call_id: "c1".into(),
            tool: "charge".into(),
            status: ToolStatus::Output,
            source: ResultSource::Tool,
            output: json!({}),
        },
        detail: None,
    })
}

fn taken_over() -> Option<EventKind> {
    Some(EventKind::TakenOver {
        from: Some("w1".into()),
        stale_token: 1.into(),
        expired_at: 3,
        next_step: 0,
    })
}

fn commit() -> Option<EventKind> {
    Some(EventKind::CommitToolResults {
        step: 0,
        message: "m".into(),
        version: 3,
        metadata: false,
    })
}

fn items(lane: &RunLane, kind: Kind) -> Vec<&Item> {
    let rows = lane.rows.iter().flat_map(|r| &r.items);
    rows.filter(|i| i.kind == kind).collect()
}

#[test]
fn a_crash_cuts_the_holder_s_call_and_the_taker_s_result_is_its_own() {
    let lane = lane(
        true,
        vec![
            ("w1", acquired(1)),
            ("w1", start()),
            ("w1", None),
            ("w2", taken_over()),
            ("w2", acquired(2)),
            ("w2", start()),
            ("w2", end()),
            ("w2", commit()),
        ],
    );
    let h: Vec<(&str, &[u32])> = lane
        .holders
        .iter()
        .map(|h| (h.worker.as_str(), &h.episodes[..]))
        .collect();
    assert_eq!(h, [("w1", &[1][..]), ("w2", &[2][..])]);
    let episodes = items(&lane, Kind::Episode);
    assert_eq!(episodes[0].status, "lost");
    assert!(episodes[0].label.ends_with("· w1 ✗ taken over by w2"));
    let tools = items(&lane, Kind::Tool);
    assert_eq!(tools.len(), 2);
    assert_eq!(
        (tools[0].status, tools[0].end.map(|p| p.at)),
        ("cut", Some(2))
    );
    assert!(tools[0].label.ends_with("✗ no result from w1"));
    assert!(tools[0].detail.contains("committed by w2 in v3"));
    assert_eq!(tools[1].status, "output");
    assert_eq!(tools[1].worker.as_deref(), Some("w2"));
    assert_eq!(items(&lane, Kind::Fault).len(), 1);
}

#[test]
fn a_result_ended_but_not_committed_before_the_lease_is_lost_says_so() {
    let lost = Some(EventKind::LeaseLost {
        token: 1.into(),
        reason: "store unavailable".into(),
    });
    let lane = lane(
        true,
        vec![
            ("w1", acquired(1)),
            ("w1", start()),
            ("w1", end()),
            ("w1", lost),
        ],
    );
    let tools = items(&lane, Kind::Tool);
    assert_eq!(tools[0].status, "uncommitted");
    assert!(tools[0].label.ends_with("→ output · never committed"));
    let episode = items(&lane, Kind::Episode)[0];
    assert!(episode.label.ends_with("✗ lease lost"));
    assert!(
        episode
            .detail
            .contains("w1 lost the lease: store unavailable")
    );
}

#[test]
fn one_process_is_local_and_its_calls_end_as_they_did() {
    let lane = lane(
        false,
        vec![
            ("", acquired(1)),
            ("", start()),
            ("", end()),
            ("", commit()),
        ],
    );
    assert_eq!(lane.holders[0].worker, "local");
    let tools = items(&lane, Kind::Tool);
    assert_eq!(tools[0].label, "charge → output");
    assert_eq!(tools[0].worker, None);
    let episode = items(&lane, Kind::Episode)[0];
    assert!(
        episode.label.starts_with("episode 1 · token 1 ("),
        "no worker named"
    );
    assert!(!lane.rows.iter().any(|r| r.name == "holder's faults"));
}
