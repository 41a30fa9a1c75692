//! The shared durable store (feature `postgres`): threads in a PostgreSQL
//! database, for workers on several machines. The request logic is the
//! memory store's ([`engine`](super::engine)); this module only locks and
//! finds the thread's rows (`rows.rs`), hands the record over, and writes
//! back what changed, in one transaction per request. Tables live in one
//! Postgres schema, created and migrated on first connect (`schema.rs`).

mod config;
mod error;
mod rows;
mod schema;

use std::sync::Arc;

use tokio_postgres::{Client, IsolationLevel, NoTls, Transaction};

use super::engine;
use super::protocol::{Op, Store, StoreFuture, StoreRequest};
use super::record::StoreError;
use super::reply::{AdminReply, StoreReply};
use crate::clock::{Clock, Millis};
use crate::future::HookFuture;
pub use config::PgOptions;
use error::Backend;
pub use error::PgError;
use rows::{Cache, Loaded};
use schema::Statements;

/// Where a [`PgStore`] connects: `tokio_postgres`'s connection settings
/// (host or unix-socket folder, port, user, password, database, timeouts),
/// parsed from a `postgresql://` URL or a `key=value` string with
/// [`str::parse`], or built field by field.
pub use tokio_postgres::Config as PgConfig;

/// How often a request is tried again before it answers "unavailable",
/// after it lost a serialization or deadlock race, or found its kept
/// connection broken before it began (both roll back whole).
const RETRIES: u32 = 3;

/// One open connection and its prepared statements.
struct Conn {
    client: Client,
    st: Statements,
}

struct Inner {
    conn: Option<Conn>,
    migrated: bool,
    cache: Cache,
}

/// Threads kept in a PostgreSQL database, shared by workers on several
/// machines: same replies as [`MemoryStore`](crate::MemoryStore) (the
/// request logic is the same code), each request one transaction.
///
/// **Locking.** A request on one thread locks that thread's row
/// (`SELECT … FOR UPDATE`) before it reads it, so two stores never apply
/// requests to one thread at once; a thread that has no row yet is locked
/// by a transaction-scoped advisory lock on its id, and read again once
/// held, so two requests creating it are applied one after the other. An
/// unscoped claim visits claimable threads in id order, skipping rows
/// another transaction holds (`FOR UPDATE SKIP LOCKED`): a thread another
/// worker is busy with is not waited for. Ids order bytewise (`COLLATE
/// "C"`), as Rust strings do. A transaction the database breaks off as a
/// serialization failure or deadlock is tried again, a few times; any
/// other database error answers [`StoreError::Unavailable`] (the request
/// may or may not have landed).
///
/// **Clock.** Lease expiry reads the clock the store is built with (the
/// runtime's), never the database's `now()` (SPEC K2): every worker must
/// pass clocks that agree. The clock is read once the request holds the
/// thread's row lock. Without a clock leases never expire.
///
/// **Timeouts.** A request waits as long as the database makes it (for a
/// row another worker holds, or a server that does not answer): bound it
/// on the [`PgConfig`] (`connect_timeout`, `options("-c
/// lock_timeout=… -c statement_timeout=…")`), or around the call.
///
/// **Connection.** The store connects on its first request (it can be
/// built outside async code), and its connection runs as a task on the
/// Tokio runtime of that request. A broken connection is replaced: a
/// request that finds it broken before it began connects again and goes
/// on; one it breaks midway answers [`StoreError::Unavailable`], and the
/// next request connects again. One connection serves one request at a
/// time (requests of one store queue for it).
/// Connections use no TLS ([`NoTls`]): keep the database on a unix socket
/// or a trusted network.
///
/// **Schema.** Every table lives in the Postgres schema
/// [`PgOptions::schema`], created and migrated on first connect under a
/// version table; a schema written by a newer build is refused.
///
/// **Cache.** Decoded records are kept between requests and reused only
/// when the locked row's revision is the one they were read at.
pub struct PgStore {
    config: PgConfig,
    options: PgOptions,
    clock: Option<Arc<dyn Clock>>,
    inner: tokio::sync::Mutex<Inner>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("schema", &self.options.schema)
            .finish_non_exhaustive()
    }
}

impl Store for PgStore {
    fn call(&self, request: StoreRequest) -> StoreFuture<'_> {
        HookFuture::new(self.apply(request))
    }
}

impl PgStore {
    /// A store on the database `config` names, connecting on first use;
    /// leases expire by `clock` (without one, never).
    pub fn new(config: PgConfig, clock: Option<Arc<dyn Clock>>, options: PgOptions) -> PgStore {
        let cache = Cache::new(options.cached_threads);
        PgStore {
            config,
            options,
            clock,
            inner: tokio::sync::Mutex::new(Inner {
                conn: None,
                migrated: false,
                cache,
            }),
        }
    }

    /// [`PgStore::new`], then [`PgStore::migrate`]: connects now, so a
    /// database that cannot serve is reported here.
    pub async fn connect(
        config: PgConfig,
        clock: Option<Arc<dyn Clock>>,
        options: PgOptions,
    ) -> Result<PgStore, PgError> {
        let store = PgStore::new(config, clock, options);
        store.migrate().await?;
        Ok(store)
    }

    /// Connects if not connected, creating or migrating the schema.
    pub async fn migrate(&self) -> Result<(), PgError> {
        let mut inner = self.inner.lock().await;
        let Inner { conn, migrated, .. } = &mut *inner;
        self.connected(conn, migrated).await.map(|_| ())
    }

