//! Two crossings among workers that timed actions rarely reach by chance
//! (issue 38), each drawn from a stream of its own so a case that does
//! not take them is what it was before:
//! - a cancel while a tool runs: a called backend tool made slow, a
//!   cancel timed into it, and now and then renewals so rare that the
//!   holder hears of the cancel at a write (K6, T8;
//!   `cross.cancel_while_a_tool_runs_among_workers`);
//! - faults around a compaction's read and write with a delete nearby: the
//!   compaction helper kept (or added) with a slow summary, the thread
//!   deleted a little after the first send, and a fault placed at a
//!   worker's `inspect` (compaction's read of the thread) or `mutate` (its
//!   write) (H5, C1; `cross.fault_near_a_deleted_compaction`).

use super::draw::{Features, Gen};
use crate::hooks::{CompactionSpec, HookSpec};
use crate::scenario::{
    CancelSpec, FaultSpec, LifecycleEntry, RequestAt, ScenarioSpec, TimelineEntry, ToolCallSpec,
    TurnSpec,
};

/// Mixed into a case's seed for the cancel's stream.
const CANCEL: u64 = 0xCA9C_E1ED_7001_0038;
/// Mixed into a case's seed for the compaction's stream.
const COMPACTION: u64 = 0xC0BB_AC7D_E1E7_0038;

/// Among workers, in two cases in five whose script calls a backend tool.
pub(super) fn cancel_mid_tool(seed: u64, features: Features, spec: &mut ScenarioSpec) {
    let Some(cluster) = spec.cluster.as_mut() else {
        return;
    };
    let mut g = Gen::new(seed ^ CANCEL, features);
    if !g.chance(40) {
        return;
    }
    let called: Vec<String> = spec
        .model
        .turns
        .iter()
        .flat_map(|t| &t.tool_calls)
        .map(|c| c.tool.clone())
        .collect();
    let mut backend = spec.agent.tools.iter_mut().filter_map(|t| t.scripted_mut());
    let Some(tool) =
        backend.find(|t| !t.client && t.approval.is_never() && called.contains(&t.name))
    else {
        return;
    };
    tool.latency_ms = g.range(150, 500);
    let name = tool.name.clone();
    if g.chance(50) {
        cluster.renew_ms = Some(cluster.lease_ms - 1);
    }
    let Some((at, thread)) = first_send(spec) else {
        return;
    };
    // The first model call starts the slow tool; the cancel comes while
    // it likely runs.
    let first = TurnSpec {
        tool_calls: vec![ToolCallSpec {
            tool: name,
            input: serde_json::json!({ "q": g.text(1) }),
        }],
        latency_ms: g.range(0, 20),
        ..TurnSpec::default()
    };
    spec.model.turns.insert(0, first);
    spec.timeline.push(TimelineEntry {
        at: at + g.range(60, 260),
        thread,
        cancel: CancelSpec::Current(true),
        ..TimelineEntry::default()
    });
}

/// Among workers, in a quarter of the cases: keeps the compaction helper
/// (the facade generator leaves it out among workers otherwise), or adds
/// one. Returns whether the case keeps it.
pub(super) fn compaction_near_delete(
    seed: u64,
    features: Features,
    spec: &mut ScenarioSpec,
) -> bool {
    if spec.workers.is_empty() {
        return false;
    }
    let mut g = Gen::new(seed ^ COMPACTION, features);
    if !g.chance(25) {
        return false;
    }
    let Some((at, thread)) = first_send(spec) else {
        return false;
    };
    slow_compaction(&mut g, spec);
    let sends_on_thread = spec
        .timeline
        .iter()
        .filter(|e| e.send.is_some() && e.thread == thread)
        .count();
    if sends_on_thread < 2 {
        // A second exchange puts the thread past the threshold.
        spec.timeline.push(TimelineEntry {
            at: at + g.range(50, 250),
            thread: thread.clone(),
            send: Some(g.text(2)),
            ..TimelineEntry::default()
        });
    }
    spec.timeline.push(TimelineEntry {
        at: at + g.range(40, 500),
        thread,
        delete_thread: true,
        ..TimelineEntry::default()
    });
    // Whichever worker compacts meets a fault at its read or write.
    let workers: Vec<String> = spec.workers.iter().map(|w| w.name.clone()).collect();
    for worker in &workers {
        let fault = near_compaction(&mut g, worker, worker == &workers[0]);
        spec.faults.push(fault);
    }
    true
}

/// The case's compaction helper, slow and past a low threshold; added
/// when the case has none.
fn slow_compaction(g: &mut Gen, spec: &mut ScenarioSpec) {
    let latency_ms = g.range(30, 200);
    for h in &mut spec.lifecycle {
        if let LifecycleEntry::Library(HookSpec::Compaction(c)) = h {
            c.latency_ms = latency_ms;
            return;
        }
    }
    spec.lifecycle
        .push(LifecycleEntry::Library(HookSpec::Compaction(
            CompactionSpec {
                name: None,
                threshold: 2,
                keep: g.index(2),
                summaries: Vec::new(),
                fail_at: Vec::new(),
                latency_ms,
            },
        )));
}

/// A crash, partition, hold or pause of `worker` at its first or second
/// `inspect` (compaction reads the thread) or `mutate` (it writes the
/// summary and cursor), now and then dropped on the way. The `first`
/// worker always comes back, so some worker makes progress.
fn near_compaction(g: &mut Gen, worker: &str, first: bool) -> FaultSpec {
    let worker = worker.to_string();
    let at = Some(RequestAt {
        worker: None,
        request: g.pick(&["inspect", "mutate"]).to_string(),
        nth: g.range(1, 3) as usize,
        lost: g.chance(30),
    });
    let lasts = g.range(20, 800);
    let kind = g.index(4);
    let restart = match (kind, first) {
        (0, true) => Some(lasts),
        (0, false) => g.maybe(75, |_| lasts),
        _ => None,
    };
    super::taker::placed(kind, worker, at, lasts, restart)
}

/// When the case's first send happens, and on which thread.
fn first_send(spec: &ScenarioSpec) -> Option<(u64, String)> {
    spec.timeline
        .iter()
        .filter(|e| e.send.is_some())
        .min_by_key(|e| e.at)
        .map(|e| (e.at, e.thread.clone()))
}
