//! The incremental visible read (SPEC M1): appends alone keep the history
//! epoch, so a reader gets only what it lacks; every other change to the
//! stored messages moves the epoch on, and the reader gets them all.

use super::*;
use crate::message::{NewMessage, PaiMeta, Part, Producer, Role, Visibility};
use crate::store::mutation::{Expect, Write, Writer};
use crate::store::record::RunStatus;

fn message(id: &str) -> NewMessage {
    NewMessage {
        id: id.to_string().into(),
        role: Role::User,
        parts: vec![Part::text(id)],
        visibility: Visibility::ALL,
        pai: PaiMeta::new(Producer::User, None, None, 0),
    }
}

/// What a reader holding everything through `seq` at `rec`'s epoch gets.
fn read(rec: &ThreadRec, anchor: u64, cached: Option<CachedThrough>) -> (bool, Vec<String>) {
    match visible_after(rec, anchor, cached) {
        ReadReply::Visible {
            whole, messages, ..
        } => (
            whole,
            messages.into_iter().map(|m| m.id.into_string()).collect(),
        ),
        other => panic!("unexpected {other:?}"),
    }
}

fn held(rec: &ThreadRec, seq: u64) -> Option<CachedThrough> {
    Some(CachedThrough {
        epoch: rec.epoch(),
        seq,
    })
}

#[test]
fn m1_appends_keep_the_epoch_and_answer_only_the_tail() {
    let mut rec = ThreadRec::new("a", "o");
    rec.append_t(None, [message("m1"), message("m2")]).unwrap();
    let cached = held(&rec, 2);
    rec.append_t(None, [message("m3"), message("m4")]).unwrap();
    assert_eq!(read(&rec, 3, cached), (false, vec!["m3".into()]));
    assert_eq!(read(&rec, 4, None), (true, ids(&["m1", "m2", "m3", "m4"])));
}

#[test]
fn m1_a_visibility_rewrite_moves_the_epoch_on() {
    let mut rec = ThreadRec::new("a", "o");
    rec.append_t(None, [message("m1"), message("m2")]).unwrap();
    let cached = held(&rec, 2);
    let hide = Write::Visibility {
        message: "m1".into(),
        visibility: Visibility {
            transcript: true,
            context: false,
        },
    };
    let done = rec.mutate(&Writer::Trusted, &Expect::Nothing, vec![hide]);
    assert!(matches!(done, Ok(Ok(_))));
    assert_eq!(read(&rec, 2, cached), (true, ids(&["m1", "m2"])));
}

#[test]
fn m1_queue_changes_move_the_epoch_on() {
    let mut rec = ThreadRec::new("a", "o");
    rec.append_t(None, [message("m1")]).unwrap();
    rec.admit("r1", "m1");
    rec.claim("t", "w", None, 0).expect("r1 starts");
    rec.append_t(None, [message("m2")]).unwrap();
    let before = held(&rec, 2);
    // A message sent during r1 queues r2: it leaves the visible messages.
    rec.append_t(None, [message("m3")]).unwrap();
    rec.admit("r2", "m3");
    assert_eq!(read(&rec, 3, before), (true, ids(&["m1", "m2"])));
    // Cancelled while queued, r2's message enters no context of a run
    // admitted before it (M1): r1's reads are unchanged.
    let queued = held(&rec, 3);
    rec.cancel(Some("r2")).expect("r2 cancelled");
    assert_eq!(read(&rec, 3, queued), (false, ids(&[])));
    // A run admitted after it is claimed: it enters, before that run's
    // message, and the epoch moves on.
    let end = crate::store::RunEnd {
        status: RunStatus::Completed,
        outcome: crate::message::Outcome::Completed,
        reason: None,
    };
    rec.end_run("r1", &end);
    rec.append_t(None, [message("m4")]).unwrap();
    rec.admit("r3", "m4");
    rec.claim("t", "w", None, 0).expect("r3 starts");
    assert_eq!(
        read(&rec, 4, queued),
        (true, ids(&["m1", "m2", "m3", "m4"]))
    );
}

fn ids(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| s.to_string()).collect()
}
