//! The model-facing view of stored messages: context-visible messages only,
//! each result as stored (a thrown error is stored redacted, SPEC T5), and
//! every tool call paired with exactly one result after it (H6).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::id::CallId;
use crate::message::{Message, ModelContent, ModelMessage, Part, Role, ToolStatus};

/// Derives the model context from stored messages: context-visible messages in
/// order, each part converted to what the model may see, then paired
/// ([`pair_tool_calls`]).
pub(crate) fn to_model_messages<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
) -> Vec<ModelMessage> {
    into_model_messages(messages.into_iter().cloned())
}

/// [`to_model_messages`] over owned messages: their parts move into the
/// model messages, nothing is copied (the per-step context read).
pub(crate) fn into_model_messages(
    messages: impl IntoIterator<Item = Message>,
) -> Vec<ModelMessage> {
    let converted = messages.into_iter().filter_map(model_message).collect();
    pair_tool_calls(converted)
}

/// One stored message as the model may see it, before pairing: `None`
/// for a context-hidden message or one with nothing to show.
pub(crate) fn model_message(m: Message) -> Option<ModelMessage> {
    if !m.visibility.context {
        return None;
    }
    let content: Vec<ModelContent> = m.parts.into_iter().map(model_content).collect();
    (!content.is_empty()).then_some(ModelMessage {
        role: m.role,
        content,
    })
}

fn model_content(part: Part) -> ModelContent {
    match part {
        Part::Text { text } => ModelContent::Text { text },
        Part::ToolCall {
            call_id,
            tool,
            input,
        } => ModelContent::ToolCall {
            call_id,
            tool,
            input,
        },
        Part::ToolResult {
            call_id,
            tool,
            status,
            source: _,
            output,
        } => ModelContent::ToolResult {
            call_id,
            tool,
            output,
            is_error: status == ToolStatus::Error,
        },
    }
}

/// Whether any of `messages` holds a tool call or a tool result: appending
/// only messages without either keeps a paired context paired (H6).
pub(crate) fn carries_tools(messages: &[ModelMessage]) -> bool {
    let tooled = |c: &ModelContent| !matches!(c, ModelContent::Text { .. });
    messages.iter().any(|m| m.content.iter().any(tooled))
}

/// What a call that never got a result is answered with.
pub(crate) const MISSING_RESULT: &str = "The tool call did not complete.";

/// Makes a model context well paired (SPEC H6), whatever history rewrites,
/// windows, cancellations or failures came before:
/// - each tool call is answered by the first unused result with its id after
///   it (so providers that reuse ids are paired by order); a call with none
///   gets a synthetic error result right after its message;
/// - a result with no open call before it is dropped;
/// - a message that arrived while calls waited for their results (a steering
///   or concurrent user message) moves after those results, so each result
///   follows its call.
pub(crate) fn pair_tool_calls(messages: Vec<ModelMessage>) -> Vec<ModelMessage> {
    let answered = answered_calls(&messages);
    let mut pairing = Pairing {
        out: Vec::with_capacity(messages.len()),
        waiting: Vec::new(),
        deferred: Vec::new(),
    };
    for (mi, m) in messages.into_iter().enumerate() {
        pairing.message(mi, m, &answered);
    }
    let mut out = pairing.out;
    out.append(&mut pairing.deferred);
    out
}

/// [`pair_tool_calls`] for messages whose first `paired` are already a
/// pairing's output: such a prefix leaves no call open and pairs to
/// itself, so only the rest is paired (H6).
pub(crate) fn pair_after(mut messages: Vec<ModelMessage>, paired: usize) -> Vec<ModelMessage> {
    let rest = messages.split_off(paired.min(messages.len()));
    messages.extend(pair_tool_calls(rest));
    messages
}

/// The calls (message index, content index) that have a result later on:
/// each result answers the earliest open call with its id.
fn answered_calls(messages: &[ModelMessage]) -> BTreeSet<(usize, usize)> {
    let mut answered = BTreeSet::new();
    let mut open: Vec<(usize, usize, &str)> = Vec::new();
    for (mi, m) in messages.iter().enumerate() {
        for (ci, c) in m.content.iter().enumerate() {
            match c {
                ModelContent::ToolCall { call_id, .. } => open.push((mi, ci, call_id)),
                ModelContent::ToolResult { call_id, .. } => {
                    if let Some(k) = open.iter().position(|(_, _, id)| *id == call_id.as_str()) {
                        let (cm, cc, _) = open.remove(k);
                        answered.insert((cm, cc));
                    }
                }
                ModelContent::Text { .. } => {}
            }
        }
    }
    answered
}

