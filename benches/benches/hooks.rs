//! W3 of ../shared/BENCHMARKS.md: the cost of one composed hook (the
//! variants and the call are in `support/w3.rs`).
//!
//! Before timing, the mock model's last request is checked for every
//! variant: instructions, `hello`, then the 10 messages in order (none for
//! `k0` and `k10_other`); so is the patch of the chain called alone.
//!
//! The measurement pass mirrors the peer: 2,000 untimed warm-up calls per
//! variant, then 5,000 timed calls each in blocks of 500, the variants'
//! order reversed every round (ABBA). A fresh runtime, built before the
//! clock starts, serves 50 calls (see `PER_RUNTIME`). It
//! prints `RESULT W3 ns_per_hook` = (t(k10) − t(k0)) / (10 × 5,000), the
//! same from per-call medians, the other-phase figure, and the chain alone
//! (`chain_*`: the composition's `prepare_model_step` called directly,
//! 50,000 times per variant, like the peer's `direct_*`), and
//! `workload_ns_per_hook`: what the hooks' own bodies cost outside any
//! runtime (per hook a patch from `Patch::append_system(text.clone())`: a
//! string and two vectors allocated, the K patches live at once as in a
//! call, then freed), the part of `ns_per_hook` no runtime change removes.
//! `PAI_BENCH_RESULTS_ONLY=1` stops after the pass.

use std::future::Future;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use pai_runtime::{
    HookCx, Lifecycle,
    hook::{Composed, StepDecision, StepInput},
    message::ModelMessage,
    model::{Patch, Route},
};

#[path = "../../runtime/tests/it/common/drive.rs"]
mod common;
#[path = "support/report.rs"]
mod report;
#[path = "support/w3.rs"]
mod w3;
use w3::{Calls, K, VARIANTS, Variant};

const CALLS: usize = 5_000;
const WARMUP: usize = 2_000;
const BLOCK: usize = 500;
const CHAIN_CALLS: usize = 50_000;
/// Every call adds a thread to the store, and a claim scans the store's
/// threads (`MemoryStore::apply`, `StoreRequest::Claim`), so a call's cost
/// grows with the threads already stored; a fresh runtime every 50 calls
/// keeps that out of the figures (at 500, a K=0 call took about 3.5 µs
/// more on this machine). `PAI_W3_PER_RUNTIME=N` changes it.
const PER_RUNTIME: usize = 50;

/// Calls per fresh runtime: `PAI_W3_PER_RUNTIME`, or `PER_RUNTIME`.
fn per_runtime() -> usize {
    std::env::var("PAI_W3_PER_RUNTIME")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(PER_RUNTIME)
}

/// `n` timed calls, a fresh runtime (built untimed) every `per_runtime()`.
fn block(v: Variant, n: usize) -> Vec<Duration> {
    let per_runtime = per_runtime();
    let mut calls = Calls::new(v);
    (0..n)
        .map(|i| {
            if i > 0 && i % per_runtime == 0 {
                calls = Calls::new(v);
            }
            let t = Instant::now();
            let ok = calls.call();
            let d = t.elapsed();
            assert!(ok, "{}: every answer is ok", v.name());
            d
        })
        .collect()
}

/// Drives a future that never waits (the composition of ready hooks).
fn now<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a ready hook's future is pending"),
    }
}

/// The composition's `prepare_model_step` alone, called `n` times.
fn chain(hooks: &Composed<()>, n: usize) -> Duration {
    let route = Route::new("mock");
    let messages = [ModelMessage::user("hello")];
    let cx = HookCx::new(&(), "run1", "t1", 1, 0);
    let input = StepInput {
        step: 0,
        route: &route,
        messages: &messages,
    };
    let t = Instant::now();
    for _ in 0..n {
        let decision = now(hooks.prepare_model_step(&cx, &input));
        std::hint::black_box(decision.expect("hooks answer"));
    }
    t.elapsed()
}

fn check_chain(v: Variant) {
    let messages = [ModelMessage::user("hello")];
    let route = Route::new("mock");
    let cx = HookCx::new(&(), "run1", "t1", 1, 0);
    let input = StepInput {
        step: 0,
        route: &route,
        messages: &messages,
    };
    let StepDecision::Continue(patch) =
        now(v.hooks().prepare_model_step(&cx, &input)).expect("hooks answer");
    let mut sent = messages.to_vec();
    patch.apply_messages(&mut sent);
    assert_eq!(sent, v.expected(), "{}: the chain's patch", v.name());
}

/// The variants' order in round `r`: reversed every other round (ABBA).
fn order(r: usize) -> Vec<Variant> {
    match r % 2 {
        0 => VARIANTS.to_vec(),
        _ => VARIANTS.iter().rev().copied().collect(),
    }
}

fn mean_us(ds: &[Duration]) -> f64 {
    ds.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e6 / ds.len() as f64
}

