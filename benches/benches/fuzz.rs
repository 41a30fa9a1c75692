//! `pai-sim fuzz` speed: generated cases per second. A case is generated,
//! checked into a scenario, run twice (D4) under every oracle, and its
//! coverage counted, exactly as the command does.
//!
//! `fuzz/generated_case` draws cases as the command does (about a third
//! have workers); `fuzz/single_process_case` and `fuzz/multi_worker_case`
//! time the two kinds apart (issue 27 aims at 500 multi-worker cases/s),
//! each over the first cases of that kind in campaign seed 1, generated
//! before the clock starts.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pai_sim::ScenarioSpec;
use pai_sim::fuzz::{case, case_seed, evaluate};

/// Cases of one kind the split benches cycle through.
const PER_KIND: usize = 64;

fn generated_cases(c: &mut Criterion) {
    let mut group = c.benchmark_group("fuzz");
    group.throughput(Throughput::Elements(1));
    let mut index = 0u64;
    group.bench_function("generated_case", |b| {
        b.iter(|| {
            index += 1;
            let judged = evaluate(&case(case_seed(1, index)));
            assert!(judged.failure.is_none(), "{}", judged.message);
        });
    });
    let (single, multi) = by_kind();
    for (name, cases) in [
        ("single_process_case", single),
        ("multi_worker_case", multi),
    ] {
        let mut next = cases.iter().cycle();
        group.bench_function(name, |b| {
            b.iter(|| {
                let spec = next.next().expect("a cycle of cases never ends");
                let judged = evaluate(spec);
                assert!(judged.failure.is_none(), "{}", judged.message);
            });
        });
    }
    group.finish();
}

/// The first [`PER_KIND`] cases of each kind (without, with workers).
fn by_kind() -> (Vec<ScenarioSpec>, Vec<ScenarioSpec>) {
    let (mut single, mut multi) = (Vec::new(), Vec::new());
    // Bounded: a third of the cases have workers, so 64 of each come
    // long before 100,000 draws.
    for index in 1..100_000u64 {
        if single.len() == PER_KIND && multi.len() == PER_KIND {
            break;
        }
        let spec = case(case_seed(1, index));
        let list = match spec.workers.is_empty() {
            true => &mut single,
            false => &mut multi,
        };
        if list.len() < PER_KIND {
            list.push(spec);
        }
    }
    assert_eq!(
        multi.len(),
        PER_KIND,
        "the generator stopped drawing workers"
    );
    (single, multi)
}

criterion_group!(benches, generated_cases);
criterion_main!(benches);
