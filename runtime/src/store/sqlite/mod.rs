//! The embedded durable store (feature `sqlite`): threads in a SQLite
//! database, each request one `BEGIN IMMEDIATE` transaction. The request
//! logic is the memory store's ([`engine`](super::engine)); this module
//! only finds the thread's record (`rows.rs`), hands it over, and writes
//! back what changed before it commits. Lease expiry reads the clock the
//! runtime passes in, never SQLite's or the OS's (SPEC K2).
//!
//! Several processes may share one database file: the immediate
//! transaction takes SQLite's write lock before the record is read, and a
//! decoded record is reused only while its row's revision is unchanged.

mod config;
mod error;
mod rows;
mod schema;

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::engine;
use super::protocol::{Op, Store, StoreFuture, StoreRequest};
use super::record::StoreError;
use super::reply::{AdminReply, StoreReply};
use crate::clock::{Clock, Millis};
use crate::future::HookFuture;
pub use config::{Durability, SqliteConfig};
use error::Backend;
pub use error::SqliteError;
use rows::Cache;

struct Inner {
    conn: Connection,
    cache: Cache,
}

/// Threads kept in a SQLite database: the embedded default of a runtime
/// that is not simulated. Each request is one transaction; a crash between
/// two requests loses nothing committed (with [`Durability::Full`] or
/// [`Durability::Normal`]). Requests are answered synchronously: keep the
/// database on a local disk.
pub struct SqliteStore {
    inner: Mutex<Inner>,
    clock: Option<Arc<dyn Clock>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

impl Store for SqliteStore {
    fn call(&self, request: StoreRequest) -> StoreFuture<'_> {
        HookFuture::ready(self.apply(request))
    }
}

impl SqliteStore {
    /// Opens (creating or migrating) the database at `path`; leases expire
    /// by `clock` (without one, never).
    pub fn open(
        path: impl AsRef<Path>,
        clock: Option<Arc<dyn Clock>>,
        config: SqliteConfig,
    ) -> Result<SqliteStore, SqliteError> {
        SqliteStore::with_connection(Connection::open(path)?, clock, config)
    }

    /// A store in a private in-memory database (gone when dropped).
    pub fn in_memory(
        clock: Option<Arc<dyn Clock>>,
        config: SqliteConfig,
    ) -> Result<SqliteStore, SqliteError> {
        SqliteStore::with_connection(Connection::open_in_memory()?, clock, config)
    }

    fn with_connection(
        mut conn: Connection,
        clock: Option<Arc<dyn Clock>>,
        config: SqliteConfig,
    ) -> Result<SqliteStore, SqliteError> {
        schema::prepare(&mut conn, config.durability)?;
        Ok(SqliteStore {
            inner: Mutex::new(Inner {
                conn,
                cache: Cache::new(config.cached_threads),
            }),
            clock,
        })
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64, SqliteError> {
        schema::version(&self.lock().conn)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic mid-request drops its transaction (a rollback) and can
        // leave only a stale cache, which the next request's revision check
        // would not trust anyway; clear it to be plain about it.
        self.inner.lock().unwrap_or_else(|e| {
            let mut inner = e.into_inner();
            inner.cache.clear();
            inner
        })
    }

    fn now(&self) -> Millis {
        self.clock.as_ref().map_or(0, |c| c.now())
    }

    /// Applies one request as one transaction, committed before it answers.
    pub fn apply(&self, request: StoreRequest) -> Result<StoreReply, StoreError> {
        let now = self.now();
        let mut inner = self.lock();
        let Inner { conn, cache } = &mut *inner;
        let done = transact(conn, cache, request, now);
        if done.is_err() {
            cache.clear();
        }
        done.unwrap_or_else(|e| Err(e.into_store_error()))
    }
}

/// One request in one transaction: an error of the database rolls it back.
fn transact(
    conn: &mut Connection,
    cache: &mut Cache,
    request: StoreRequest,
    now: Millis,
) -> Result<Result<StoreReply, StoreError>, Backend> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let reply = match request {
        StoreRequest::ThreadIds => Ok(StoreReply::Admin(AdminReply::Ids(rows::live_ids(&tx)?))),
        StoreRequest::ClaimAny { worker, ttl } => claim_any(&tx, cache, &worker, ttl, now)?,
        StoreRequest::On { thread, op } => on_thread(&tx, cache, &thread, op, now)?,
    };
    tx.commit()?;
    Ok(reply)
}

fn on_thread(
    tx: &Transaction<'_>,
    cache: &mut Cache,
    id: &str,
    op: Op,
    now: Millis,
) -> Result<Result<StoreReply, StoreError>, Backend> {
    let (mut slot, before) = match rows::load(tx, cache, id)? {
        Some(loaded) => {
            let (rec, before) = loaded.split();
            (Some(rec), Some(before))
        }
        None => (None, None),
    };
    let reply = engine::apply_thread(&mut slot, id, op, now);
    if let Some(rec) = slot {
        rows::save(tx, cache, id, rec, before)?;
    }
    Ok(reply)
}

/// A claim naming no thread: the first claimable thread in id order.
fn claim_any(
    tx: &Transaction<'_>,
    cache: &mut Cache,
    worker: &str,
    ttl: Option<Millis>,
    now: Millis,
) -> Result<Result<StoreReply, StoreError>, Backend> {
    for id in rows::claimable_ids(tx)? {
        let Some(loaded) = rows::load(tx, cache, &id)? else {
            continue;
        };
        let (mut rec, before) = loaded.split();
        let claimed = engine::claim_first(&mut rec, &id, worker, ttl, now);
        rows::save(tx, cache, &id, rec, Some(before))?;
        if claimed.is_some() {
            return Ok(Ok(StoreReply::Admin(AdminReply::Claimed(claimed))));
        }
    }
    Ok(Ok(StoreReply::Admin(AdminReply::Claimed(None))))
}

#[cfg(test)]
mod tests;