fn median_us(ds: &[Duration]) -> f64 {
    let mut us: Vec<f64> = ds.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    report::median(&mut us)
}

fn checks() {
    for v in VARIANTS {
        Calls::new(v).check(v);
        check_chain(v);
    }
}

/// Per-call times of every variant, ABBA blocks after the warm-up.
fn timed_calls() -> Vec<Vec<Duration>> {
    for v in VARIANTS {
        block(v, WARMUP);
    }
    let mut per: Vec<Vec<Duration>> = vec![Vec::new(); VARIANTS.len()];
    for r in 0..CALLS / BLOCK {
        for v in order(r) {
            per[v as usize].extend(block(v, BLOCK));
        }
    }
    per
}

/// ns per call of the chain alone, per variant (ABBA blocks of 5,000).
fn timed_chain() -> Vec<f64> {
    let hooks: Vec<Composed<()>> = VARIANTS.iter().map(|v| v.hooks()).collect();
    let mut total = vec![Duration::ZERO; VARIANTS.len()];
    for h in &hooks {
        chain(h, CHAIN_CALLS / 10);
    }
    for r in 0..10 {
        for v in order(r) {
            total[v as usize] += chain(&hooks[v as usize], CHAIN_CALLS / 10);
        }
    }
    total
        .iter()
        .map(|t| t.as_secs_f64() * 1e9 / CHAIN_CALLS as f64)
        .collect()
}

/// ns per hook of the hooks' own bodies, outside any runtime: per round,
/// the K patches the hooks return (`Patch::append_system(text.clone())`),
/// all live at once as in a call, then dropped.
fn timed_workload(rounds: usize) -> f64 {
    let texts: Vec<String> = (0..K).map(|i| format!("middleware {i}")).collect();
    let mut live: Vec<Patch> = Vec::with_capacity(K);
    let t = Instant::now();
    for _ in 0..rounds {
        for text in std::hint::black_box(&texts) {
            live.push(Patch::append_system(text.clone()));
        }
        std::hint::black_box(&mut live).clear();
    }
    t.elapsed().as_secs_f64() * 1e9 / (rounds * K) as f64
}

fn measurement_pass() {
    let per = timed_calls();
    let means: Vec<f64> = per.iter().map(|d| mean_us(d)).collect();
    let medians: Vec<f64> = per.iter().map(|d| median_us(d)).collect();
    for v in VARIANTS {
        let i = v as usize;
        report::result("W3", &format!("us_per_call_{}", v.name()), means[i]);
        report::result("W3", &format!("p50_us_per_call_{}", v.name()), medians[i]);
    }
    let per_hook = |xs: &[f64], v: Variant| (xs[v as usize] - xs[0]) * 1e3 / K as f64;
    report::result("W3", "ns_per_hook", per_hook(&means, Variant::K10));
    report::result("W3", "p50_ns_per_hook", per_hook(&medians, Variant::K10));
    report::result(
        "W3",
        "ns_per_other_phase_hook",
        per_hook(&means, Variant::K10Other),
    );
    report::result(
        "W3",
        "p50_ns_per_other_phase_hook",
        per_hook(&medians, Variant::K10Other),
    );
    let chain = timed_chain();
    let chain_hook = |v: Variant| (chain[v as usize] - chain[0]) / K as f64;
    for v in VARIANTS {
        report::result(
            "W3",
            &format!("chain_ns_per_call_{}", v.name()),
            chain[v as usize],
        );
    }
    report::result("W3", "chain_ns_per_hook", chain_hook(Variant::K10));
    report::result(
        "W3",
        "chain_ns_per_other_phase_hook",
        chain_hook(Variant::K10Other),
    );
    timed_workload(CHAIN_CALLS / 10);
    let workload = timed_workload(CHAIN_CALLS);
    report::result("W3", "workload_ns_per_hook", workload);
    if let Some(mb) = report::max_rss_mb() {
        report::result("W3", "max_rss_mb", mb);
    }
}

fn w3(c: &mut Criterion) {
    let mut group = c.benchmark_group("w3_hooks");
    for v in VARIANTS {
        group.bench_function(format!("call_{}", v.name()), |b| {
            b.iter_custom(|iters| {
                let mut left = iters as usize;
                let mut spent = Duration::ZERO;
                while left > 0 {
                    let n = left.min(1000);
                    spent += block(v, n).iter().sum::<Duration>();
                    left -= n;
                }
                spent
            });
        });
    }
    for v in VARIANTS {
        let hooks = v.hooks();
        group.bench_function(format!("chain_{}", v.name()), |b| {
            b.iter_custom(|iters| chain(&hooks, iters as usize));
        });
    }
    group.finish();
}

criterion_group!(benches, w3);

fn main() {
    checks();
    report::main(measurement_pass, benches);
}
