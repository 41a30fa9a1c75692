//! Run lanes from the runs' story: a pure function of the events and the
//! faults in order (and of the stored threads, for run records that left
//! no event). Each run's lane is built by a [`Builder`].

use std::collections::BTreeMap;

use pai_runtime::store::StoredThread;

use super::builder::Builder;
use super::model::{ThreadLanes, thread_summary};
use super::stream::{Placed, What};

/// One lane per run, grouped by thread, both in order of first appearance;
/// `workers` when several workers drive the runs.
pub(super) fn collect(
    placed: &[Placed<'_>],
    threads: &[StoredThread],
    workers: bool,
) -> Vec<ThreadLanes> {
    let mut order: Vec<(String, Vec<String>)> = Vec::new();
    let mut builders: BTreeMap<String, Builder> = BTreeMap::new();
    for p in placed {
        match p.what {
            What::Event(e) => {
                place(&mut order, &e.thread_id, &e.run_id);
                builders
                    .entry(e.run_id.to_string())
                    .or_insert_with(|| Builder::new(workers))
                    .feed(p.pos, e);
            }
            What::Fault { action, worker } => {
                for b in builders.values_mut() {
                    b.fault(p.pos, action, worker);
                }
            }
        }
    }
    for t in threads {
        for r in &t.runs {
            place(&mut order, &t.id, &r.id);
        }
    }
    order
        .into_iter()
        .map(|(thread, runs)| ThreadLanes {
            summary: threads
                .iter()
                .find(|t| t.id == thread)
                .map(thread_summary)
                .unwrap_or_default(),
            runs: runs
                .into_iter()
                .map(|run| {
                    let b = builders
                        .remove(&run)
                        .unwrap_or_else(|| Builder::new(workers));
                    b.finish(run)
                })
                .collect(),
            thread,
        })
        .collect()
}

/// Notes a run under its thread, once.
fn place(order: &mut Vec<(String, Vec<String>)>, thread: &str, run: &str) {
    let i = match order.iter().position(|(t, _)| t == thread) {
        Some(i) => i,
        None => {
            order.push((thread.to_string(), Vec::new()));
            order.len() - 1
        }
    };
    let runs = &mut order[i].1;
    if !runs.iter().any(|r| r == run) {
        runs.push(run.to_string());
    }
}
