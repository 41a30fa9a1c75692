//! What can go wrong: opening a database, and a database failing during
//! a request (which the store answers as unavailable).

use crate::store::record::StoreError;

/// Why a SQLite database could not be opened as a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteError {
    /// SQLite itself failed: the file could not be opened, read or set up.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The database was written by a newer build: this one does not know
    /// its schema, and changes nothing.
    #[error("the database has schema version {found}; this build knows versions up to {supported}")]
    NewerSchema {
        /// The schema version the database has.
        found: i64,
        /// The newest schema version this build knows.
        supported: i64,
    },
}

/// A failure of the database itself during a request (not a refusal).
#[derive(Debug)]
pub(crate) enum Backend {
    Sqlite(rusqlite::Error),
    Corrupt { thread: String, why: String },
}

impl From<rusqlite::Error> for Backend {
    fn from(e: rusqlite::Error) -> Self {
        Backend::Sqlite(e)
    }
}

impl Backend {
    pub(super) fn corrupt(thread: &str) -> impl FnOnce(serde_json::Error) -> Backend + '_ {
        move |e| Backend::Corrupt {
            thread: thread.to_string(),
            why: e.to_string(),
        }
    }

    pub(super) fn into_store_error(self) -> StoreError {
        match self {
            Backend::Sqlite(e) => StoreError::Unavailable(format!("sqlite: {e}")),
            Backend::Corrupt { thread, why } => {
                StoreError::Unavailable(format!("sqlite: thread {thread} is unreadable: {why}"))
            }
        }
    }
}
