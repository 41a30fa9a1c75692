//! `pai-sim fuzz` as a library: one seed and case count give the same
//! campaign; shards split it without overlap or gap; a failure shrinks into
//! a file that replays it with the same oracle (SPEC D8, D2).

use pai_runtime::event::EventName;
use pai_sim::fuzz::{Campaign, Failure, case, evaluate, in_shard, shrink, write_find};
use pai_sim::{FaultSpec, OracleId, Scenario, ScenarioSpec, StoreKind};

fn campaign(cases: u64, shard: (u64, u64)) -> Campaign {
    Campaign {
        seed: 7,
        cases: Some(cases),
        shard,
        keep_going: true,
        shrink_budget: 200,
        store: StoreKind::Memory,
        differential: 8,
        swarm: true,
        registry: Default::default(),
    }
}

#[test]
fn d8_the_same_seed_gives_the_same_campaign() {
    let a = campaign(150, (1, 1)).run(|_| true);
    let b = campaign(150, (1, 1)).run(|_| true);
    assert_eq!(a.cases, 150);
    assert_eq!(a.coverage, b.coverage);
    assert!(
        a.finds.is_empty(),
        "{:?}",
        a.finds.first().map(|f| &f.message)
    );
    assert_eq!(case(42), case(42));
    assert_ne!(case(42), case(43));
}

#[test]
fn shards_together_are_the_whole_campaign() {
    let whole = campaign(120, (1, 1)).run(|_| true);
    let mut merged = pai_sim::fuzz::Coverage::default();
    let mut cases = 0;
    for i in 1..=4 {
        let part = campaign(120, (i, 4)).run(|_| true);
        cases += part.cases;
        merged.merge(&part.coverage);
    }
    assert_eq!(cases, whole.cases);
    assert_eq!(merged, whole.coverage);
    for index in 0..120 {
        let owners = (1..=4).filter(|s| in_shard(index, *s, 4)).count();
        assert_eq!(owners, 1, "case {index} belongs to exactly one shard");
    }
}

/// A failing case (here: a planted fault the L14 oracle must report) is
/// shrunk while the same oracle fires, written as a scenario file, and that
/// file fails the same way when it is loaded and run.
#[test]
fn a_failure_shrinks_into_a_file_that_replays_it() {
    let mut spec: ScenarioSpec = case(3);
    spec.faults.push(FaultSpec::Drop {
        event: EventName::PrepareRun,
        nth: 1,
    });
    let judged = evaluate(&spec);
    assert_eq!(
        judged.failure,
        Some(Failure::Oracle(OracleId::L14.into())),
        "{}",
        judged.message
    );
    let (shrunk, steps) = shrink(
        &spec,
        &Failure::Oracle(OracleId::L14.into()),
        (300, StoreKind::Memory),
        &Default::default(),
    );
    let size = |s: &ScenarioSpec| s.lifecycle.len() + s.model.turns.len() + s.timeline.len();
    assert!(size(&shrunk) <= size(&spec));
    assert!(steps > 0 || size(&spec) <= 2);
    let dir = std::env::temp_dir().join(format!("pai-fuzz-{}", std::process::id()));
    let file = write_find(
        &dir,
        &shrunk,
        &Failure::Oracle(OracleId::L14.into()),
        (7, 3, steps),
    )
    .expect("written");
    let loaded = Scenario::load(&file).expect("the written file loads");
    let report = pai_sim::simulate(&loaded, loaded.seed).expect("runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        report.violations.iter().any(|v| v.oracle == OracleId::L14),
        "{}",
        report.transcript
    );
    assert_eq!(loaded.rules, vec!["L14".to_string()]);
}

/// A twin violation is a find like any other (issue 38): the planted
/// `cancel_on_takeover` bug's scenario, judged as a fuzz case, fails with
/// oracle `twin`, shrinks while the twin still fires, and the written file
/// replays it.
#[test]
fn a_twin_violation_shrinks_into_a_file_that_replays_it() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/violations/twin_catches_a_takeover_that_ends_a_run_otherwise.toml");
    let text = std::fs::read_to_string(&path).expect("the violation scenario");
    let mut spec = ScenarioSpec::parse(&path, &text).expect("parses");
    (spec.expect, spec.oracle) = (Default::default(), None);
    let twin = Failure::Oracle(OracleId::Twin.into());
    let judged = evaluate(&spec);
    assert_eq!(judged.failure, Some(twin.clone()), "{}", judged.message);
    let (shrunk, steps) = shrink(&spec, &twin, (12, StoreKind::Memory), &Default::default());
    let dir = std::env::temp_dir().join(format!("pai-fuzz-twin-{}", std::process::id()));
    let file = write_find(&dir, &shrunk, &twin, (7, 1, steps)).expect("written");
    let loaded = Scenario::load(&file).expect("the written file loads");
    let report = pai_sim::simulate(&loaded, loaded.seed).expect("runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        report.violations.iter().any(|v| v.oracle == OracleId::Twin),
        "{}",
        report.transcript
    );
    assert_eq!(loaded.rules, vec!["K3".to_string()]);
}
