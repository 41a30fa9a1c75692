//! Stored messages and the model-facing shape derived from them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::Millis;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Producer {
    User,
    Model,
    Lifecycle,
    Tool,
    Runtime,
    Compaction,
}

/// The conversational role of a stored message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// Where a message may appear. Both flags are independent: a summary can be
/// transcript-visible but context-hidden; a lifecycle note the reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Visibility {
    pub transcript: bool,
    pub context: bool,
}

impl Visibility {
    pub const ALL: Visibility = Visibility {
        transcript: true,
        context: true,
    };
    /// Stored and sent to the model, never shown in the transcript (SPEC L13).
    pub const CONTEXT_ONLY: Visibility = Visibility {
        transcript: false,
        context: true,
    };
}

/// How a run ended, as far as the user is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Completed,
    Blocked,
    Cancelled,
    Failed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Blocked => "blocked",
            Outcome::Cancelled => "cancelled",
            Outcome::Failed => "failed",
        }
    }
}

/// Runtime-owned provenance of a message (`metadata.pai`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaiMeta {
    pub producer: Producer,
    pub run_id: Option<String>,
    pub step: Option<u32>,
    pub updated_at: Millis,
    /// Set on terminal lifecycle responses (SPEC L12).
    pub outcome: Option<Outcome>,
    pub reason: Option<String>,
}

/// Final state of one tool call's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool produced an output.
    Output,
    /// The call failed; `source` says how.
    Error,
}

/// Where a tool result came from (SPEC T3, T5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultSource {
    /// The tool returned normally.
    Tool,
    /// The tool failed deliberately; the model sees the value verbatim.
    Fail,
    /// The tool raised an error or panicked; the model sees a fixed message.
    Throw,
    /// A `before_tool_call` hook rejected the call; it never ran.
    Rejected,
    /// The input did not match the tool's schema; it never ran.
    InvalidInput,
    /// The model asked for a tool that this step does not offer.
    UnknownTool,
    /// The run was cancelled while the tool ran (SPEC T8).
    Cancelled,
}

impl ResultSource {
    pub fn as_str(self) -> &'static str {
        match self {
            ResultSource::Tool => "tool",
            ResultSource::Fail => "fail",
            ResultSource::Throw => "throw",
            ResultSource::Rejected => "rejected",
            ResultSource::InvalidInput => "invalid_input",
            ResultSource::UnknownTool => "unknown_tool",
            ResultSource::Cancelled => "cancelled",
        }
    }
}

/// What the model sees in place of a thrown tool error's detail (SPEC T5).
pub const THROWN_TOOL_ERROR: &str = "The tool failed with an internal error.";

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    ToolCall {
        call_id: String,
        tool: String,
        input: Value,
    },
    ToolResult {
        call_id: String,
        tool: String,
        status: ToolStatus,
        source: ResultSource,
        /// The output, the failure value, or the error detail.
        output: Value,
    },
}

impl Part {
    pub fn text(text: impl Into<String>) -> Part {
        Part::Text { text: text.into() }
    }
}

/// A stored message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    /// Physical sequence number in the thread, starting at 1, never reused.
    pub seq: u64,
    pub role: Role,
    pub parts: Vec<Part>,
    pub visibility: Visibility,
    pub pai: PaiMeta,
}

impl Message {
    /// All text parts joined.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            if let Part::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }
}

/// A message as the model receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMessage {
    pub role: Role,
    pub content: Vec<ModelContent>,
}

impl ModelMessage {
    pub fn system(text: impl Into<String>) -> ModelMessage {
        ModelMessage {
            role: Role::System,
            content: vec![ModelContent::Text { text: text.into() }],
        }
    }

    pub fn user(text: impl Into<String>) -> ModelMessage {
        ModelMessage {
            role: Role::User,
            content: vec![ModelContent::Text { text: text.into() }],
        }
    }
}

/// Model-facing content: no visibility, no provenance, no result source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelContent {
    Text {
        text: String,
    },
    ToolCall {
        call_id: String,
        tool: String,
        input: Value,
    },
    ToolResult {
        call_id: String,
        tool: String,
        output: Value,
        is_error: bool,
    },
}

