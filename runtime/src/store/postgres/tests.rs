//! The Postgres store against the memory store, on a real server: the same
//! requests give the same replies and the same stored threads (with and
//! without the cache), two stores on one database see each other's
//! commits, a new store on the schema sees every commit, racing requests
//! are applied one after the other, and a broken connection is replaced.
//!
//! One server serves the whole test binary: [`postgres_store`] starts it,
//! runs every case in turn (each in a fresh schema) and stops it when it
//! returns. A server kept in a static would never be stopped (statics are
//! not dropped at exit), and a server per test costs seconds each.

use std::sync::atomic::{AtomicUsize, Ordering};

use pai_pg_server::PgServer;

use super::*;
use crate::MemoryStore;
use crate::store::StoredThread;
use crate::store::{Expect, Write, Writer};

use crate::store::test_script::{
    append, check_after_edit, check_after_regeneration, claim, script, submit,
};

/// The test server's database, and a fresh schema for each store set.
struct Db {
    config: PgConfig,
    schemas: AtomicUsize,
}

impl Db {
    fn fresh_schema(&self) -> String {
        format!("case_{}", self.schemas.fetch_add(1, Ordering::Relaxed))
    }

    fn store(&self, schema: &str, cached: usize) -> PgStore {
        let options = PgOptions::default().schema(schema).cached_threads(cached);
        PgStore::new(self.config.clone(), None, options)
    }

    /// A plain client, to reach around the store.
    async fn client(&self) -> Client {
        let (client, connection) = self.config.connect(NoTls).await.expect("connecting");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }
}

#[test]
fn postgres_store() {
    let Some(server) = PgServer::start().expect("starting a PostgreSQL server") else {
        eprintln!("postgres_store: skipped, no PostgreSQL server");
        return;
    };
    let db = Db {
        config: server.config("postgres"),
        schemas: AtomicUsize::new(0),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async {
        k2_h1_h5_the_same_requests_get_the_same_replies_as_in_memory(&db).await;
        a_visibility_edit_and_a_truncation_reach_the_rows(&db).await;
        ids_order_bytewise_as_in_memory(&db).await;
        x3_a_new_store_on_the_schema_sees_every_commit(&db).await;
        two_stores_on_one_database_see_each_others_commits(&db).await;
        racing_creations_of_one_thread_all_land(&db).await;
        racing_writes_to_one_thread_all_land(&db).await;
        racing_unscoped_claims_take_each_run_once(&db).await;
        a_schema_of_a_newer_build_is_refused_untouched(&db).await;
        an_unreadable_record_is_an_error_not_a_panic(&db).await;
        a_broken_connection_is_replaced(&db).await;
    });
    drop(server);
}

async fn inspect(store: &PgStore, t: &str) -> Option<StoredThread> {
    match store
        .apply(StoreRequest::admin(t, crate::store::AdminOp::Inspect))
        .await
    {
        Ok(StoreReply::Admin(crate::store::AdminReply::Thread(t))) => t,
        other => panic!("inspect answered {other:?}"),
    }
}

fn inspect_memory(memory: &MemoryStore, t: &str) -> Option<StoredThread> {
    match memory.apply(StoreRequest::admin(t, crate::store::AdminOp::Inspect)) {
        Ok(StoreReply::Admin(crate::store::AdminReply::Thread(t))) => t,
        other => panic!("inspect answered {other:?}"),
    }
}

async fn k2_h1_h5_the_same_requests_get_the_same_replies_as_in_memory(db: &Db) {
    for cached in [0, 1, 1024] {
        let memory = MemoryStore::default();
        let store = db.store(&db.fresh_schema(), cached);
        for (k, request) in script().into_iter().enumerate() {
            let want = memory.apply(request.clone());
            let got = store.apply(request).await;
            assert_eq!(got, want, "request {k} with {cached} cached threads");
        }
        for t in ["t1", "t2"] {
            assert_eq!(inspect(&store, t).await, inspect_memory(&memory, t));
        }
    }
}

async fn a_visibility_edit_and_a_truncation_reach_the_rows(db: &Db) {
    let store = db.store(&db.fresh_schema(), 0);
    let mut script = script().into_iter();
    for request in script.by_ref().take(7) {
        let _ = store.apply(request).await;
    }
    let t1 = inspect(&store, "t1").await.unwrap();
    check_after_edit(&t1);
    store.apply(script.next().unwrap()).await.unwrap();
    let t1 = inspect(&store, "t1").await.unwrap();
    check_after_regeneration(&t1);
}

