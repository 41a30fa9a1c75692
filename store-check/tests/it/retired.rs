//! SPEC H5 at the store: once a thread is deleted and created again, the
//! old incarnation's run can neither append nor mutate under its token,
//! and a history read bound to the old incarnation is refused; none of it
//! changes the new incarnation. On the memory store and on SQLite (the
//! random suite does not send history reads).

use std::sync::Arc;

use crate::fixtures::message;
use pai_runtime::store::FencingToken;
use pai_runtime::store::{AdminOp, AdminReply, ClientOp, FacadeOp, ReadOp, RunOp};
use pai_runtime::{
    MemoryStore, Role, StoreError,
    store::{
        Expect, HistoryRead, SqliteConfig, SqliteStore, StoreReply, StoreRequest, StoredThread,
        Write, Writer,
    },
};
use serde_json::json;

type Apply<'a> = dyn Fn(StoreRequest) -> Result<StoreReply, StoreError> + 'a;

fn inspect(apply: &Apply<'_>) -> Option<StoredThread> {
    match apply(StoreRequest::admin("t1", AdminOp::Inspect)) {
        Ok(StoreReply::Admin(AdminReply::Thread(t))) => t,
        other => panic!("inspect answered {other:?}"),
    }
}

/// Run `r1` of incarnation 1 claimed, the thread deleted and opened again:
/// the run's id, its token and the old incarnation.
fn retire_a_run(apply: &Apply<'_>) -> (String, FencingToken, u64) {
    let submit = ClientOp::Submit {
        message: message("m1", Role::User, None),
        steer: false,
        new_run: Some("r1".into()),
    };
    apply(StoreRequest::client("t1", "a", "alice", submit)).expect("submitted");
    let token = match apply(StoreRequest::claim(Some("t1".into()), "w", None)) {
        Ok(StoreReply::Admin(AdminReply::Claimed(Some(c)))) => c.token,
        other => panic!("claim answered {other:?}"),
    };
    let old = inspect(apply).expect("a thread").incarnation;
    apply(StoreRequest::admin("t1", AdminOp::Delete)).expect("deleted");
    apply(StoreRequest::client("t1", "a", "alice", ClientOp::Open)).expect("opened");
    ("r1".into(), token, old)
}

fn old_incarnation_is_refused(apply: &Apply<'_>) {
    let (run, token, old) = retire_a_run(apply);
    let fresh = inspect(apply).expect("the new incarnation");
    assert_ne!(fresh.incarnation, old);
    let deleted = |r: &Result<StoreReply, StoreError>| matches!(r, Err(StoreError::Deleted { incarnation, .. }) if *incarnation == old);
    let late = RunOp::Append {
        messages: vec![message("late", Role::Assistant, Some(&run))],
        step: None,
        metadata: None,
    };
    let append = apply(StoreRequest::run("t1", run.clone(), token, late));
    assert!(deleted(&append), "{append:?}");
    let stale = Write::Metadata {
        key: "stale".into(),
        value: Some(json!(true)),
    };
    let mutate = FacadeOp::Mutate {
        incarnation: None,
        writer: Writer::Run {
            run: run.into(),
            token,
        },
        expect: Expect::Nothing,
        writes: vec![stale],
    };
    let mutate = apply(StoreRequest::facade("t1", mutate));
    assert!(deleted(&mutate), "{mutate:?}");
    let read = ReadOp::History {
        agent: "a".into(),
        incarnation: old,
        read: HistoryRead::Metadata,
    };
    let history = apply(StoreRequest::read("t1", read));
    assert!(history.is_err(), "{history:?}");
    assert_eq!(inspect(apply), Some(fresh), "nothing changed");
}

#[test]
fn h5_memory_store_refuses_the_old_incarnations_run_and_reads() {
    let store = MemoryStore::default();
    old_incarnation_is_refused(&|r| store.apply(r));
}

#[test]
fn h5_sqlite_store_refuses_the_old_incarnations_run_and_reads() {
    let config = SqliteConfig::default().cached_threads(0);
    let store = Arc::new(SqliteStore::in_memory(None, config).expect("opens"));
    old_incarnation_is_refused(&|r| store.apply(r));
}
