//! The suite against MemoryStore, the runtime's own store.

use std::sync::Arc;

use pai_runtime::{Clock, MemoryStore};
use pai_store_check::{Config, Op, assert_store, replay};

fn memory(clock: Arc<dyn Clock>) -> MemoryStore {
    MemoryStore::new(Some(clock))
}

/// H1–H5, K1–K4, K6 (with T7, T9, A4): random sequences on MemoryStore
/// agree with the reference model. `PAI_STORE_CHECK_CASES` raises the
/// count; seeds of past failures in `memory.proptest-regressions` run first.
#[test]
fn memory_store_conforms() {
    let config = Config {
        regressions: Some(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/it/memory.proptest-regressions"
        )),
        ..Config::default()
    };
    assert_store(memory, &config);
}

#[derive(serde::Deserialize)]
struct Regression {
    name: String,
    ops: Vec<Op>,
}

/// The written sequences of `regressions.json` (rules named in each), replayed.
#[test]
fn memory_store_passes_the_written_regressions() {
    let text = include_str!("regressions.json");
    let cases: Vec<Regression> = serde_json::from_str(text).expect("regressions.json parses");
    assert!(cases.len() >= 5);
    for case in cases {
        if let Err(failure) = replay(memory, &case.ops, &Config::default()) {
            panic!("{}:\n{failure}", case.name);
        }
    }
}
