//! Differential fuzzing against a planted store bug (issue 25): SQLite does
//! not write a run's metadata back. Memory alone cannot see it; a case run
//! on both stores is a find, shrinks as one, and its file replays it with
//! `pai-sim run FILE --differential`.

use super::judge::{Failure, differential, evaluate, evaluate_across};
use super::{Features, case_with, shrink, write_find};
use crate::scenario::{Scenario, ScenarioSpec};
use crate::suite::{SnapshotMode, run_case};
use crate::world::StoreKind;
use crate::world::plant;

/// A generated case that passes and writes a run's metadata.
fn writing_metadata() -> ScenarioSpec {
    // Every kind on: the case the plant was written against.
    (0..500)
        .map(|seed| case_with(seed, Features::ALL))
        .find(|spec| {
            let judged = evaluate(spec);
            judged.failure.is_none() && judged.coverage.count("metadata.written") > 0
        })
        .expect("some case of the first 500 writes run metadata")
}

/// Removes the plant even when an assertion fails.
struct Planted;

impl Planted {
    fn new() -> Planted {
        plant::set(true);
        Planted
    }
}

impl Drop for Planted {
    fn drop(&mut self) {
        plant::set(false);
    }
}

/// SPEC D1: the planted bug passes every oracle on memory, and is a
/// differential find (memory and sqlite differ) once compared.
#[test]
fn d1_a_store_that_loses_a_write_is_found_only_differentially() {
    let spec = writing_metadata();
    let memory = StoreKind::Memory;
    assert_eq!(evaluate_across(&spec, memory, true).failure, None);
    let _planted = Planted::new();
    assert_eq!(evaluate_across(&spec, memory, false).failure, None);
    let judged = evaluate_across(&spec, memory, true);
    let failure = Failure::Differential {
        store: memory,
        against: StoreKind::Sqlite,
    };
    assert_eq!(
        judged.failure.as_ref(),
        Some(&failure),
        "{}",
        judged.message
    );
    assert!(judged.message.contains("memory and sqlite differ"));
    assert_eq!(failure.rule(), "D1");
    assert_eq!(judged.coverage.count("diff.sqlite"), 1);
}

/// The find shrinks while the stores still differ, and the written file
/// replays it: `pai-sim run FILE --differential` fails with the difference.
#[test]
fn d2_a_differential_find_shrinks_into_a_file_that_replays_it() {
    let spec = writing_metadata();
    let _planted = Planted::new();
    let failure = Failure::Differential {
        store: StoreKind::Memory,
        against: StoreKind::Sqlite,
    };
    let (shrunk, steps) = shrink(
        &spec,
        &failure,
        (80, StoreKind::Memory),
        &Default::default(),
    );
    assert!(steps > 0);
    let dir = std::env::temp_dir().join(format!("pai-diff-{}", std::process::id()));
    let file = write_find(&dir, &shrunk, &failure, (1, 9, steps)).expect("written");
    let loaded = Scenario::load(&file).expect("the written file loads");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(loaded.rules, ["D1"]);
    let plain = run_case(
        &file,
        &loaded,
        None,
        (StoreKind::Memory, false),
        SnapshotMode::Check,
    );
    assert!(!plain.failed(), "{:?}", plain.problems);
    let compared = run_case(
        &file,
        &loaded,
        None,
        (StoreKind::Memory, true),
        SnapshotMode::Check,
    );
    assert!(compared.replay().ends_with("--differential"));
    assert!(
        compared
            .problems
            .iter()
            .any(|p| p.starts_with("D1 across stores: the ")),
        "{:?}",
        compared.problems
    );
    let everywhere =
        crate::suite::run_case_on_every_store(&file, &loaded, None, SnapshotMode::Check);
    assert!(
        everywhere
            .replay()
            .ends_with("--store sqlite --differential")
    );
    assert!(
        everywhere
            .problems
            .iter()
            .any(|p| p.starts_with("D1 across stores: the ")),
        "{:?}",
        everywhere.problems
    );
}

#[test]
fn one_case_in_n_is_compared() {
    let seeds = (0..8000u64).map(|i| super::case_seed(1, i));
    let compared = seeds.clone().filter(|s| differential(*s, 8)).count();
    assert!((850..1150).contains(&compared), "{compared} of 8000");
    assert!(seeds.clone().all(|s| differential(s, 1)));
    assert!(!seeds.clone().any(|s| differential(s, 0)));
}
