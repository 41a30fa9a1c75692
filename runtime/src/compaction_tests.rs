use serde_json::{Map, Value, json};

use super::*;
use crate::message::{PaiMeta, ResultSource, ToolStatus};
use crate::store::VisibilityChange;

fn msg(seq: u64, role: Role, parts: Vec<Part>) -> Message {
    Message {
        id: format!("m{seq}").into(),
        seq,
        role,
        parts,
        visibility: Visibility::ALL,
        pai: PaiMeta::new(Producer::User, None, None, 0),
    }
}

fn text(seq: u64) -> Message {
    msg(seq, Role::User, vec![Part::text(format!("t{seq}"))])
}

fn call(seq: u64, id: &str) -> Message {
    msg(
        seq,
        Role::Assistant,
        vec![Part::ToolCall {
            call_id: id.into(),
            tool: "x".into(),
            input: json!({}),
        }],
    )
}

fn result(seq: u64, id: &str) -> Message {
    msg(
        seq,
        Role::Tool,
        vec![Part::ToolResult {
            call_id: id.into(),
            tool: "x".into(),
            status: ToolStatus::Output,
            source: ResultSource::Tool,
            output: json!(1),
        }],
    )
}

fn thread(messages: Vec<Message>, private: Map<String, Value>) -> StoredThread {
    StoredThread {
        id: "t".into(),
        agent: "a".into(),
        owner: "o".into(),
        incarnation: 1,
        version: 1,
        messages,
        metadata: Map::new(),
        private_metadata: private,
        runs: Vec::new(),
        lease_holder: None,
        lease_token: crate::store::FencingToken::new(0),
    }
}

/// SPEC C1, H6: the cursor never falls between a tool call and its result.
#[test]
fn c1_cursor_never_splits_a_call_from_its_result() {
    let ms = [text(1), call(2, "c"), result(3, "c"), text(4)];
    let refs: Vec<&Message> = ms.iter().collect();
    // Keeping 2 would cut between the call (2) and its result (3).
    assert_eq!(choose_cursor(&refs, 2), Some(1));
    assert_eq!(choose_cursor(&refs, 1), Some(3));
    assert_eq!(choose_cursor(&refs, 4), None);
    let only_call = [call(1, "c"), result(2, "c")];
    let refs: Vec<&Message> = only_call.iter().collect();
    assert_eq!(choose_cursor(&refs, 1), None);
}

/// SPEC C2: summary first, then context-visible messages after the cursor.
#[test]
fn c2_context_is_summary_then_messages_after_the_cursor() {
    let mut summary = msg(9, Role::System, vec![Part::text("S")]);
    summary.id = "sum".into();
    summary.visibility = Visibility {
        transcript: true,
        context: false,
    };
    let mut hidden = text(4);
    hidden.visibility.context = false;
    let visible = vec![text(1), text(2), text(3), hidden, text(5), summary];
    let cursor = CompactionCursor {
        through: 2,
        summary: "sum".into(),
        covers: 2,
    };
    let st = thread(visible.clone(), Map::new());
    let summary = summary_text(&visible, &st, &cursor);
    assert_eq!(summary.as_deref(), Some("S"));
    let out = context(&visible, summary.as_deref(), Some(&cursor));
    let texts: Vec<String> = out.iter().map(|m| format!("{:?}", m.content)).collect();
    assert_eq!(out.len(), 3, "{texts:?}");
    assert!(texts[0].contains("Summary of the earlier conversation: S"));
    assert!(texts[1].contains("t3") && texts[2].contains("t5"));
    // Without a cursor: every context-visible message, no summary.
    assert_eq!(context(&visible, None, None).len(), 4);
}

/// SPEC C1: a regeneration that removes messages at or before the cursor
/// (or its summary) resets it; one after it leaves it be.
#[test]
fn c1_regeneration_behind_the_cursor_resets_it() {
    let mut private = Map::new();
    private.insert(COMPACTION_KEY.into(), cursor_value(2, "m4"));
    let st = thread(vec![text(1), text(2), text(3), text(4), text(5)], private);
    let kind = |removed: &[&str]| RewriteKind::Regenerate {
        from: "m1".into(),
        removed: removed.iter().map(|s| MessageId::new(*s)).collect(),
    };
    let behind = kind(&["m2", "m3", "m4", "m5"]);
    let p = repair(&RewriteInput {
        kind: &behind,
        thread: &st,
    });
    assert_eq!(p.removed, vec![(true, COMPACTION_KEY.to_string())]);
    let ahead = kind(&["m5"]);
    let p = repair(&RewriteInput {
        kind: &ahead,
        thread: &st,
    });
    assert!(p.is_empty());
    let vis = RewriteKind::Visibility {
        changes: vec![VisibilityChange {
            message: "m1".into(),
            before: Visibility::ALL,
            after: Visibility::CONTEXT_ONLY,
        }],
    };
    let p = repair(&RewriteInput {
        kind: &vis,
        thread: &st,
    });
    assert!(!p.is_empty());
}

/// SPEC C2, M1: the messages after the cursor are those after it in
/// context order, which is not always sequence order: a queued run's
/// message (#2) entered after the answer stored before its claim (#3).
#[test]
fn c2_after_the_cursor_follows_context_order() {
    let visible = vec![text(1), text(3), text(2), text(4)];
    let cursor = CompactionCursor {
        through: 3,
        summary: "sum".into(),
        covers: 3,
    };
    let after: Vec<u64> = after_cursor(&visible, Some(&cursor))
        .iter()
        .map(|m| m.seq)
        .collect();
    assert_eq!(after, [2, 4]);
}
