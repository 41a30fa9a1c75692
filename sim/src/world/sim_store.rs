//! The store a simulated run keeps its threads in (`pai-sim run --store`).
//! Every kind answers synchronously inside the simulated world: SQLite is
//! called in place, never on a blocking thread, so a run stays one thread
//! of control and its transcript does not depend on the store. The
//! SQLite store keeps no decoded records between requests: every request
//! reads its thread back from the database, so a run proves the rows.

use std::sync::Arc;

#[cfg(feature = "sqlite")]
use pai_runtime::store::{Durability, SqliteConfig, SqliteStore};
use pai_runtime::{
    Clock, MemoryStore, StoreError,
    store::{StoreReply, StoreRequest},
};

/// Which store a simulated run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StoreKind {
    /// The runtime's in-memory store: the default, and what snapshots are
    /// recorded on.
    #[default]
    Memory,
    /// SQLite, in a private in-memory database.
    Sqlite,
}

impl StoreKind {
    /// The store's name on the command line (`--store memory`, `--store
    /// sqlite`) and in replay commands.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Memory => "memory",
            StoreKind::Sqlite => "sqlite",
        }
    }
}

impl std::str::FromStr for StoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "memory" => Ok(StoreKind::Memory),
            "sqlite" => Ok(StoreKind::Sqlite),
            p if p == "postgres" || p.starts_with("postgres=") => Err(
                "postgres cannot serve a simulated run (a real socket cannot live under paused \
                 virtual time); judge a Postgres store with the store conformance suite instead: \
                 `cargo test -p pai-store-check` in a checkout (it starts a throwaway server when \
                 the PostgreSQL server binaries are installed; see README, Stores)"
                    .to_string(),
            ),
            other => Err(format!(
                "unknown store `{other}`: expected memory or sqlite"
            )),
        }
    }
}

/// A simulated run's store.
#[derive(Debug)]
pub enum SimStore {
    Memory(MemoryStore),
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteStore),
}

impl SimStore {
    /// A fresh, empty store whose leases expire by `clock` (none: never);
    /// SQLite only when pai-sim was built with its feature `sqlite` (on
    /// by default for the binary).
    pub fn new(kind: StoreKind, clock: Option<Arc<dyn Clock>>) -> Result<SimStore, String> {
        Ok(match kind {
            StoreKind::Memory => SimStore::Memory(MemoryStore::new(clock)),
            #[cfg(feature = "sqlite")]
            StoreKind::Sqlite => {
                let config = SqliteConfig::default()
                    .durability(Durability::Off)
                    .cached_threads(0);
                let store = SqliteStore::in_memory(clock, config).map_err(|e| e.to_string())?;
                SimStore::Sqlite(store)
            }
            #[cfg(not(feature = "sqlite"))]
            StoreKind::Sqlite => {
                let _ = clock;
                return Err(
                    "this pai-sim was built without its `sqlite` feature (add `features = [\"sqlite\"]`)"
                        .into(),
                );
            }
        })
    }

    /// Applies one request as one transaction.
    pub fn apply(&self, request: StoreRequest) -> Result<StoreReply, StoreError> {
        match self {
            SimStore::Memory(s) => s.apply(request),
            #[cfg(all(test, feature = "sqlite"))]
            SimStore::Sqlite(s) if plant::on() => plant::apply(s, request),
            #[cfg(feature = "sqlite")]
            SimStore::Sqlite(s) => s.apply(request),
        }
    }
}

/// A store bug planted in tests (never in a build): SQLite does not write a
/// run's metadata back (it keeps what was there), yet answers as if it had.
/// Only a differential run can see it. One thread's switch: Tokio runs a
/// simulation on the test's own thread.
#[cfg(all(test, feature = "sqlite"))]
pub(crate) mod plant {
    use std::cell::Cell;

    use pai_runtime::{
        StoreError,
        store::{Op, ReadOp, ReadReply, RunOp, SqliteStore, StoreReply, StoreRequest},
    };

    thread_local! {
        static LOSE_RUN_METADATA: Cell<bool> = const { Cell::new(false) };
    }

    /// Plants the bug on this thread (`true`) or removes it.
    pub(crate) fn set(on: bool) {
        LOSE_RUN_METADATA.with(|c| c.set(on));
    }

    pub(super) fn on() -> bool {
        LOSE_RUN_METADATA.with(Cell::get)
    }

    pub(super) fn apply(
        s: &SqliteStore,
        mut request: StoreRequest,
    ) -> Result<StoreReply, StoreError> {
        // Metadata carried by a results' commit (K5) is dropped the same way.
        if let StoreRequest::On {
            op:
                Op::Run {
                    op: RunOp::Append { metadata, .. } | RunOp::CommitResumed { metadata, .. },
                    ..
                },
            ..
        } = &mut request
        {
            *metadata = None;
        }
        let StoreRequest::On {
            thread,
            op:
                Op::Run {
                    run,
                    token,
                    op: RunOp::SetRunMetadata { .. },
                },
        } = request
        else {
            return s.apply(request);
        };
        let old = s.apply(StoreRequest::read(
            &thread,
            ReadOp::RunMetadata { run: run.clone() },
        ));
        let value = match old {
            Ok(StoreReply::Read(ReadReply::RunMetadata(Some(v)))) => v,
            _ => serde_json::Value::Null,
        };
        s.apply(StoreRequest::run(
            thread,
            run,
            token,
            RunOp::SetRunMetadata { value },
        ))
    }
}
