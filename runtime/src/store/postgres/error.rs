//! What can go wrong: a database that cannot serve as a store, and a
//! database failing during a request (answered as unavailable).

use tokio_postgres::error::SqlState;

use crate::store::record::StoreError;

/// Why a Postgres database could not serve as a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// Postgres itself failed: the database could not be reached, or its tables
    /// could not be read or set up.
    #[error("postgres: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// The schema was written by a newer build: this one does not know it,
    /// and changes nothing.
    #[error("schema {schema} has version {found}; this build knows versions up to {supported}")]
    NewerSchema {
        /// The Postgres schema the store's tables live in.
        schema: String,
        /// The version that schema has.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The store was called outside a Tokio runtime: its connection runs
    /// as a task on the caller's runtime.
    #[error("PgStore must be called inside a Tokio runtime")]
    NoRuntime,
}

/// A failure of the database itself during a request (not a refusal).
#[derive(Debug)]
pub(crate) enum Backend {
    Setup(PgError),
    Db(tokio_postgres::Error),
    Corrupt {
        thread: String,
        why: String,
    },
    /// A connection kept from an earlier request failed to begin this
    /// one: nothing of it reached the database.
    Stale(tokio_postgres::Error),
    /// The thread's row changed under its lock: never, unless something
    /// outside the store writes the tables.
    Lost(String),
}

impl From<tokio_postgres::Error> for Backend {
    fn from(e: tokio_postgres::Error) -> Self {
        Backend::Db(e)
    }
}

impl From<PgError> for Backend {
    fn from(e: PgError) -> Self {
        Backend::Setup(e)
    }
}

impl Backend {
    pub(super) fn corrupt(thread: &str) -> impl FnOnce(serde_json::Error) -> Backend + '_ {
        move |e| Backend::Corrupt {
            thread: thread.to_string(),
            why: e.to_string(),
        }
    }

    /// A race the database broke off: the transaction rolled back whole,
    /// and trying again is safe.
    pub(super) fn retryable(&self) -> bool {
        let code = match self {
            Backend::Stale(_) => return true,
            Backend::Db(e) | Backend::Setup(PgError::Postgres(e)) => e.code(),
            _ => None,
        };
        code.is_some_and(|c| {
            *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
        })
    }

    /// Whether the connection may be broken after this error: anything
    /// but an error the server answered in a working session (a
    /// connection exception, class 08, or an operator's intervention such
    /// as a terminated backend, class 57, breaks it too).
    pub(super) fn breaks_connection(&self) -> bool {
        match self {
            Backend::Stale(_) => true,
            Backend::Db(e) | Backend::Setup(PgError::Postgres(e)) => e
                .as_db_error()
                .is_none_or(|db| matches!(db.code().code().get(..2), Some("08" | "57"))),
            _ => false,
        }
    }

    pub(super) fn into_store_error(self) -> StoreError {
        StoreError::Unavailable(match self {
            Backend::Setup(e) => e.to_string(),
            Backend::Db(e) | Backend::Stale(e) => describe(&e),
            Backend::Corrupt { thread, why } => {
                format!("postgres: thread {thread} is unreadable: {why}")
            }
            Backend::Lost(thread) => {
                format!("postgres: the row of thread {thread} changed under its lock")
            }
        })
    }
}

/// A database error with what the server said (`Display` alone says only
/// "db error").
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("postgres: {} ({})", db.message(), db.code().code()),
        None => format!("postgres: {e}"),
    }
}
