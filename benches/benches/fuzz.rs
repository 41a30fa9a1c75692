//! `pai-sim fuzz` speed: generated cases per second. A case is generated,
//! checked into a scenario, run twice (D4) under every oracle, and its
//! coverage counted, exactly as the command does.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pai_sim::fuzz::{case, case_seed, evaluate};

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
    group.finish();
}

criterion_group!(benches, generated_cases);
criterion_main!(benches);
