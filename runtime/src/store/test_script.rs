//! A request script shared by the database stores' tests: requests that
//! touch every way a record changes, to compare a store with MemoryStore.

use crate::id::ThreadId;
use crate::message::Outcome;
use crate::message::{NewMessage, PaiMeta, Part, Producer, Role, Visibility};
use crate::store::FencingToken;
use crate::store::{
    AdminOp, ClientOp, Expect, FacadeOp, RunEnd, RunOp, RunStatus, StoreRequest, Write, Writer,
};

pub(crate) fn message(id: &str, role: Role) -> NewMessage {
    NewMessage {
        id: id.to_string().into(),
        role,
        parts: vec![Part::text(format!("text of {id} ✓"))],
        visibility: Visibility::ALL,
        pai: PaiMeta::new(Producer::User, None, None, 0),
    }
}

pub(crate) fn submit(thread: &str, id: &str, run: &str) -> StoreRequest {
    let op = ClientOp::Submit {
        message: message(id, Role::User),
        steer: false,
        new_run: Some(run.into()),
    };
    StoreRequest::client(thread, "a", "o", op)
}

pub(crate) fn claim(thread: Option<&str>) -> StoreRequest {
    StoreRequest::claim(thread.map(ThreadId::from), "w", Some(100))
}

pub(crate) fn append(thread: &str, run: &str, token: u64, ids: &[&str]) -> StoreRequest {
    let messages = ids.iter().map(|id| message(id, Role::Assistant)).collect();
    let op = RunOp::Append {
        messages,
        step: Some(0),
        metadata: None,
    };
    StoreRequest::run(thread, run, FencingToken::new(token), op)
}

/// A run's tool results with the run metadata its hooks wrote about them,
/// in one commit (SPEC K5).
pub(crate) fn results(thread: &str, run: &str, token: u64, id: &str) -> StoreRequest {
    let op = RunOp::Append {
        messages: vec![message(id, Role::Tool)],
        step: None,
        metadata: Some(serde_json::json!({"bookings": 1, "last": {"ok": true}})),
    };
    StoreRequest::run(thread, run, FencingToken::new(token), op)
}

pub(crate) fn finish(thread: &str, run: &str, token: u64) -> StoreRequest {
    let end = RunEnd {
        status: RunStatus::Completed,
        outcome: Outcome::Completed,
        reason: None,
    };
    StoreRequest::run(
        thread,
        run,
        FencingToken::new(token),
        RunOp::Finish {
            end,
            next_run: None,
        },
    )
}

/// Appends, a stale write, a visibility edit in place, a regeneration's
/// truncation, results with the run metadata written in their commit, a
/// deletion and a new incarnation, and unscoped claims across threads.
pub(crate) fn script() -> Vec<StoreRequest> {
    let hide = Write::Visibility {
        message: "m1".into(),
        visibility: Visibility::CONTEXT_ONLY,
    };
    vec![
        submit("t2", "u0", "r0"),
        submit("t1", "u1", "r1"),
        claim(None),
        append("t1", "r1", 1, &["m1", "m2"]),
        append("t1", "r1", 0, &["stale"]),
        finish("t1", "r1", 1),
        StoreRequest::facade(
            "t1",
            FacadeOp::Mutate {
                incarnation: None,
                writer: Writer::Trusted,
                expect: Expect::Nothing,
                writes: vec![
                    hide,
                    Write::Metadata {
                        key: "k".into(),
                        value: Some(serde_json::json!({"x": 1.1, "y": [1, "z"]})),
                    },
                ],
            },
        ),
        StoreRequest::facade(
            "t1",
            FacadeOp::Regenerate {
                incarnation: None,
                from: "u1".into(),
                new_run: "r2".into(),
                expect: Expect::Nothing,
                writes: vec![],
            },
        ),
        claim(Some("t1")),
        append("t1", "r2", 2, &["m3"]),
        results("t1", "r2", 2, "m4"),
        StoreRequest::admin("t2", AdminOp::Delete),
        submit("t2", "u4", "r4"),
        claim(None),
        StoreRequest::ThreadIds,
        StoreRequest::admin("t1", AdminOp::Inspect),
        StoreRequest::admin("t2", AdminOp::Inspect),
        StoreRequest::admin("nope", AdminOp::Inspect),
    ]
}

/// Thread `t1` after the script's first seven requests: the mutation hid
/// `m1` in place and wrote metadata `k`.
pub(crate) fn check_after_edit(t1: &crate::store::StoredThread) {
    let seen: Vec<(&str, Visibility)> = t1
        .messages
        .iter()
        .map(|m| (m.id.as_str(), m.visibility))
        .collect();
    assert_eq!(
        seen,
        [
            ("u1", Visibility::ALL),
            ("m1", Visibility::CONTEXT_ONLY),
            ("m2", Visibility::ALL)
        ]
    );
    assert_eq!(t1.metadata["k"]["x"], serde_json::json!(1.1));
}

/// Thread `t1` after the script's eighth request, the regeneration.
pub(crate) fn check_after_regeneration(t1: &crate::store::StoredThread) {
    let ids: Vec<&str> = t1.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["u1"], "the regeneration kept only its user message");
}
