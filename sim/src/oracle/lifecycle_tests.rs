//! The lifecycle oracle's feeding among workers: the store's records
//! merged with every worker's events by `after_event`, the run's facts
//! taken from the store's log, the cancel's version from its client.

use pai_runtime::event::{EventKind, Transition};
use pai_runtime::hook::AfterStepDecision;
use pai_runtime::store::FencingToken;

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

fn wrote(request: &'static str, after_event: usize, messages: &[&str]) -> ClusterRecord {
    ClusterRecord {
        at: 0,
        after_event,
        what: ClusterEvent::Wrote {
            from: "w1".into(),
            request,
            thread: "t".into(),
            run: "r".into(),
            token: FencingToken::new(1),
            next_token: None,
            releases: request == "wait",
            admitted: None,
            messages: messages.iter().map(|m| m.to_string()).collect(),
            waits_on: Vec::new(),
            committed: false,
            version: None,
        },
    }
}

/// w1 commits step 0 ("m0") and decides it waits; w2 takes the run over
/// and runs `prepare_run`. `waited`: the store recorded w1's wait.
fn takeover(waited: bool) -> ClusterObs {
    let claim = |episode, version| EventKind::LeaseAcquired {
        episode,
        token: FencingToken::new(episode.into()),
        version,
    };
    let raw_events = vec![
        on("w1", claim(1, 2)),
        on(
            "w1",
            EventKind::CommitStep {
                step: 0,
                message: "m0".into(),
                version: 3,
            },
        ),
        on(
            "w1",
            EventKind::AfterStep {
                step: 0,
                decision: AfterStepDecision::Natural,
                transition: Transition::Wait,
            },
        ),
        on(
            "w2",
            EventKind::TakenOver {
                from: Some("w1".into()),
                stale_token: FencingToken::new(1),
                expired_at: 0,
                next_step: 1,
            },
        ),
        on("w2", claim(2, 5)),
        on(
            "w2",
            EventKind::PrepareRun {
                route: pai_runtime::model::Route::new("small"),
                overlay: 0,
                latest_user: None,
                resumed: true,
            },
        ),
    ];
    let mut log = vec![wrote("append", 1, &["m0"])];
    if waited {
        log.push(wrote("wait", 3, &[]));
    }
    ClusterObs {
        raw_events,
        log,
        ..ClusterObs::default()
    }
}

#[test]
fn k3_a_wait_the_store_recorded_settles_the_step_for_the_taker() {
    let c = takeover(true);
    assert_eq!(judge(among_workers(&c, &[])), vec![]);
}

#[test]
fn k3_a_decision_only_the_old_holder_heard_does_not_settle_the_step() {
    let c = takeover(false);
    let v = judge(among_workers(&c, &[]));
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].message.contains("prepare_run by w2"), "{v:?}");
    assert!(v[0].message.contains("step 0's transition"), "{v:?}");
}

#[test]
fn k6_a_holder_hears_the_cancel_at_a_renewal_answered_after_it() {
    let raw_events = vec![
        on(
            "w1",
            EventKind::LeaseAcquired {
                episode: 1,
                token: FencingToken::new(1),
                version: 2,
            },
        ),
        on("client", EventKind::CancelRequested { version: 3 }),
        on(
            "w1",
            EventKind::LeaseRenewed {
                token: FencingToken::new(1),
                version: 4,
            },
        ),
        on(
            "w1",
            EventKind::ToolStart {
                step: 0,
                call_id: "c1".into(),
                tool: "x".into(),
                input: serde_json::Value::Null,
                idempotency_key: "r/c1".into(),
            },
        ),
    ];
    let cancel = ClusterRecord {
        at: 0,
        after_event: 1,
        what: ClusterEvent::Stored {
            from: "client".into(),
            thread: "t".into(),
            write: ClientWrite::Cancel(Some("r".into())),
        },
    };
    let c = ClusterObs {
        raw_events,
        log: vec![cancel],
        ..ClusterObs::default()
    };
    let v = judge(among_workers(&c, &[]));
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].message.starts_with("tool_start step=0 by w1"), "{v:?}");
    assert!(v[0].message.contains("at v3 (at its answer of v4"), "{v:?}");
}
