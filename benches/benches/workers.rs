//! Several workers under faults: whole deterministic runs of a 3-worker
//! scenario with a crash, a pause and a partition (turmoil hosts, the
//! store over simulated TCP, oracles and transcript). Criterion reports
//! runs per second and model steps per second; virtual seconds simulated
//! per wall second is the run's virtual time (printed once) over the time
//! per run.

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn three_workers_under_faults(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/workers/k3_three_workers_under_faults.toml");
    let scenario = pai_sim::Scenario::load(&path).expect("bench scenario loads");
    let run = pai_sim::simulate(&scenario, scenario.seed).expect("bench scenario runs");
    assert!(run.violations.is_empty(), "{:?}", run.violations);
    eprintln!(
        "workers/three_under_faults: {} model steps, {} virtual ms per run",
        run.steps, run.virtual_ms
    );

    let mut group = c.benchmark_group("workers");
    group.throughput(Throughput::Elements(u64::from(run.steps)));
    group.bench_function("three_under_faults_steps", |b| {
        b.iter(|| pai_sim::simulate(&scenario, scenario.seed).expect("runs"));
    });
    group.throughput(Throughput::Elements(run.virtual_ms));
    group.bench_function("three_under_faults_virtual_ms", |b| {
        b.iter(|| pai_sim::simulate(&scenario, scenario.seed).expect("runs"));
    });
    group.finish();
}

criterion_group!(benches, three_workers_under_faults);
criterion_main!(benches);