/// The paired context being built.
struct Pairing {
    out: Vec<ModelMessage>,
    /// Answered calls whose results have not come yet.
    waiting: Vec<CallId>,
    /// Messages that arrived while calls waited; they follow the results.
    deferred: Vec<ModelMessage>,
}

impl Pairing {
    fn message(&mut self, mi: usize, m: ModelMessage, answered: &BTreeSet<(usize, usize)>) {
        let mut content = Vec::with_capacity(m.content.len());
        let mut missing = Vec::new();
        let mut pairs = false;
        for (ci, c) in m.content.into_iter().enumerate() {
            match c {
                ModelContent::ToolCall {
                    call_id,
                    tool,
                    input,
                } => {
                    pairs = true;
                    if answered.contains(&(mi, ci)) {
                        self.waiting.push(call_id.clone());
                    } else {
                        missing.push((call_id.clone(), tool.clone()));
                    }
                    content.push(ModelContent::ToolCall {
                        call_id,
                        tool,
                        input,
                    });
                }
                ModelContent::ToolResult { ref call_id, .. } => {
                    let Some(k) = self.waiting.iter().position(|w| w == call_id) else {
                        continue;
                    };
                    self.waiting.remove(k);
                    pairs = true;
                    content.push(c);
                }
                text => content.push(text),
            }
        }
        if !content.is_empty() {
            let message = ModelMessage {
                role: m.role,
                content,
            };
            if !self.waiting.is_empty() && !pairs {
                self.deferred.push(message);
                return;
            }
            self.out.push(message);
        }
        if !missing.is_empty() {
            self.out.push(missing_results(missing));
        }
        if self.waiting.is_empty() {
            self.out.append(&mut self.deferred);
        }
    }
}

