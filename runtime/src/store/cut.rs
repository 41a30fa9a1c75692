//! Where a regeneration cuts a thread (SPEC R1): what comes "after" the
//! message it starts from is what the model reads after it (M1), not what
//! was stored after it, and the cut never separates a kept tool call from
//! its stored result (H6 without invented results). Pure: the store
//! applies it in the regeneration's transaction, and the facade computes
//! the same cut beforehand for `prepare_history_rewrite` (R2).

use std::collections::BTreeSet;

use crate::id::MessageId;
use crate::message::{Message, Part};

/// The messages a regeneration from `from` removes, in sequence order.
///
/// `stored` is every stored message in sequence order; `order` those that
/// have entered the context, in context order (M1); a stored message not
/// in `order` has entered no context yet (the trigger of a run cancelled
/// while queued) and enters, with `from` itself, when the new run is
/// claimed, in sequence order. So:
/// - with `from` in `order`, every message after it there is removed,
///   except a tool result whose call is in a kept message (pairing each
///   result with the earliest open call of its id, as the model view does);
/// - a message outside `order` is removed when it was stored after `from`.
pub(crate) fn regeneration_cut(
    stored: &[Message],
    order: &[&Message],
    from: &str,
) -> Vec<MessageId> {
    let Some(from_seq) = stored.iter().find(|m| m.id == from).map(|m| m.seq) else {
        return Vec::new();
    };
    let entered: BTreeSet<u64> = order.iter().map(|m| m.seq).collect();
    let mut cut: BTreeSet<u64> = stored
        .iter()
        .filter(|m| !entered.contains(&m.seq) && m.seq > from_seq)
        .map(|m| m.seq)
        .collect();
    if let Some(at) = order.iter().position(|m| m.id == from) {
        let answers_kept = answers_kept_calls(order, at);
        cut.extend(
            order[at + 1..]
                .iter()
                .filter(|m| !answers_kept.contains(&m.seq))
                .map(|m| m.seq),
        );
    }
    stored
        .iter()
        .filter(|m| cut.contains(&m.seq))
        .map(|m| m.id.clone())
        .collect()
}

/// The messages after position `at` of `order` that hold a result of a
/// call made at or before `at`: each result answers the earliest call of
/// its id still open before it.
fn answers_kept_calls(order: &[&Message], at: usize) -> BTreeSet<u64> {
    let mut open: Vec<(&str, bool)> = Vec::new();
    let mut answering = BTreeSet::new();
    for (k, m) in order.iter().enumerate() {
        for part in &m.parts {
            match part {
                Part::ToolCall { call_id, .. } => open.push((call_id.as_str(), k <= at)),
                Part::ToolResult { call_id, .. } => {
                    let Some(i) = open.iter().position(|(id, _)| *id == call_id.as_str()) else {
                        continue;
                    };
                    let (_, kept) = open.remove(i);
                    if kept && k > at {
                        answering.insert(m.seq);
                    }
                }
                Part::Text { .. } => {}
            }
        }
    }
    answering
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{PaiMeta, Producer, ResultSource, Role, ToolStatus, Visibility};

    fn message(seq: u64, role: Role, parts: Vec<Part>) -> Message {
        Message {
            id: format!("m{seq}").into(),
            seq,
            role,
            parts,
            visibility: Visibility::ALL,
            pai: PaiMeta::new(Producer::User, None, None, 0),
        }
    }

    fn user(seq: u64) -> Message {
        message(seq, Role::User, vec![Part::text("u")])
    }

    fn call(seq: u64, id: &str) -> Message {
        let part = Part::ToolCall {
            call_id: id.into(),
            tool: "t".into(),
            input: serde_json::json!({}),
        };
        message(seq, Role::Assistant, vec![part])
    }

    fn result(seq: u64, id: &str) -> Message {
        let part = Part::ToolResult {
            call_id: id.into(),
            tool: "t".into(),
            status: ToolStatus::Output,
            source: ResultSource::Tool,
            output: serde_json::json!(1),
        };
        message(seq, Role::Tool, vec![part])
    }

    fn ids(cut: &[MessageId]) -> Vec<&str> {
        cut.iter().map(|m| m.as_str()).collect()
    }

    /// SPEC R1: a steer taken by `prepare_run` before the approved call's
    /// result was committed sits between the call and its result in
    /// context order; regenerating from it keeps the result.
    #[test]
    fn r1_a_kept_call_keeps_its_result_stored_after_the_cut() {
        let stored = [user(1), call(2, "c"), user(3), result(4, "c"), user(5)];
        let s = &stored;
        let order = [&s[0], &s[1], &s[2], &s[3], &s[4]];
        assert_eq!(ids(&regeneration_cut(s, &order, "m3")), ["m5"]);
    }

    /// SPEC R1, M1: "after" is context order: a steer taken after a result
    /// stored later keeps that result; the answer after it goes.
    #[test]
    fn r1_after_is_the_context_order() {
        let stored = [user(1), call(2, "c"), user(3), result(4, "c"), user(5)];
        let s = &stored;
        let order = [&s[0], &s[1], &s[3], &s[2], &s[4]];
        assert_eq!(ids(&regeneration_cut(s, &order, "m3")), ["m5"]);
        // From the first message, everything else goes, results included.
        assert_eq!(
            ids(&regeneration_cut(s, &order, "m1")),
            ["m2", "m3", "m4", "m5"]
        );
    }

    /// SPEC R1, H6: a call after the cut takes its results with it, even
    /// when the id was used before (results pair with the earliest open call).
    #[test]
    fn r1_a_removed_call_takes_its_result() {
        let stored = [
            user(1),
            call(2, "c"),
            result(3, "c"),
            user(4),
            call(5, "c"),
            result(6, "c"),
        ];
        let s = &stored;
        let order: Vec<&Message> = s.iter().collect();
        assert_eq!(ids(&regeneration_cut(s, &order, "m4")), ["m5", "m6"]);
    }

    /// A message no context took yet goes only when stored after `from`;
    /// with `from` itself not entered, nothing entered goes.
    #[test]
    fn r1_messages_no_context_took_go_by_sequence() {
        let stored = [user(1), user(2), user(3), user(4)];
        let s = &stored;
        let order = [&s[0], &s[2]];
        assert_eq!(ids(&regeneration_cut(s, &order, "m3")), ["m4"]);
        assert_eq!(ids(&regeneration_cut(s, &order, "m2")), ["m4"]);
        assert!(regeneration_cut(s, &order, "m9").is_empty());
    }
}
