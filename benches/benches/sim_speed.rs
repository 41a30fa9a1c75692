//! Simulation speed: model steps per wall second and virtual time per wall
//! time, for the suite's longest scenarios and for generated fuzz cases.
//!
//! - `c1_long_thread_compaction` has the most steps of the suite (121);
//! - `k2_a_paused_worker_s_late_write_is_refused` and
//!   `k3_a_partition_that_heals` the most virtual time outside
//!   `violations/` (about 1.1 virtual seconds each, under turmoil);
//! - `five_steps` is the `scenario` bench's single-process run;
//! - fuzz: the first 200 cases of campaign seed 1, each simulated once
//!   (`evaluate`, as `pai-sim fuzz` and the `fuzz` bench do, runs each case
//!   twice and counts coverage; its rate is printed too).
//!
//! A run is `pai_sim::simulate` (world, runtime, oracles, transcript), so
//! these are the simulator's figures, not the runtime's alone. The
//! measurement pass prints `RESULT SIM <name>_steps_per_s` and
//! `<name>_virtual_per_wall` (virtual ms / wall ms; the median of up to 20
//! timed runs after a warm-up); criterion then times the two longest
//! scenarios with steps and virtual ms as their throughput.
//! `PAI_BENCH_RESULTS_ONLY=1` stops after the pass.

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group};
use pai_sim::fuzz::{case, case_seed, evaluate};
use pai_sim::{Report, Scenario, simulate};

#[path = "support/report.rs"]
mod report;

const SCENARIOS: [(&str, &str); 4] = [
    ("c1_long_thread", "facade/c1_long_thread_compaction.toml"),
    (
        "k2_paused_worker",
        "workers/k2_a_paused_worker_s_late_write_is_refused.toml",
    ),
    ("k3_partition", "workers/k3_a_partition_that_heals.toml"),
    ("five_steps", "basics/five_steps.toml"),
];
const FUZZ_CASES: u64 = 200;
const MAX_RUNS: usize = 20;
const BUDGET: Duration = Duration::from_secs(3);

fn load(file: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(file);
    Scenario::load(&path).expect("bench scenario loads")
}

fn run(s: &Scenario) -> Report {
    let report = simulate(s, s.seed).expect("bench scenario runs");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert!(!report.limit_reached, "{}: idle before its limit", s.name);
    report
}

/// Prints steps per second and virtual time per wall time.
fn speed(name: &str, steps: u64, virtual_ms: u64, wall: Duration) {
    let secs = wall.as_secs_f64();
    report::result("SIM", &format!("{name}_steps_per_s"), steps as f64 / secs);
    let ratio = virtual_ms as f64 / (secs * 1e3);
    report::result("SIM", &format!("{name}_virtual_per_wall"), ratio);
}

/// The median wall time of one run of `s`, after a warm-up.
fn median_run(s: &Scenario) -> (Report, Duration) {
    let report = run(s);
    let start = Instant::now();
    let mut walls: Vec<f64> = Vec::new();
    while walls.len() < MAX_RUNS && (walls.len() < 3 || start.elapsed() < BUDGET) {
        let t = Instant::now();
        run(s);
        walls.push(t.elapsed().as_secs_f64());
    }
    (report, Duration::from_secs_f64(report::median(&mut walls)))
}

fn fuzz_pass() {
    let specs: Vec<_> = (1..=FUZZ_CASES).map(|i| case(case_seed(1, i))).collect();
    let scenarios: Vec<Scenario> = specs
        .iter()
        .map(|spec| Scenario::from_spec(spec.clone()).expect("a valid case"))
        .collect();
    let (mut steps, mut virtual_ms) = (0u64, 0u64);
    let t = Instant::now();
    for s in &scenarios {
        let r = simulate(s, s.seed).expect("case runs");
        steps += u64::from(r.steps);
        virtual_ms += r.virtual_ms;
    }
    speed("fuzz", steps, virtual_ms, t.elapsed());
    report::result(
        "SIM",
        "fuzz_steps_per_case",
        steps as f64 / FUZZ_CASES as f64,
    );
    let t = Instant::now();
    for spec in &specs {
        let judged = evaluate(spec);
        assert!(judged.failure.is_none(), "{}", judged.message);
    }
    let per_s = FUZZ_CASES as f64 / t.elapsed().as_secs_f64();
    report::result("SIM", "fuzz_evaluated_cases_per_s", per_s);
}

fn measurement_pass() {
    for (name, file) in SCENARIOS {
        let s = load(file);
        let (report, wall) = median_run(&s);
        speed(name, u64::from(report.steps), report.virtual_ms, wall);
    }
    fuzz_pass();
}

fn longest(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim_speed");
    for (name, file) in &SCENARIOS[..2] {
        let s = load(file);
        let report = run(&s);
        group.throughput(Throughput::Elements(u64::from(report.steps)));
        group.bench_function(format!("{name}_steps"), |b| b.iter(|| run(&s)));
        group.throughput(Throughput::Elements(report.virtual_ms));
        group.bench_function(format!("{name}_virtual_ms"), |b| b.iter(|| run(&s)));
    }
    group.finish();
}

criterion_group!(benches, longest);

fn main() {
    // Generated cases plant panicking tools and hooks; printing their
    // backtraces would be timed too.
    pai_sim::quiet_planted_panics();
    report::main(measurement_pass, benches);
}
