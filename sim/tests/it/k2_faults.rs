//! SPEC K2 (property): with any schedule of pauses, crashes, partitions and
//! held messages, on several workers driving runs with tools and steering,
//! no stale write lands and no step is committed twice; and every other
//! oracle holds too (K3 liveness after the faults heal, K5, the grammar).
//!
//! Each case: 2 or 3 workers, a lease of 60–400 ms, up to five faults in
//! the first 1.5 s of virtual time, each lasting up to 1.2 s; the virtual
//! time is capped by the scenario's limit (20 s). Regressions are checked
//! in and replayed first. The schedules come from a fixed seed (every run
//! draws the same); `PROPTEST_RNG_SEED=N PROPTEST_CASES=2000 cargo test -p
//! pai-sim --release --test it k2_faults::` runs a longer campaign on another.

use crate::common;

use pai_sim::{ClusterSpec, FaultSpec, Scenario, ScenarioSpec, WorkerSpec, check};
use proptest::prelude::*;

/// Two runs on one thread, a tool with side effects, a steer while the
/// first run works, and a second thread; the faults come on top.
const BASE: &str = r#"
name = "K2 under a random fault schedule"
rules = ["K2", "K3", "K5"]
time_limit_ms = 20000

[[agent.tools]]
name = "charge"
latency_ms = 120
output = { charged = true }

[[model.turns]]
latency_ms = 30
tool_calls = [{ tool = "charge", input = { amount = 1 } }]

[[model.turns]]
latency_ms = 60
text = ["charged"]

[[model.turns]]
latency_ms = 30
text = ["steered"]

[[model.turns]]
latency_ms = 30
text = ["second"]

[[model.turns]]
latency_ms = 30
text = ["third"]

[[model.turns]]
latency_ms = 30
text = ["spare"]

[[timeline]]
send = "charge me"

[[timeline]]
at = 60
steer = "and say so"

[[timeline]]
at = 90
send = "again"

[[timeline]]
at = 40
thread = "other"
send = "hello"
"#;

fn config() -> ProptestConfig {
    ProptestConfig {
        max_shrink_time: 60_000,
        ..common::config(
            48,
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/proptest-regressions/k2_faults.txt"
            ),
        )
    }
}

/// One crash, pause, partition or hold of worker `w`.
fn fault(workers: usize) -> impl Strategy<Value = FaultSpec> {
    let worker = (1..=workers).prop_map(|i| format!("w{i}"));
    (worker, 0u64..1_500, 20u64..1_200, 0u8..5).prop_map(|(worker, at_ms, lasts, kind)| {
        match kind {
            0 => FaultSpec::Crash {
                worker,
                at_ms: Some(at_ms),
                at: None,
                restart_after_ms: Some(lasts),
            },
            1 => FaultSpec::Pause {
                worker,
                at_ms: Some(at_ms),
                at: None,
                for_ms: lasts,
            },
            2 => FaultSpec::Partition {
                worker,
                at_ms: Some(at_ms),
                at: None,
                heal_after_ms: lasts,
            },
            3 => FaultSpec::Hold {
                worker,
                at_ms: Some(at_ms),
                at: None,
                release_after_ms: lasts,
            },
            // A crash for good: some other worker must carry on.
            _ => FaultSpec::Crash {
                worker,
                at_ms: Some(at_ms),
                at: None,
                restart_after_ms: None,
            },
        }
    })
}

/// Workers, their lease and network settings, and a fault schedule.
fn system() -> impl Strategy<Value = (usize, u64, u64, Vec<FaultSpec>)> {
    (2usize..=3).prop_flat_map(|n| {
        let faults = prop::collection::vec(fault(n), 0..=5);
        (
            Just(n),
            60u64..400,
            prop::sample::select(vec![20u64, 100, 2_000]),
            faults,
        )
    })
}

/// The base scenario with `n` workers, the settings and the faults; a
/// permanent crash of every worker would leave nobody to make progress, so
/// the first worker always comes back.
fn scenario(n: usize, lease_ms: u64, timeout: u64, mut faults: Vec<FaultSpec>) -> ScenarioSpec {
    let path = std::path::Path::new("k2_faults.toml");
    let mut spec = ScenarioSpec::parse(path, BASE).expect("the base scenario parses");
    for f in &mut faults {
        if let FaultSpec::Crash {
            worker,
            restart_after_ms,
            ..
        } = f
            && worker == "w1"
        {
            restart_after_ms.get_or_insert(300);
        }
    }
    spec.workers = (1..=n)
        .map(|i| WorkerSpec {
            name: format!("w{i}"),
            start_ms: 0,
        })
        .collect();
    spec.cluster = Some(ClusterSpec {
        lease_ms,
        request_timeout_ms: timeout,
        liveness_ms: 4_000,
        ..ClusterSpec::default()
    });
    spec.faults = faults;
    spec
}

proptest! {
    #![proptest_config(config())]

    /// Every oracle holds (K2's store replay and K2-steps among them), and
    /// two runs with one seed agree (D4).
    #[test]
    fn k2_no_stale_write_lands_and_no_step_is_committed_twice(
        (n, lease_ms, timeout, faults) in system(),
        seed in 0u64..1_000_000,
    ) {
        let spec = scenario(n, lease_ms, timeout, faults);
        let text = toml::to_string(&spec).unwrap_or_default();
        let s = Scenario::from_spec(spec).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (report, problems) = check(&s, seed).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(
            problems.is_empty(),
            "seed {seed}: {}\nsteps {} in {} virtual ms\n{text}",
            problems.join("\n"),
            report.steps,
            report.virtual_ms
        );
    }
}