    /// The schema version the database holds (0: none yet).
    pub async fn schema_version(&self) -> Result<i64, PgError> {
        let mut inner = self.inner.lock().await;
        let Inner { conn, migrated, .. } = &mut *inner;
        let (conn, _) = self.connected(conn, migrated).await?;
        schema::read_version(&conn.client, &schema::quote(&self.options.schema)).await
    }

    /// Applies one request as one transaction, committed before it answers.
    pub async fn apply(&self, request: StoreRequest) -> Result<StoreReply, StoreError> {
        let mut inner = self.inner.lock().await;
        let mut tries = 0;
        loop {
            let failed = match self.transact(&mut inner, request.clone()).await {
                Ok(reply) => return reply,
                Err(failed) => failed,
            };
            inner.cache.clear();
            if failed.breaks_connection() {
                inner.conn = None;
            }
            if !failed.retryable() || tries == RETRIES {
                return Err(failed.into_store_error());
            }
            tries += 1;
        }
    }

    /// The open connection, opened (and the schema migrated, the first
    /// time) if there is none or it broke; and whether it is new.
    async fn connected<'a>(
        &self,
        slot: &'a mut Option<Conn>,
        migrated: &mut bool,
    ) -> Result<(&'a mut Conn, bool), PgError> {
        if slot.as_ref().is_some_and(|c| c.client.is_closed()) {
            *slot = None;
        }
        if let Some(conn) = slot {
            return Ok((conn, false));
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| PgError::NoRuntime)?;
        let (mut client, connection) = self.config.connect(NoTls).await?;
        runtime.spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!("postgres store connection: {e}");
            }
        });
        if !*migrated {
            schema::migrate(&mut client, &self.options.schema).await?;
            *migrated = true;
        }
        let st = Statements::prepare(&client, &self.options.schema).await?;
        Ok((slot.insert(Conn { client, st }), true))
    }

    /// One request in one transaction; records of it reach the cache only
    /// once it committed (a request dropped midway leaves no trace there).
    async fn transact(
        &self,
        inner: &mut Inner,
        request: StoreRequest,
    ) -> Result<Result<StoreReply, StoreError>, Backend> {
        let Inner {
            conn,
            migrated,
            cache,
        } = inner;
        let (Conn { client, st }, fresh) = self.connected(conn, migrated).await?;
        let begun = client
            .build_transaction()
            .isolation_level(IsolationLevel::ReadCommitted)
            .start()
            .await;
        let tx = match begun {
            Ok(tx) => tx,
            Err(e) if !fresh => return Err(Backend::Stale(e)),
            Err(e) => return Err(e.into()),
        };
        let mut keep = Vec::new();
        let clock = self.clock.as_deref();
        let cx = Cx { tx: &tx, st, clock };
        let reply = match request {
            StoreRequest::ThreadIds => Ok(StoreReply::Admin(AdminReply::Ids(
                rows::live_ids(&tx, st).await?,
            ))),
            StoreRequest::ClaimAny { worker, ttl } => {
                cx.claim_any(cache, &mut keep, &worker, ttl).await?
            }
            StoreRequest::On { thread, op } => {
                cx.on_thread(cache, &mut keep, thread.to_string(), op)
                    .await?
            }
        };
        tx.commit().await?;
        for (id, loaded) in keep {
            cache.keep(id, loaded);
        }
        Ok(reply)
    }
}

/// What a request's steps share: its transaction, statements and clock.
struct Cx<'a> {
    tx: &'a Transaction<'a>,
    st: &'a Statements,
    clock: Option<&'a dyn Clock>,
}

type Kept = Vec<(String, Loaded)>;

impl Cx<'_> {
    /// The store's clock, read once the request holds what it acts on (a
    /// request that waited for a lock sees the time it is applied at).
    fn now(&self) -> Millis {
        self.clock.map_or(0, |c| c.now())
    }

    async fn on_thread(
        &self,
        cache: &mut Cache,
        keep: &mut Kept,
        id: String,
        op: Op,
    ) -> Result<Result<StoreReply, StoreError>, Backend> {
        let (mut slot, before) = match rows::lock(self.tx, self.st, &id).await? {
            Some(row) => {
                let (rec, before) = rows::load(self.tx, self.st, cache, &id, row).await?.split();
                (Some(rec), Some(before))
            }
            None => (None, None),
        };
        let reply = engine::apply_thread(&mut slot, &id, op, self.now());
        if let Some(rec) = slot {
            let saved = rows::save(self.tx, self.st, &id, rec, before).await?;
            keep.push((id, saved));
        }
        Ok(reply)
    }

    /// A claim naming no thread: the first claimable thread in id order
    /// that has a run to take, of those no other transaction holds.
    async fn claim_any(
        &self,
        cache: &mut Cache,
        keep: &mut Kept,
        worker: &str,
        ttl: Option<Millis>,
    ) -> Result<Result<StoreReply, StoreError>, Backend> {
        let mut after: Option<String> = None;
        let now = self.now();
        while let Some((id, row)) = rows::lock_claimable(self.tx, self.st, after.as_deref()).await?
        {
            let (mut rec, before) = rows::load(self.tx, self.st, cache, &id, row).await?.split();
            let claimed = engine::claim_first(&mut rec, &id, worker, ttl, now);
            let saved = rows::save(self.tx, self.st, &id, rec, Some(before)).await?;
            keep.push((id.clone(), saved));
            if claimed.is_some() {
                return Ok(Ok(StoreReply::Admin(AdminReply::Claimed(claimed))));
            }
            after = Some(id);
        }
        Ok(Ok(StoreReply::Admin(AdminReply::Claimed(None))))
    }
}

#[cfg(test)]
mod tests;
