//! Scenario throughput: whole deterministic runs per second of a 5-step
//! scenario (runtime + simulator: Tokio runtime with virtual time, scripted
//! model and tools, five hooks, event recording, oracles and transcript).

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn five_step_scenario(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/basics/five_steps.toml");
    let scenario = pai_sim::Scenario::load(&path).expect("bench scenario loads");
    let check = pai_sim::simulate(&scenario, scenario.seed).expect("bench scenario runs");
    assert_eq!(
        check.steps, 5,
        "the bench scenario must run five model steps"
    );
    assert!(check.violations.is_empty(), "{:?}", check.violations);

    let mut group = c.benchmark_group("scenario");
    group.throughput(Throughput::Elements(1));
    group.bench_function("five_steps_run", |b| {
        b.iter(|| pai_sim::simulate(&scenario, scenario.seed).expect("runs"));
    });
    group.finish();
}

criterion_group!(benches, five_step_scenario);
criterion_main!(benches);