/// Synthetic error results for calls that never got one.
fn missing_results(missing: Vec<(CallId, String)>) -> ModelMessage {
    ModelMessage {
        role: Role::Tool,
        content: missing
            .into_iter()
            .map(|(call_id, tool)| ModelContent::ToolResult {
                call_id,
                tool,
                output: Value::String(MISSING_RESULT.into()),
                is_error: true,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{PaiMeta, Producer, ResultSource, Visibility};

    fn msg(seq: u64, role: Role, parts: Vec<Part>, visibility: Visibility) -> Message {
        Message {
            id: format!("m{seq}").into(),
            seq,
            role,
            parts,
            visibility,
            pai: PaiMeta::new(Producer::User, None, None, 0),
        }
    }

    /// SPEC H6: the step loop skips re-pairing only for appends without
    /// tool parts; a call or a result appended must be seen as such, and
    /// pairing then repairs the context it would break.
    #[test]
    fn h6_only_tool_free_appends_keep_a_context_paired() {
        let text = ModelMessage::system("note");
        let call = ModelMessage {
            role: Role::Assistant,
            content: vec![ModelContent::ToolCall {
                call_id: "c1".into(),
                tool: "t".into(),
                input: Value::Null,
            }],
        };
        let result = ModelMessage {
            role: Role::Tool,
            content: vec![ModelContent::ToolResult {
                call_id: "c9".into(),
                tool: "t".into(),
                output: Value::Null,
                is_error: false,
            }],
        };
        assert!(!carries_tools(&[text.clone(), text.clone()]));
        assert!(carries_tools(&[text.clone(), call.clone()]));
        assert!(carries_tools(std::slice::from_ref(&result)));
        // Appending the call unpairs a paired context; pairing answers it.
        let repaired = pair_tool_calls(vec![text.clone(), call]);
        assert_eq!(repaired.len(), 3, "the call gets a stand-in result");
        // A result without its call is dropped.
        assert_eq!(pair_tool_calls(vec![text, result]).len(), 1);
    }

    #[test]
    fn hidden_messages_stay_out_of_model_context() {
        let m = [
            msg(1, Role::User, vec![Part::text("hi")], Visibility::ALL),
            msg(
                2,
                Role::Assistant,
                vec![Part::text("note")],
                Visibility {
                    transcript: true,
                    context: false,
                },
            ),
        ];
        let out = to_model_messages(&m);
        assert_eq!(out, vec![ModelMessage::user("hi")]);
    }

    #[test]
    fn dangling_tool_call_gets_a_synthetic_error_result() {
        let call = Part::ToolCall {
            call_id: "c1".into(),
            tool: "t".into(),
            input: Value::Null,
        };
        let m = [msg(1, Role::Assistant, vec![call], Visibility::ALL)];
        let out = to_model_messages(&m);
        assert_eq!(out.len(), 2);
        assert!(matches!(
            &out[1].content[0],
            ModelContent::ToolResult { call_id, is_error: true, .. } if call_id == "c1"
        ));
    }

    #[test]
    fn a_message_stored_between_a_call_and_its_result_follows_the_result() {
        let call = Part::ToolCall {
            call_id: "c1".into(),
            tool: "t".into(),
            input: Value::Null,
        };
        let result = Part::ToolResult {
            call_id: "c1".into(),
            tool: "t".into(),
            status: ToolStatus::Output,
            source: ResultSource::Tool,
            output: Value::from(1),
        };
        let m = [
            msg(1, Role::User, vec![Part::text("q")], Visibility::ALL),
            msg(2, Role::Assistant, vec![call], Visibility::ALL),
            msg(3, Role::User, vec![Part::text("steer")], Visibility::ALL),
            msg(4, Role::Tool, vec![result], Visibility::ALL),
        ];
        let roles: Vec<Role> = to_model_messages(&m).iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::User]);
    }

    #[test]
    fn h6_reused_call_ids_pair_by_order() {
        let call = |id: &str| Part::ToolCall {
            call_id: id.into(),
            tool: "t".into(),
            input: Value::Null,
        };
        let result = |id: &str| Part::ToolResult {
            call_id: id.into(),
            tool: "t".into(),
            status: ToolStatus::Output,
            source: ResultSource::Tool,
            output: Value::from(1),
        };
        let m = [
            msg(1, Role::Assistant, vec![call("call_0")], Visibility::ALL),
            msg(2, Role::Tool, vec![result("call_0")], Visibility::ALL),
            msg(3, Role::Assistant, vec![call("call_0")], Visibility::ALL),
            msg(4, Role::User, vec![Part::text("next")], Visibility::ALL),
        ];
        let out = to_model_messages(&m);
        let roles: Vec<Role> = out.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::Assistant,
                Role::Tool,
                Role::Assistant,
                Role::Tool,
                Role::User
            ]
        );
        assert!(matches!(
            &out[3].content[0],
            ModelContent::ToolResult { is_error: true, .. }
        ));
    }

    #[test]
    fn h6_a_window_that_cut_the_call_drops_its_result() {
        let out = pair_tool_calls(vec![
            ModelMessage {
                role: Role::Tool,
                content: vec![ModelContent::ToolResult {
                    call_id: "c".into(),
                    tool: "t".into(),
                    output: Value::Null,
                    is_error: false,
                }],
            },
            ModelMessage::user("hi"),
        ]);
        assert_eq!(out, vec![ModelMessage::user("hi")]);
    }

    /// SPEC T5: the model reads the stored result as it is. A thrown error
    /// is stored redacted already; a hook's replacement of it (T4, L9) is
    /// what the model reads, not the fixed message.
    #[test]
    fn t5_the_model_reads_the_stored_result_even_a_replaced_throw() {
        let call = Part::ToolCall {
            call_id: "c1".into(),
            tool: "t".into(),
            input: Value::Null,
        };
        let replaced = Part::ToolResult {
            call_id: "c1".into(),
            tool: "t".into(),
            status: ToolStatus::Error,
            source: ResultSource::Throw,
            output: Value::String("The lookup service is down; try later.".into()),
        };
        let m = [
            msg(1, Role::Assistant, vec![call], Visibility::ALL),
            msg(2, Role::Tool, vec![replaced], Visibility::ALL),
        ];
        let out = to_model_messages(&m);
        assert!(matches!(
            &out[1].content[0],
            ModelContent::ToolResult { output, is_error: true, .. }
                if *output == Value::String("The lookup service is down; try later.".into())
        ));
    }
}
