//! The suite against PgStore on a real PostgreSQL server (skipped, with a
//! message, when no server binaries are installed and PAI_REQUIRE_PG is
//! unset). Every case gets a fresh, empty store: a new schema in the one
//! database. One test owns the server, so it is stopped when the test
//! returns (a server in a static would outlive the process's exit).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use pai_pg_server::PgServer;
use pai_runtime::{
    Clock,
    store::{PgConfig, PgOptions, PgStore},
};
use pai_store_check::{Config, Op, assert_store, replay};

#[derive(serde::Deserialize)]
struct Regression {
    name: String,
    ops: Vec<Op>,
}

/// Builds each case's store in its own schema of `config`'s database.
fn maker(config: PgConfig) -> impl Fn(Arc<dyn Clock>) -> PgStore {
    let cases = AtomicUsize::new(0);
    move |clock| {
        let schema = format!("case_{}", cases.fetch_add(1, Ordering::Relaxed));
        PgStore::new(
            config.clone(),
            Some(clock),
            PgOptions::default().schema(schema),
        )
    }
}

/// H1–H5, K1–K4, K6 (with T7, T9, A4) on PgStore, then the written
/// regressions of `regressions.json`. 32 generated cases, or
/// `PAI_STORE_CHECK_CASES`; seeds of past failures in `postgres.proptest-regressions` run
/// first.
#[test]
fn postgres_store_conforms() {
    let Some(server) = PgServer::start().expect("starting a PostgreSQL server") else {
        eprintln!("postgres_store_conforms: skipped, no PostgreSQL server");
        return;
    };
    // A throwaway server: commits need not wait for the disk.
    let mut pg = server.config("postgres");
    pg.options("-c synchronous_commit=off");
    let make = maker(pg);
    let started = Instant::now();
    let config = Config {
        // Half the memory store's default (a case costs a connection and
        // a migrated schema); PAI_STORE_CHECK_CASES still sets the count.
        cases: match std::env::var_os("PAI_STORE_CHECK_CASES") {
            Some(_) => Config::default().cases,
            None => 32,
        },
        regressions: Some(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/it/postgres.proptest-regressions"
        )),
        ..Config::default()
    };
    assert_store(&make, &config);
    let generated = started.elapsed();
    let cases: Vec<Regression> =
        serde_json::from_str(include_str!("regressions.json")).expect("regressions.json parses");
    for case in cases {
        if let Err(failure) = replay(&make, &case.ops, &Config::default()) {
            panic!("{}:\n{failure}", case.name);
        }
    }
    eprintln!(
        "postgres_store_conforms: {} generated cases in {generated:?}, all in {:?}",
        config.cases,
        started.elapsed()
    );
    drop(server);
}
