//! Workers and faults for a generated case (SPEC D8): two or three workers,
//! lease and network settings, and crashes, partitions, holds and pauses at
//! random virtual times. Drawn from a stream of their own, derived from the
//! case's seed, so a case without workers is what it was before they
//! existed; cases with them drop their watchers (not available among
//! workers).

use super::draw::Gen;
use crate::scenario::{ClusterSpec, FaultSpec, HostOrder, ScenarioSpec, TimelineEntry, WorkerSpec};

/// Mixed into a case's seed for the cluster's own stream.
const STREAM: u64 = 0xC1A5_7E12_5EED_0001;

/// Adds workers and faults to about a third of the cases.
pub(super) fn cluster(seed: u64, spec: &mut ScenarioSpec) {
    let mut g = Gen::new(seed ^ STREAM);
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
    spec.timeline.retain(|e| e.watch.is_none());
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
}

/// One crash, partition, hold or pause of a worker.
fn fault(g: &mut Gen, workers: &[String]) -> FaultSpec {
    let worker = g.pick(workers).clone();
    let at_ms = g.range(0, 600);
    let lasts = g.range(20, 1_200);
    match g.index(4) {
        // w1 always comes back, so some worker is left to make progress.
        0 => FaultSpec::Crash {
            restart_after_ms: match worker == workers[0] {
                true => Some(lasts),
                false => g.maybe(75, |_| lasts),
            },
            worker,
            at_ms,
        },
        1 => FaultSpec::Partition {
            worker,
            at_ms,
            heal_after_ms: lasts,
        },
        2 => FaultSpec::Hold {
            worker,
            at_ms,
            release_after_ms: lasts,
        },
        _ => FaultSpec::Pause {
            worker,
            at_ms,
            for_ms: lasts,
        },
    }
}