async fn ids_order_bytewise_as_in_memory(db: &Db) {
    let memory = MemoryStore::default();
    let store = db.store(&db.fresh_schema(), 0);
    let mut requests: Vec<StoreRequest> = ["é", "b", "B", "a b", "a", "_", "Z", ""]
        .iter()
        .enumerate()
        .map(|(k, t)| submit(t, &format!("u{k}"), &format!("r{k}")))
        .collect();
    requests.push(StoreRequest::ThreadIds);
    requests.extend((0..9).map(|_| claim(None)));
    for request in requests {
        assert_eq!(store.apply(request.clone()).await, memory.apply(request));
    }
}

async fn x3_a_new_store_on_the_schema_sees_every_commit(db: &Db) {
    let schema = db.fresh_schema();
    let memory = MemoryStore::default();
    {
        let store = db.store(&schema, 1024);
        for request in script() {
            let want = memory.apply(request.clone());
            assert_eq!(store.apply(request).await, want);
        }
    }
    let store = PgStore::connect(
        db.config.clone(),
        None,
        PgOptions::default().schema(&schema),
    )
    .await
    .unwrap();
    assert_eq!(
        store.schema_version().await.unwrap(),
        schema::SCHEMA_VERSION
    );
    for t in ["t1", "t2"] {
        assert_eq!(inspect(&store, t).await, inspect_memory(&memory, t));
    }
    // The new store goes on where the first stopped: tokens, versions and
    // sequence numbers do not start again.
    let next = [append("t1", "r2", 2, &["m5"]), claim(Some("t1"))];
    for request in next {
        assert_eq!(store.apply(request.clone()).await, memory.apply(request));
    }
}

async fn two_stores_on_one_database_see_each_others_commits(db: &Db) {
    let schema = db.fresh_schema();
    let (a, b) = (db.store(&schema, 1024), db.store(&schema, 1024));
    a.apply(submit("t", "u1", "r1")).await.unwrap();
    // b caches the thread, then a changes it: b must not answer from its cache.
    assert!(inspect(&b, "t").await.is_some());
    let Ok(StoreReply::Admin(crate::store::AdminReply::Claimed(Some(first)))) =
        a.apply(claim(Some("t"))).await
    else {
        panic!("a claims the run");
    };
    let stale = b
        .apply(append("t", "r1", first.token.get() - 1, &["late"]))
        .await;
    assert!(
        matches!(stale, Err(StoreError::StaleLease { .. })),
        "{stale:?}"
    );
    b.apply(append("t", "r1", first.token.get(), &["m"]))
        .await
        .unwrap();
    let seen = inspect(&a, "t").await.unwrap();
    assert_eq!(seen.messages.len(), 2);
    // The submit, the claim (H1: a lease revision) and the append.
    assert_eq!(seen.version, 3);
}

/// Stores on one schema, each with its own connection, migrated.
async fn stores(db: &Db, n: usize) -> Vec<Arc<PgStore>> {
    let schema = db.fresh_schema();
    let mut stores = Vec::new();
    for _ in 0..n {
        let store = db.store(&schema, 1024);
        store.migrate().await.unwrap();
        stores.push(Arc::new(store));
    }
    stores
}

async fn racing_creations_of_one_thread_all_land(db: &Db) {
    let stores = stores(db, 6).await;
    let tasks: Vec<_> = (stores.iter().enumerate())
        .map(|(k, store)| {
            let store = store.clone();
            let request = submit("new", &format!("u{k}"), &format!("r{k}"));
            tokio::spawn(async move { store.apply(request).await })
        })
        .collect();
    for task in tasks {
        let reply = task.await.unwrap();
        assert!(
            matches!(
                reply,
                Ok(StoreReply::Client(crate::store::ClientReply::Submitted(_)))
            ),
            "{reply:?}"
        );
    }
    let seen = inspect(&stores[0], "new").await.unwrap();
    assert_eq!(seen.messages.len(), 6, "every submit landed");
    assert_eq!(seen.version, 6, "one version per commit (H1)");
    assert_eq!(seen.runs.len(), 6);
}

