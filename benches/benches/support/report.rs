//! What the benches print besides criterion's own report: one
//! machine-readable line per figure, `RESULT <workload> <name> <value>`,
//! which `benches/compare.sh` greps.

// Each bench binary includes this file and uses a part of it.
#![allow(dead_code)]

use std::io::Write;

/// Prints `RESULT <workload> <name> <value>` on stdout.
pub fn result(workload: &str, name: &str, value: f64) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "RESULT {workload} {name} {value:.3}").expect("stdout");
}

/// Whether this binary was started by `cargo bench` (criterion's `--bench`
/// flag), not by `cargo test --benches`, which only checks that it runs.
pub fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// With `PAI_BENCH_RESULTS_ONLY` set, a bench prints its `RESULT` lines and
/// skips criterion (what `compare.sh` does).
pub fn results_only() -> bool {
    std::env::var_os("PAI_BENCH_RESULTS_ONLY").is_some()
}

/// A bench's `main`: the measurement pass (under `cargo bench`), then
/// criterion's groups unless only the `RESULT` lines were asked for.
pub fn main(measurement_pass: impl FnOnce(), benches: fn()) {
    if bench_mode() {
        measurement_pass();
    }
    if results_only() {
        return;
    }
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}

/// The median of `values` (which it sorts).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The process's peak resident set so far, in MB (`VmHWM` in
/// /proc/self/status; `None` where there is no such file).
pub fn max_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
