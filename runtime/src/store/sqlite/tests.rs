//! The SQLite store against the memory store: the same requests give the
//! same replies and the same stored threads, whether records come from
//! the cache or are read back from the database every time, and after the
//! database is closed and opened again.

use super::*;
use crate::MemoryStore;
use crate::store::StoredThread;
use crate::store::test_script::{
    append, check_after_edit, check_after_regeneration, claim, script, submit,
};

fn sqlite(cached: usize) -> SqliteStore {
    SqliteStore::in_memory(None, SqliteConfig::default().cached_threads(cached)).unwrap()
}

fn inspect(
    store: &dyn Fn(StoreRequest) -> Result<StoreReply, StoreError>,
    t: &str,
) -> Option<StoredThread> {
    match store(StoreRequest::admin(t, crate::store::AdminOp::Inspect)) {
        Ok(StoreReply::Admin(crate::store::AdminReply::Thread(t))) => t,
        other => panic!("inspect answered {other:?}"),
    }
}

#[test]
fn k2_h1_h5_the_same_requests_get_the_same_replies_as_in_memory() {
    for cached in [0, 1, 1024] {
        let memory = MemoryStore::default();
        let store = sqlite(cached);
        for (k, request) in script().into_iter().enumerate() {
            let want = memory.apply(request.clone());
            let got = store.apply(request);
            assert_eq!(got, want, "request {k} with {cached} cached threads");
        }
        for t in ["t1", "t2"] {
            let want = inspect(&|r| memory.apply(r), t);
            assert_eq!(inspect(&|r| store.apply(r), t), want);
        }
    }
}

#[test]
fn a_visibility_edit_and_a_truncation_reach_the_rows() {
    let store = sqlite(0);
    let mut script = script().into_iter();
    for request in script.by_ref().take(7) {
        let _ = store.apply(request);
    }
    let t1 = inspect(&|r| store.apply(r), "t1").unwrap();
    check_after_edit(&t1);
    store.apply(script.next().unwrap()).unwrap();
    let t1 = inspect(&|r| store.apply(r), "t1").unwrap();
    check_after_regeneration(&t1);
}

#[test]
fn x3_a_closed_database_opens_with_every_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    let memory = MemoryStore::default();
    {
        let store = SqliteStore::open(&path, None, SqliteConfig::default()).unwrap();
        for request in script() {
            let want = memory.apply(request.clone());
            assert_eq!(store.apply(request), want);
        }
    }
    let store = SqliteStore::open(&path, None, SqliteConfig::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), schema::SCHEMA_VERSION);
    for t in ["t1", "t2"] {
        assert_eq!(
            inspect(&|r| store.apply(r), t),
            inspect(&|r| memory.apply(r), t)
        );
    }
    // The reopened store goes on where the first stopped: tokens, versions
    // and sequence numbers do not start again.
    let next = [append("t1", "r2", 2, &["m5"]), claim(Some("t1"))];
    for request in next {
        assert_eq!(store.apply(request.clone()), memory.apply(request));
    }
}

#[test]
fn two_stores_on_one_file_see_each_others_commits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let a = SqliteStore::open(&path, None, SqliteConfig::default()).unwrap();
    let b = SqliteStore::open(&path, None, SqliteConfig::default()).unwrap();
    a.apply(submit("t", "u1", "r1")).unwrap();
    // b caches the thread, then a changes it: b must not answer from its cache.
    assert!(inspect(&|r| b.apply(r), "t").is_some());
    let Ok(StoreReply::Admin(crate::store::AdminReply::Claimed(Some(first)))) =
        a.apply(claim(Some("t")))
    else {
        panic!("a claims the run");
    };
    let stale = b.apply(append("t", "r1", first.token.get() - 1, &["late"]));
    assert!(
        matches!(stale, Err(StoreError::StaleLease { .. })),
        "{stale:?}"
    );
    b.apply(append("t", "r1", first.token.get(), &["m"]))
        .unwrap();
    let seen = inspect(&|r| a.apply(r), "t").unwrap();
    assert_eq!(seen.messages.len(), 2);
    // The submit, the claim (H1: a lease revision) and the append.
    assert_eq!(seen.version, 3);
}

#[test]
fn a_database_of_a_newer_schema_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.db");
    drop(SqliteStore::open(&path, None, SqliteConfig::default()).unwrap());
    let conn = Connection::open(&path).unwrap();
    conn.execute("UPDATE pai_schema SET version = 99", [])
        .unwrap();
    drop(conn);
    let refused = SqliteStore::open(&path, None, SqliteConfig::default());
    assert!(
        matches!(refused, Err(SqliteError::NewerSchema { found: 99, .. })),
        "{refused:?}"
    );
}

#[test]
fn an_unreadable_record_is_an_error_not_a_panic() {
    let store = sqlite(0);
    store.apply(submit("t", "u1", "r1")).unwrap();
    store
        .lock()
        .conn
        .execute("UPDATE pai_threads SET head = '{not json'", [])
        .unwrap();
    let got = store.apply(StoreRequest::admin("t", crate::store::AdminOp::Inspect));
    assert!(
        matches!(&got, Err(StoreError::Unavailable(why)) if why.contains("unreadable")),
        "{got:?}"
    );
}