async fn racing_writes_to_one_thread_all_land(db: &Db) {
    let stores = stores(db, 6).await;
    stores[0].apply(submit("t", "u", "r")).await.unwrap();
    let tasks: Vec<_> = (stores.iter().enumerate())
        .map(|(k, store)| {
            let store = store.clone();
            let op = crate::store::FacadeOp::Mutate {
                incarnation: None,
                writer: Writer::Trusted,
                expect: Expect::Nothing,
                writes: vec![Write::Metadata {
                    key: format!("k{k}"),
                    value: Some(serde_json::json!(k)),
                }],
            };
            let request = StoreRequest::facade("t", op);
            tokio::spawn(async move { store.apply(request).await })
        })
        .collect();
    for task in tasks {
        let reply = task.await.unwrap();
        assert!(
            matches!(
                reply,
                Ok(StoreReply::Facade(crate::store::FacadeReply::Mutated(Ok(
                    _
                ))))
            ),
            "{reply:?}"
        );
    }
    let seen = inspect(&stores[1], "t").await.unwrap();
    assert_eq!(seen.metadata.len(), 6, "every write landed");
    assert_eq!(seen.version, 7, "one version per commit (H1)");
}

async fn racing_unscoped_claims_take_each_run_once(db: &Db) {
    let stores = stores(db, 4).await;
    for k in 0..12 {
        let request = submit(&format!("t{k:02}"), &format!("u{k}"), &format!("r{k}"));
        stores[0].apply(request).await.unwrap();
    }
    let tasks: Vec<_> = (stores.iter().cloned())
        .map(|store| {
            tokio::spawn(async move {
                let mut runs = Vec::new();
                loop {
                    match store.apply(claim(None)).await {
                        Ok(StoreReply::Admin(crate::store::AdminReply::Claimed(Some(c)))) => {
                            runs.push(c.run)
                        }
                        Ok(StoreReply::Admin(crate::store::AdminReply::Claimed(None))) => {
                            return runs;
                        }
                        other => panic!("a claim answered {other:?}"),
                    }
                }
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for task in tasks {
        claimed.extend(task.await.unwrap());
    }
    claimed.sort();
    let mut want: Vec<String> = (0..12).map(|k| format!("r{k}")).collect();
    want.sort();
    assert_eq!(claimed, want, "each run claimed once (K1)");
}

async fn a_schema_of_a_newer_build_is_refused_untouched(db: &Db) {
    let schema = db.fresh_schema();
    db.store(&schema, 0).migrate().await.unwrap();
    let client = db.client().await;
    let quoted = schema::quote(&schema);
    client
        .execute(&format!("UPDATE {quoted}.pai_schema SET version = 99"), &[])
        .await
        .unwrap();
    let refused = PgStore::connect(
        db.config.clone(),
        None,
        PgOptions::default().schema(&schema),
    )
    .await;
    assert!(
        matches!(refused, Err(PgError::NewerSchema { found: 99, .. })),
        "{refused:?}"
    );
    let store = db.store(&schema, 0);
    let got = store.apply(submit("t", "u", "r")).await;
    assert!(matches!(got, Err(StoreError::Unavailable(_))), "{got:?}");
}

async fn an_unreadable_record_is_an_error_not_a_panic(db: &Db) {
    let schema = db.fresh_schema();
    let store = db.store(&schema, 0);
    store.apply(submit("t", "u1", "r1")).await.unwrap();
    let client = db.client().await;
    let quoted = schema::quote(&schema);
    client
        .execute(
            &format!("UPDATE {quoted}.pai_threads SET head = '{{not json'"),
            &[],
        )
        .await
        .unwrap();
    let got = store
        .apply(StoreRequest::admin("t", crate::store::AdminOp::Inspect))
        .await;
    assert!(
        matches!(&got, Err(StoreError::Unavailable(why)) if why.contains("unreadable")),
        "{got:?}"
    );
}

async fn a_broken_connection_is_replaced(db: &Db) {
    let store = db.store(&db.fresh_schema(), 1024);
    store.apply(submit("t", "u1", "r1")).await.unwrap();
    let client = db.client().await;
    client
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'",
            &[],
        )
        .await
        .unwrap();
    // The kept connection fails to begin the request, which nothing of it
    // reached: the store connects again and applies it.
    let claimed = store.apply(claim(Some("t"))).await.unwrap();
    assert!(
        matches!(
            claimed,
            StoreReply::Admin(crate::store::AdminReply::Claimed(Some(_)))
        ),
        "{claimed:?}"
    );
    assert_eq!(inspect(&store, "t").await.unwrap().messages.len(), 1);
}
