//! W1 of ../shared/BENCHMARKS.md: 100,000 text deltas of 16 ASCII characters
//! with 2,000 secrets that cross delta boundaries, redacted through the full
//! canonical pipeline (provider stream → canonical transform → assembled,
//! stored message), checked against the published output hash.
//!
//! Before criterion, a measurement pass (one untimed warm-up run, then 21
//! timed runs) prints `RESULT W1 ns_per_delta` (median of the 21; the
//! fastest as `ns_per_delta_min`) and the process's peak RSS. A run is
//! timed from the user's message until the thread is idle with the step
//! committed; reading the stored text back for the check is not timed;
//! `PAI_BENCH_RESULTS_ONLY=1` stops after it.

use criterion::{Criterion, Throughput, criterion_group};
use pai_runtime::{
    StreamPart,
    stream::Emit,
    text::{Pattern, redact_text_deltas},
};

#[path = "../../runtime/tests/it/common/drive.rs"]
mod common;
#[path = "support/report.rs"]
mod report;
#[path = "support/w1.rs"]
mod w1;

const TIMED_RUNS: usize = 21;

/// Warm-up, then `TIMED_RUNS` timed full runs: the median ns per delta.
fn measurement_pass(text: &str, pats: &[Pattern]) {
    let rt = w1::tokio();
    let parts = w1::deltas(text);
    w1::check_output(&w1::full_pipeline(&rt, pats, &parts));
    let mut ns: Vec<f64> = (0..TIMED_RUNS)
        .map(|_| {
            let (took, out) = w1::timed_pipeline(&rt, pats, &parts);
            let per = took.as_nanos() as f64 / w1::DELTAS as f64;
            w1::check_output(&out);
            per
        })
        .collect();
    let min = ns.iter().copied().fold(f64::INFINITY, f64::min);
    report::result("W1", "ns_per_delta", report::median(&mut ns));
    report::result("W1", "ns_per_delta_min", min);
    if let Some(mb) = report::max_rss_mb() {
        report::result("W1", "max_rss_mb", mb);
    }
}

/// The redaction stage alone, without the runtime around it.
fn redactor_only(pats: &[Pattern], parts: &[StreamPart]) -> String {
    let mut stage = redact_text_deltas(pats.to_vec(), w1::REPLACEMENT);
    let mut out = String::with_capacity(w1::OUTPUT_LEN);
    for p in parts {
        let mut e = Emit::default();
        stage.push(p.clone(), &mut e);
        for q in e.into_parts() {
            if let StreamPart::TextDelta(t) = q {
                out.push_str(&t);
            }
        }
    }
    out
}

fn w1(c: &mut Criterion) {
    let text = w1::input();
    let pats = w1::secret_patterns();
    let rt = w1::tokio();
    let parts = w1::deltas(&text);
    w1::check_output(&w1::full_pipeline(&rt, &pats, &parts));

    let mut group = c.benchmark_group("w1_redaction");
    group.throughput(Throughput::Elements(w1::DELTAS as u64));
    group.sample_size(30);
    group.bench_function("full_canonical_pipeline", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| w1::timed_pipeline(&rt, &pats, &parts).0)
                .sum()
        });
    });
    group.bench_function("redactor_stage_only", |b| {
        b.iter(|| redactor_only(&pats, &parts));
    });
    group.finish();
}

criterion_group!(benches, w1);

fn main() {
    report::main(
        || measurement_pass(&w1::input(), &w1::secret_patterns()),
        benches,
    );
}
