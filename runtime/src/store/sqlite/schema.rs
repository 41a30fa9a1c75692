//! Opening a SQLite database for the store: connection settings, and the
//! schema, created and migrated on open under a version table.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::config::Durability;
use super::error::SqliteError;

/// The schema's migrations, in order: migration `k` takes the database
/// from version `k` to `k + 1`. Never edit one that has shipped; add one.
const MIGRATIONS: &[&str] = &[
    // 1: threads (the record's head as JSON, plus what queries need as
    // columns) and their messages, one row per position.
    "CREATE TABLE pai_threads (
        id TEXT PRIMARY KEY NOT NULL,
        rev INTEGER NOT NULL,
        deleted INTEGER NOT NULL,
        claimable INTEGER NOT NULL,
        head TEXT NOT NULL
     ) WITHOUT ROWID;
     CREATE INDEX pai_threads_claimable ON pai_threads (claimable, id);
     CREATE TABLE pai_messages (
        thread TEXT NOT NULL,
        pos INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (thread, pos)
     ) WITHOUT ROWID;",
];

/// The schema version this build writes.
pub(super) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// How long a request waits for another process's transaction to finish
/// before it answers "unavailable" (SQLite's own lock wait, not a clock
/// the runtime reads).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Applies the connection settings, then brings the schema up to date in
/// one transaction. A database written by a newer build is refused.
pub(super) fn prepare(conn: &mut Connection, durability: Durability) -> Result<(), SqliteError> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // WAL: readers do not block the writer, and a commit is one append to
    // the log. An in-memory database answers "memory" and stays so.
    let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    conn.execute_batch(match durability {
        Durability::Full => "PRAGMA synchronous = FULL;",
        Durability::Normal => "PRAGMA synchronous = NORMAL;",
        Durability::Off => "PRAGMA synchronous = OFF;",
    })?;
    migrate(conn)
}

fn migrate(conn: &mut Connection) -> Result<(), SqliteError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch("CREATE TABLE IF NOT EXISTS pai_schema (version INTEGER NOT NULL);")?;
    let found: Option<i64> = tx
        .query_row("SELECT version FROM pai_schema", [], |r| r.get(0))
        .optional()?;
    let found = found.unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(SqliteError::NewerSchema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for migration in &MIGRATIONS[found as usize..] {
        tx.execute_batch(migration)?;
    }
    if found == 0 {
        tx.execute(
            "INSERT INTO pai_schema (version) VALUES (?1)",
            [SCHEMA_VERSION],
        )?;
    } else if found < SCHEMA_VERSION {
        tx.execute("UPDATE pai_schema SET version = ?1", [SCHEMA_VERSION])?;
    }
    tx.commit()?;
    Ok(())
}

/// The schema version a database holds (0: none).
pub(super) fn version(conn: &Connection) -> Result<i64, SqliteError> {
    Ok(conn
        .query_row("SELECT version FROM pai_schema", [], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}
