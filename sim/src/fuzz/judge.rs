//! Judging one case: run it twice, and name the first way it failed.

use std::fmt;
use std::path::Path;

use super::coverage::Coverage;
use crate::registry::Registry;
use crate::report::Report;
use crate::run::{simulate_against, simulate_on};
use crate::scenario::{OracleName, Scenario, ScenarioSpec};
use crate::world::Rng;
use crate::world::StoreKind;

/// Why a case failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// An oracle reported a violation (a built-in one or a harness's).
    Oracle(OracleName),
    /// Two runs with one seed differed (D4).
    Nondeterministic,
    /// The run on `store` and the run on `against` differed: transcript,
    /// event log or stored threads (D1 across stores, `--differential`).
    Differential {
        /// The store the case's first run kept its threads in.
        store: StoreKind,
        /// The other store, whose run differed from the first.
        against: StoreKind,
    },
    /// The runtime's own step loop panicked.
    RuntimePanic,
    /// The case was not idle at the virtual-time limit.
    TimeLimit,
    /// The case could not be built or run at all.
    Error(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Oracle(o) => write!(f, "oracle {o}"),
            Failure::Nondeterministic => f.write_str("D4 (two runs differ)"),
            Failure::Differential { store, against } => write!(
                f,
                "D1 differential ({} and {} differ)",
                store.as_str(),
                against.as_str()
            ),
            Failure::RuntimePanic => f.write_str("runtime panic"),
            Failure::TimeLimit => f.write_str("virtual-time limit"),
            Failure::Error(e) => write!(f, "error: {e}"),
        }
    }
}

impl Failure {
    /// What `pai-sim run FILE` needs besides the store to show this failure:
    /// a differential one shows only when the run is compared across stores.
    pub fn replay_flags(&self) -> &'static str {
        match self {
            Failure::Differential { .. } => " --differential",
            _ => "",
        }
    }

    /// The SPEC rule a written reproduction names.
    pub fn rule(&self) -> &str {
        match self {
            // An oracle named after its rule names it; others (`K2-steps`,
            // `liveness`, `request`) name the first rule they judge.
            // A harness's own oracle judges no SPEC rule: D8 found it.
            Failure::Oracle(o) => o
                .rule()
                .and_then(|o| o.judges().first().copied())
                .unwrap_or("D8"),
            Failure::Nondeterministic => "D4",
            Failure::Differential { .. } => "D1",
            Failure::RuntimePanic | Failure::Error(_) => "X2",
            Failure::TimeLimit => "L14",
        }
    }
}

/// What one case showed: its failure (if any), what the first run said
/// about it, and the events of that run for coverage.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The first way the case failed; `None` when it passed every oracle, ran
    /// the same twice and finished within the time limit.
    pub failure: Option<Failure>,
    /// What the first run said about the failure (the violation's message, the
    /// differing output, the error); empty when the case passed.
    pub message: String,
    /// The behaviours the case's first run reached, counted from its events.
    pub coverage: Coverage,
    /// What each of a harness's hooks decided in the first run.
    pub decisions: super::Decisions,
}

impl Evaluation {
    /// A case that failed before it ran (it could not be built).
    pub(crate) fn failed(failure: Failure) -> Evaluation {
        Evaluation {
            failure: Some(failure),
            message: String::new(),
            coverage: Coverage::default(),
            decisions: Default::default(),
        }
    }
}