/// Derives the model context from stored messages: context-visible messages in
/// order, each part converted to what the model may see, then paired
/// ([`pair_tool_calls`]).
pub fn to_model_messages<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<ModelMessage> {
    let converted = messages
        .into_iter()
        .filter(|m| m.visibility.context)
        .filter_map(|m| {
            let content: Vec<ModelContent> = m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text { text } => ModelContent::Text { text: text.clone() },
                    Part::ToolCall {
                        call_id,
                        tool,
                        input,
                    } => ModelContent::ToolCall {
                        call_id: call_id.clone(),
                        tool: tool.clone(),
                        input: input.clone(),
                    },
                    Part::ToolResult {
                        call_id,
                        tool,
                        status,
                        source,
                        output,
                    } => ModelContent::ToolResult {
                        call_id: call_id.clone(),
                        tool: tool.clone(),
                        output: model_visible_output(*status, *source, output),
                        is_error: *status == ToolStatus::Error,
                    },
                })
                .collect();
            (!content.is_empty()).then_some(ModelMessage {
                role: m.role,
                content,
            })
        })
        .collect();
    pair_tool_calls(converted)
}

/// What a call that never got a result is answered with.
pub const MISSING_RESULT: &str = "The tool call did not complete.";

/// Makes a model context well paired (SPEC H6), whatever history rewrites,
/// windows, cancellations or failures came before:
/// - each tool call is answered by the first unused result with its id after
///   it (so providers that reuse ids are paired by order); a call with none
///   gets a synthetic error result right after its message;
/// - a result with no open call before it is dropped;
/// - a message that arrived while calls waited for their results (a steering
///   or concurrent user message) moves after those results, so each result
///   follows its call.
pub fn pair_tool_calls(messages: Vec<ModelMessage>) -> Vec<ModelMessage> {
    // Which calls have a result later on: match each result to the earliest
    // open call with its id.
    let mut answered = std::collections::BTreeSet::new();
    {
        let mut open: Vec<(usize, usize, &str)> = Vec::new();
        for (mi, m) in messages.iter().enumerate() {
            for (ci, c) in m.content.iter().enumerate() {
                match c {
                    ModelContent::ToolCall { call_id, .. } => open.push((mi, ci, call_id)),
                    ModelContent::ToolResult { call_id, .. } => {
                        if let Some(k) = open.iter().position(|(_, _, id)| *id == call_id.as_str())
                        {
                            let (cm, cc, _) = open.remove(k);
                            answered.insert((cm, cc));
                        }
                    }
                    ModelContent::Text { .. } => {}
                }
            }
        }
    }
    let mut out = Vec::with_capacity(messages.len());
    let mut waiting: Vec<String> = Vec::new();
    let mut deferred = Vec::new();
    for (mi, m) in messages.into_iter().enumerate() {
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
                        waiting.push(call_id.clone());
                    } else {
                        missing.push((call_id.clone(), tool.clone()));
                    }
                    content.push(ModelContent::ToolCall {
                        call_id,
                        tool,
                        input,
                    });
                }
                ModelContent::ToolResult {
                    call_id,
                    tool,
                    output,
                    is_error,
                } => {
                    let Some(k) = waiting.iter().position(|w| *w == call_id) else {
                        continue;
                    };
                    waiting.remove(k);
                    pairs = true;
                    content.push(ModelContent::ToolResult {
                        call_id,
                        tool,
                        output,
                        is_error,
                    });
                }
                text => content.push(text),
            }
        }
        if !content.is_empty() {
            let message = ModelMessage {
                role: m.role,
                content,
            };
            if !waiting.is_empty() && !pairs {
                deferred.push(message);
                continue;
            }
            out.push(message);
        }
        if !missing.is_empty() {
            out.push(ModelMessage {
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
            });
        }
        if waiting.is_empty() {
            out.append(&mut deferred);
        }
    }
    out.append(&mut deferred);
    out
}

/// What the model sees of one result (SPEC T5): outputs and deliberate failures
/// verbatim, thrown errors replaced by a fixed message.
pub fn model_visible_output(status: ToolStatus, source: ResultSource, output: &Value) -> Value {
    match (status, source) {
        (ToolStatus::Error, ResultSource::Throw) => Value::String(THROWN_TOOL_ERROR.into()),
        _ => output.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(seq: u64, role: Role, parts: Vec<Part>, visibility: Visibility) -> Message {
        Message {
            id: format!("m{seq}"),
            seq,
            role,
            parts,
            visibility,
            pai: PaiMeta {
                producer: Producer::User,
                run_id: None,
                step: None,
                updated_at: 0,
                outcome: None,
                reason: None,
            },
        }
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

    #[test]
    fn thrown_errors_are_redacted_for_the_model() {
        let v = model_visible_output(
            ToolStatus::Error,
            ResultSource::Throw,
            &Value::String("db password wrong".into()),
        );
        assert_eq!(v, Value::String(THROWN_TOOL_ERROR.into()));
        let v = model_visible_output(ToolStatus::Error, ResultSource::Fail, &Value::from(3));
        assert_eq!(v, Value::from(3));
    }
}
