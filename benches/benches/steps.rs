//! W2 of ../shared/BENCHMARKS.md: a 200-step tool loop whose prompt grows
//! by three messages a step (see `support/w2.rs` for how the accumulating
//! `step N` notes are made), with an `after_step` observer.
//!
//! Before criterion, a measurement pass prints the figures BENCHMARKS.md
//! asks for: one checked warm-up run, then 20 timed runs (a fresh runtime
//! each, built before its clock starts). Per-step times come from the
//! observer's timestamps (step 0 from just before `send`, as the peer's
//! step 0 includes the start of `generateText`):
//! - `RESULT W2 us_per_step`: total time / (20 × 200);
//! - `us_per_step_first20`, `us_per_step_last20`: mean of steps 0–19 and
//!   180–199 over all 20 runs, and their ratio `late_early_ratio` (the
//!   peer's formula); `late_early_ratio_median`: the median of the 20
//!   per-run ratios.
//!
//! Criterion then times the whole run (200 elements per iteration, so its
//! throughput line is steps per second). `PAI_BENCH_RESULTS_ONLY=1` stops
//! after the measurement pass.

use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group};

#[path = "../../runtime/tests/it/common/drive.rs"]
mod common;
#[path = "support/report.rs"]
mod report;
#[path = "support/w2.rs"]
mod w2;

const RUNS: usize = 20;
const EDGE: usize = 20;

/// One timed run: its total time and the duration of each step.
fn timed_run(rt: &tokio::runtime::Runtime) -> (Duration, Vec<f64>) {
    let (runtime, probe) = w2::runtime(false);
    let t0 = Instant::now();
    let state = w2::run(rt, &runtime);
    let total = t0.elapsed();
    w2::check(&state, &probe);
    let mut times = vec![t0];
    times.extend(probe.stamps());
    let steps = times
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1e6)
        .collect();
    (total, steps)
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Mean of steps `from..from + EDGE` in `per_step`.
fn window(per_step: &[f64], from: usize) -> f64 {
    mean(&per_step[from..from + EDGE])
}

fn measurement_pass() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio");
    let (runtime, probe) = w2::runtime(true);
    w2::check(&w2::run(&rt, &runtime), &probe);
    let n = w2::STEPS as usize;
    let (mut total, mut per_step, mut ratios) = (Duration::ZERO, vec![0.0; n], Vec::new());
    for _ in 0..RUNS {
        let (t, steps) = timed_run(&rt);
        total += t;
        ratios.push(window(&steps, n - EDGE) / window(&steps, 0));
        for (sum, d) in per_step.iter_mut().zip(&steps) {
            *sum += d / RUNS as f64;
        }
    }
    let (first, last) = (window(&per_step, 0), window(&per_step, n - EDGE));
    let us = total.as_secs_f64() * 1e6 / (RUNS * n) as f64;
    report::result("W2", "us_per_step", us);
    report::result("W2", "us_per_step_first20", first);
    report::result("W2", "us_per_step_last20", last);
    report::result("W2", "late_early_ratio", last / first);
    report::result("W2", "late_early_ratio_median", report::median(&mut ratios));
    // The growth's shape: steps 40–59, 80–99, ... (step k sends 3k+3).
    for from in (EDGE * 2..n - EDGE).step_by(EDGE * 2) {
        let name = format!("us_per_step_{from}_{}", from + EDGE - 1);
        report::result("W2", &name, window(&per_step, from));
    }
    if let Some(mb) = report::max_rss_mb() {
        report::result("W2", "max_rss_mb", mb);
    }
}

fn w2(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio");
    let (runtime, probe) = w2::runtime(true);
    w2::check(&w2::run(&rt, &runtime), &probe);

    let mut group = c.benchmark_group("w2_tool_loop");
    group.throughput(Throughput::Elements(u64::from(w2::STEPS)));
    group.bench_function("200_step_run", |b| {
        b.iter_batched(
            || w2::runtime(false),
            |(runtime, _probe)| w2::run(&rt, &runtime),
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

criterion_group!(benches, w2);

fn main() {
    report::main(measurement_pass, benches);
}
