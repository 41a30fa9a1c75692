//! The suite against the SQLite store: with no cache (every request reads
//! its thread back from the rows), with the cache, and in a database file.

use std::sync::Arc;

use pai_runtime::{
    Clock,
    store::{Durability, SqliteConfig, SqliteStore},
};
use pai_store_check::{Config, Op, assert_store, replay};

fn uncached(clock: Arc<dyn Clock>) -> SqliteStore {
    let config = SqliteConfig::default().cached_threads(0);
    SqliteStore::in_memory(Some(clock), config).expect("an in-memory database opens")
}

fn cached(clock: Arc<dyn Clock>) -> SqliteStore {
    SqliteStore::in_memory(Some(clock), SqliteConfig::default()).expect("opens")
}

fn config() -> Config {
    Config {
        regressions: Some(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/it/memory.proptest-regressions"
        )),
        ..Config::default()
    }
}

/// H1–H5, K1–K4, K6 on SQLite rows: every request decodes the thread from
/// the database, so a field the rows lose or reorder shows here.
#[test]
fn sqlite_store_conforms_reading_every_record_back() {
    assert_store(uncached, &config());
}

/// The same with decoded records kept between requests (revision-checked).
#[test]
fn sqlite_store_conforms_with_its_cache() {
    assert_store(cached, &config());
}

/// The same on a database file in WAL mode (fewer cases: files are slower).
#[test]
fn sqlite_store_conforms_on_a_file() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let counter = std::sync::atomic::AtomicU32::new(0);
    let on_file = |clock: Arc<dyn Clock>| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.path().join(format!("case-{n}.db"));
        let config = SqliteConfig::default()
            .durability(Durability::Off)
            .cached_threads(0);
        SqliteStore::open(path, Some(clock), config).expect("a database file opens")
    };
    let config = Config {
        cases: 16,
        ..config()
    };
    assert_store(on_file, &config);
}

#[derive(serde::Deserialize)]
struct Regression {
    name: String,
    ops: Vec<Op>,
}

#[test]
fn sqlite_store_passes_the_written_regressions() {
    let text = include_str!("regressions.json");
    let cases: Vec<Regression> = serde_json::from_str(text).expect("regressions.json parses");
    for case in cases {
        if let Err(failure) = replay(uncached, &case.ops, &Config::default()) {
            panic!("{}:\n{failure}", case.name);
        }
    }
}
