//! A request script shared by the database stores' tests: requests that
//! touch every way a record changes, to compare a store with MemoryStore.

use crate::Outcome;
use crate::message::{Message, PaiMeta, Part, Producer, Role, Visibility};
use crate::store::{Expect, RunEnd, RunStatus, StoreRequest, Write, Writer};

pub(crate) fn message(id: &str, role: Role) -> Message {
    Message {
        id: id.to_string(),
        seq: 0,
        role,
        parts: vec![Part::text(format!("text of {id} ✓"))],
        visibility: Visibility::ALL,
        pai: PaiMeta::new(Producer::User, None, None, 0),
    }
}

pub(crate) fn submit(thread: &str, id: &str, run: &str) -> StoreRequest {
    StoreRequest::Submit {
        thread: thread.into(),
        agent: "a".into(),
        owner: "o".into(),
        message: message(id, Role::User),
        steer: false,
        new_run: Some(run.into()),
    }
}

pub(crate) fn claim(thread: Option<&str>) -> StoreRequest {
    StoreRequest::Claim {
        thread: thread.map(str::to_string),
        worker: "w".into(),
        ttl: Some(100),
    }
}

pub(crate) fn append(thread: &str, run: &str, token: u64, ids: &[&str]) -> StoreRequest {
    StoreRequest::Append {
        thread: thread.into(),
        run: run.into(),
        token,
        messages: ids.iter().map(|id| message(id, Role::Assistant)).collect(),
        step: Some(0),
    }
}

pub(crate) fn finish(thread: &str, run: &str, token: u64) -> StoreRequest {
    StoreRequest::Finish {
        thread: thread.into(),
        run: run.into(),
        token: Some(token),
        end: RunEnd {
            status: RunStatus::Completed,
            outcome: Outcome::Completed,
            reason: None,
        },
        next_run: None,
    }
}

/// Appends, a stale write, a visibility edit in place, a regeneration's
/// truncation, a deletion and a new incarnation, and unscoped claims
/// across threads.
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
        StoreRequest::Mutate {
            thread: "t1".into(),
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
        StoreRequest::Regenerate {
            thread: "t1".into(),
            incarnation: None,
            from: "u1".into(),
            new_run: "r2".into(),
            expect: Expect::Nothing,
            writes: vec![],
        },
        claim(Some("t1")),
        append("t1", "r2", 2, &["m3"]),
        StoreRequest::Delete {
            thread: "t2".into(),
        },
        submit("t2", "u4", "r4"),
        claim(None),
        StoreRequest::ThreadIds,
        StoreRequest::Inspect {
            thread: "t1".into(),
        },
        StoreRequest::Inspect {
            thread: "t2".into(),
        },
        StoreRequest::Inspect {
            thread: "nope".into(),
        },
    ]
}

/// Thread `t1` after the script's first seven requests: the mutation hid
/// `m1` in place and wrote metadata `k`.
pub(crate) fn check_after_edit(t1: &crate::StoredThread) {
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
pub(crate) fn check_after_regeneration(t1: &crate::StoredThread) {
    let ids: Vec<&str> = t1.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["u1"], "the regeneration kept only its user message");
}
