//! Heap figures of W1, W2 and W3 with `dhat` as the global allocator (its
//! `dhat::Alloc` needs no `unsafe` here; the workspace forbids it). Prints a
//! small table and `RESULT` lines, then exits: this is not a criterion
//! bench, and its times mean nothing (dhat records a backtrace for every
//! allocation).
//!
//! - allocations: blocks allocated while the measured code ran (dhat's
//!   `total_blocks`: a `realloc` counts as one more block);
//! - peak: the most heap bytes live at once while it ran, counting only
//!   blocks allocated during the measurement (dhat's `max_bytes`).
//!
//! Rows: W1's pipeline over prepared deltas (allocations per delta; the
//! shared input parts exist before and are not counted), the same with
//! building the input parts counted too, one W2 run (fresh runtime
//! included) per step, and W3 calls per call and per hook.

use std::fmt::Write as _;
use std::io::Write as _;

#[path = "../../runtime/tests/it/common/drive.rs"]
mod common;
#[path = "support/report.rs"]
mod report;
#[path = "support/w1.rs"]
mod w1;
#[path = "support/w2.rs"]
mod w2;
#[path = "support/w3.rs"]
mod w3;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// What the measured code allocated.
struct Heap {
    blocks: u64,
    bytes: u64,
    peak: usize,
}

/// Runs `f` under a fresh dhat profiler (testing mode: no file written).
fn measure<T>(f: impl FnOnce() -> T) -> (T, Heap) {
    let profiler = dhat::Profiler::builder().testing().build();
    let out = f();
    let s = dhat::HeapStats::get();
    drop(profiler);
    let heap = Heap {
        blocks: s.total_blocks,
        bytes: s.total_bytes,
        peak: s.max_bytes,
    };
    (out, heap)
}

const MB: f64 = 1024.0 * 1024.0;

/// One table row and its `RESULT` lines (`per` units of `unit`).
fn row(table: &mut String, w: &str, what: &str, h: &Heap, per: f64, unit: &str) {
    let allocs = h.blocks as f64 / per;
    let peak = h.peak as f64 / MB;
    let line = format!(
        "{w:<3} {what:<34} {:>10} {:>12.1} {:>10.2}  {allocs:>8.2} per {unit}",
        h.blocks,
        h.bytes as f64 / MB,
        peak
    );
    writeln!(table, "{line}").expect("table");
    report::result(w, &format!("{what}_allocs_per_{unit}"), allocs);
    report::result(w, &format!("{what}_peak_heap_mb"), peak);
}

fn w1_rows(table: &mut String) {
    let text = w1::input();
    let pats = w1::secret_patterns();
    let rt = w1::tokio();
    let parts = w1::deltas(&text);
    w1::check_output(&w1::full_pipeline(&rt, &pats, &parts));
    let (out, h) = measure(|| w1::full_pipeline(&rt, &pats, &parts));
    w1::check_output(&out);
    row(table, "W1", "pipeline", &h, w1::DELTAS as f64, "delta");
    let (out, h) = measure(|| w1::full_pipeline(&rt, &pats, &w1::deltas(&text)));
    w1::check_output(&out);
    row(
        table,
        "W1",
        "pipeline_with_input",
        &h,
        w1::DELTAS as f64,
        "delta",
    );
}

fn w2_rows(table: &mut String) {
    let rt = w1::tokio();
    let (runtime, probe) = w2::runtime(false);
    w2::check(&w2::run(&rt, &runtime), &probe);
    let ((state, probe), h) = measure(|| {
        let (runtime, probe) = w2::runtime(false);
        (w2::run(&rt, &runtime), probe)
    });
    w2::check(&state, &probe);
    row(table, "W2", "run", &h, f64::from(w2::STEPS), "step");
}

fn w3_rows(table: &mut String) {
    const N: usize = 1000;
    let mut per_call = Vec::new();
    for v in w3::VARIANTS {
        let mut calls = w3::Calls::new(v);
        calls.check(v);
        let (oks, h) = measure(|| (0..N).filter(|_| calls.call()).count());
        assert_eq!(oks, N, "{}: every answer is ok", v.name());
        row(
            table,
            "W3",
            &format!("call_{}", v.name()),
            &h,
            N as f64,
            "call",
        );
        per_call.push(h.blocks as f64 / N as f64);
    }
    let per_hook = |i: usize| (per_call[i] - per_call[0]) / w3::K as f64;
    report::result("W3", "allocs_per_hook", per_hook(1));
    report::result("W3", "allocs_per_other_phase_hook", per_hook(2));
    let line = format!(
        "W3 per hook: {:.2} allocations (prepare_model_step), {:.2} (other phase)",
        per_hook(1),
        per_hook(2)
    );
    writeln!(table, "{line}").expect("table");
}

fn main() {
    let mut table = format!(
        "{:<3} {:<34} {:>10} {:>12} {:>10}  allocations\n",
        "", "measured", "blocks", "MB allocated", "peak MB"
    );
    w1_rows(&mut table);
    w2_rows(&mut table);
    w3_rows(&mut table);
    std::io::stdout()
        .lock()
        .write_all(table.as_bytes())
        .expect("stdout");
}
