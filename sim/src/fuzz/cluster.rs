//! Workers and faults for a generated case (SPEC D8): two or three workers,
//! lease and network settings, and crashes, partitions, holds and pauses at
//! random virtual times or at a worker's store request (its first few
//! claims, renewals, writes and waits: the lease instants, issue 25; often
//! the renewal just before tools start, K3). Drawn from a stream of their
//! own, derived from the case's seed, so a case without workers is what
//! it was before they existed. Among workers a watcher hears the store's change feed: the
//! case's watchers keep their place but lose their `live` transforms (live
//! text stays in one process), and half the cases add one more watcher on
//! the thread of the first send (`cross.watch_among_workers`).

use super::draw::{Family, Features, Gen};
use crate::scenario::{
    ClusterSpec, FaultSpec, HostOrder, RequestAt, ScenarioSpec, TimelineEntry, WorkerSpec,
};

/// Mixed into a case's seed for the cluster's own stream.
const STREAM: u64 = 0xC1A5_7E12_5EED_0001;

/// Adds workers and faults to about a third of the cases.
pub(super) fn cluster(seed: u64, features: Features, spec: &mut ScenarioSpec) {
    let mut g = Gen::new(seed ^ STREAM, features);
    if !g.chance(35) {
        return;
    }
    let n = g.range(2, 4);
    spec.workers = (1..=n)
        .map(|i| WorkerSpec {
            name: format!("w{i}"),
            start_ms: g.maybe(30, |g| g.range(1, 80)).unwrap_or(0),
        })
        .collect();
    let lease_ms = g.range(60, 400);
    spec.cluster = Some(ClusterSpec {
        lease_ms,
        renew_ms: g.maybe(25, |g| g.range(1, lease_ms - 1)),
        request_timeout_ms: *g.pick(&[20, 100, 2_000]),
        poll_ms: g.range(1, 30),
        max_latency_ms: g.range(0, 6),
        liveness_ms: 5_000,
        host_order: HostOrder::Seeded,
    });
    for e in spec.timeline.iter_mut().filter(|e| e.watch.is_some()) {
        e.live.clear();
    }
    if !spec
        .timeline
        .iter()
        .any(|e| e.send.is_some() || e.steer.is_some())
    {
        spec.timeline.push(TimelineEntry {
            send: Some(g.text(3)),
            ..TimelineEntry::default()
        });
    }
    let workers: Vec<String> = spec.workers.iter().map(|w| w.name.clone()).collect();
    for _ in 0..g.range(0, 4) {
        spec.faults.push(fault(&mut g, &workers));
    }
    renew_before_tools(&mut g, spec, &workers);
    if g.chance(50) {
        let thread = spec
            .timeline
            .iter()
            .find(|e| e.send.is_some())
            .map_or_else(|| "main".to_string(), |e| e.thread.clone());
        spec.timeline.push(TimelineEntry {
            at: g.range(0, 120),
            thread,
            watch: Some("feed".into()),
            ..TimelineEntry::default()
        });
    }
}

/// In a third of the cases whose model calls tools: a hold or partition of
/// a worker at one of its first renewals, with background renewals now and
/// then pushed late, so the renewal that confirms the lease just before
/// tools start is often the one cut off (K3; `cross.renew_before_tools`).
fn renew_before_tools(g: &mut Gen, spec: &mut ScenarioSpec, workers: &[String]) {
    let tools = spec.model.turns.iter().any(|t| !t.tool_calls.is_empty());
    if !tools || !g.chance(33) {
        return;
    }
    if let Some(c) = spec.cluster.as_mut().filter(|_| g.chance(50)) {
        c.renew_ms = Some(c.lease_ms - 1);
    }
    let worker = g.pick(workers).clone();
    let at = Some(RequestAt {
        worker: None,
        request: "renew".to_string(),
        nth: g.range(1, 3) as usize,
        lost: g.chance(30),
    });
    let lasts = g.range(20, 1_200);
    spec.faults.push(match g.chance(50) {
        true => FaultSpec::Hold {
            worker,
            at_ms: None,
            at,
            release_after_ms: lasts,
        },
        false => FaultSpec::Partition {
            worker,
            at_ms: None,
            at,
            heal_after_ms: lasts,
        },
    });
}

/// The request kinds a fault is placed at: a worker's lease instants and
/// its writes (names from the runtime's list, `StoreRequest::KINDS`).
const PLACED_AT: &[&str] = &[
    "claim",
    "renew",
    "append",
    "wait",
    "await",
    "finish",
    "next_episode",
    "take_steer",
    "take_anchor",
    "run_messages",
    "history",
    "mutate",
    "commit_resumed",
];

/// Where a fault is placed: at a time, or (two in five) at one of a
/// worker's first few requests of a kind, often its own, now and then
/// dropped on the way.
fn placement(g: &mut Gen, worker: &str, workers: &[String]) -> (Option<u64>, Option<RequestAt>) {
    let at_ms = g.range(0, 600);
    let at = g.maybe(40, |g| {
        let by = g.pick(workers).clone();
        RequestAt {
            worker: (by != worker && g.chance(40)).then_some(by),
            request: g.pick(PLACED_AT).to_string(),
            nth: g.range(1, 3) as usize,
            lost: g.chance(30),
        }
    });
    match at {
        Some(at) => (None, Some(at)),
        None => (Some(at_ms), None),
    }
}

/// One crash, partition, hold or pause of a worker.
fn fault(g: &mut Gen, workers: &[String]) -> FaultSpec {
    let worker = g.pick(workers).clone();
    let (at_ms, at) = placement(g, &worker, workers);
    let lasts = g.range(20, 1_200);
    match g.kind(Family::Fault, &[1; 4]) {
        // w1 always comes back, so some worker is left to make progress.
        0 => FaultSpec::Crash {
            restart_after_ms: match worker == workers[0] {
                true => Some(lasts),
                false => g.maybe(75, |_| lasts),
            },
            worker,
            at_ms,
            at,
        },
        1 => FaultSpec::Partition {
            worker,
            at_ms,
            at,
            heal_after_ms: lasts,
        },
        2 => FaultSpec::Hold {
            worker,
            at_ms,
            at,
            release_after_ms: lasts,
        },
        _ => FaultSpec::Pause {
            worker,
            at_ms,
            at,
            for_ms: lasts,
        },
    }
}