/// The seed of case `index` of a campaign with `seed`.
pub fn case_seed(seed: u64, index: u64) -> u64 {
    Rng::new(seed ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64()
}

/// Whether case `index` belongs to shard `shard` of `shards` (from 1).
pub fn in_shard(index: u64, shard: u64, shards: u64) -> bool {
    index % shards == shard - 1
}

/// Runs one case twice and judges it.
pub fn evaluate(spec: &ScenarioSpec) -> Evaluation {
    evaluate_on(spec, StoreKind::Memory)
}

/// [`evaluate`] with the case's threads in a store of kind `store`.
pub fn evaluate_on(spec: &ScenarioSpec, store: StoreKind) -> Evaluation {
    evaluate_across(spec, store, false)
}

/// Whether case `case_seed` of a campaign that compares one case in
/// `every` across stores is one of them (`every` 0: none).
pub fn differential(case_seed: u64, every: u64) -> bool {
    every != 0 && case_seed.rotate_right(29).is_multiple_of(every)
}

/// [`evaluate_on`]; with `across`, a case that passes on `store` runs once
/// more on the other store and fails if anything observed differs (D1).
pub fn evaluate_across(spec: &ScenarioSpec, store: StoreKind, across: bool) -> Evaluation {
    evaluate_with(spec, store, across, &Registry::default())
}

/// [`evaluate_across`] with the hooks and oracles a harness registered:
/// its `use = "..."` entries are built from `registry`, and its oracles
/// judge both runs beside the built-in ones.
pub fn evaluate_with(
    spec: &ScenarioSpec,
    store: StoreKind,
    across: bool,
    registry: &Registry,
) -> Evaluation {
    let s = match Scenario::from_spec_with(spec.clone(), Path::new(""), registry) {
        Ok(s) => s,
        Err(e) => {
            return Evaluation::failed(Failure::Error(format!("an invalid case: {e}")));
        }
    };
    // The second run (D4) is judged against the first run's twin.
    let first = match simulate_on(&s, s.seed, store) {
        Ok(first) => first,
        Err(e) => return Evaluation::failed(Failure::Error(e.to_string())),
    };
    let second = match simulate_against(&s, s.seed, store, &first.twin) {
        Ok(second) => second,
        Err(e) => return Evaluation::failed(Failure::Error(e.to_string())),
    };
    let mut coverage = Coverage::default();
    coverage.add(spec, &first.events, &first.threads);
    coverage.twin(first.twin_counter);
    coverage.placed_after(spec);
    coverage.fault_at_request(first.fired_at_request());
    coverage.renew_before_tools(first.faulted_before_tools());
    coverage.taker(&super::taker::reached(&first));
    coverage.watch_among_workers(first.watched_among_workers());
    coverage.fault_near_a_deleted_compaction(faulted_near_a_deleted_compaction(&first));
    coverage.cluster(
        spec.workers.len(),
        &first.faults_carried_out(),
        &first.events,
    );
    let decisions = super::decisions::decisions(&s, &first.events);
    let (mut failure, mut message) = verdict(&first, &second);
    if failure.is_none() && across {
        coverage.compared_stores();
        (failure, message) = differential_verdict(&s, store, &first);
    }
    Evaluation {
        failure,
        message,
        coverage,
        decisions,
    }
}

/// Whether, among workers, a fault hit a worker around its run's
/// compaction (its read, summary or write) on a thread deleted from that
/// read on (issue 38; `cross.fault_near_a_deleted_compaction`).
fn faulted_near_a_deleted_compaction(report: &Report) -> bool {
    let Some(c) = &report.cluster else {
        return false;
    };
    let faults: Vec<(&str, usize)> = c
        .log
        .iter()
        .filter_map(|r| match &r.what {
            crate::world::ClusterEvent::Fault { action, worker, .. }
                if matches!(action.as_str(), "crash" | "partition" | "hold" | "pause") =>
            {
                Some((worker.as_str(), r.after_event))
            }
            _ => None,
        })
        .collect();
    super::crossings::fault_near_a_deleted_compaction(&c.raw_events, &faults)
}

/// The first way a case's two runs on one store failed, and its message.
fn verdict(first: &Report, second: &Report) -> (Option<Failure>, String) {
    if first.transcript != second.transcript {
        (
            Some(Failure::Nondeterministic),
            "two runs with one seed differ".to_string(),
        )
    } else if let Some(v) = first.violations.first() {
        (Some(Failure::Oracle(v.oracle.clone())), v.message.clone())
    } else if first.runtime_panicked {
        (
            Some(Failure::RuntimePanic),
            "the step loop panicked".to_string(),
        )
    } else if first.limit_reached {
        (
            Some(Failure::TimeLimit),
            "not idle at the virtual-time limit".to_string(),
        )
    } else {
        (None, String::new())
    }
}

/// The most lines of a difference a find's message keeps.
const SHOWN_LINES: usize = 24;

/// Runs the case on the other store and compares it with `first` (D1).
fn differential_verdict(
    s: &Scenario,
    store: StoreKind,
    first: &Report,
) -> (Option<Failure>, String) {
    let against = crate::differential::other_store(store);
    match crate::differential::across_stores(s, s.seed, store, first) {
        Ok(None) => (None, String::new()),
        Ok(Some(d)) => {
            let mut lines: Vec<&str> = d.lines().take(SHOWN_LINES + 1).collect();
            if lines.len() > SHOWN_LINES {
                lines[SHOWN_LINES] = "...";
            }
            (
                Some(Failure::Differential { store, against }),
                lines.join("\n"),
            )
        }
        Err(e) => (
            Some(Failure::Error(format!("on {}: {e}", against.as_str()))),
            String::new(),
        ),
    }
}
