//! Stored messages and the model-facing shape derived from them.

use crate::id::{CallId, MessageId, RunId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::Millis;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Producer {
    /// A client's user message (a send or a steer), or a user message trusted
    /// code appended.
    User,
    /// The model: a step's assistant message.
    Model,
    /// A lifecycle hook: a `prepare_run` response, or a message a hook stored
    /// during a run.
    Lifecycle,
    /// A tool: a tool result message.
    Tool,
    /// Trusted code outside any run (an admin write).
    Runtime,
    /// The compaction helper: a summary standing for older messages (SPEC C1).
    Compaction,
}

/// The conversational role of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// System.
    System,
    /// User.
    User,
    /// Assistant.
    Assistant,
    /// Tool.
    Tool,
}

/// Where a message may appear. Both flags are independent: a summary can be
/// transcript-visible but context-hidden; a lifecycle note the reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
#[cfg_attr(
    feature = "schema",
    schemars(description = "Stored visibility of a message.")
)]
pub struct Visibility {
    /// Shown in the transcript.
    pub transcript: bool,
    /// Sent to the model.
    pub context: bool,
}

impl Visibility {
    /// Shown in the transcript and sent to the model: what ordinary messages
    /// have.
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The run did what it was asked.
    Completed,
    /// A guard stopped the run on purpose.
    Blocked,
    /// A client cancelled the run.
    Cancelled,
    /// Something went wrong.
    Failed,
}

impl Outcome {
    /// The outcome's name in the event log and the store (`completed`,
    /// `blocked`, `cancelled`, `failed`).
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
    /// Who wrote the message.
    pub producer: Producer,
    /// The run that wrote it; `None` for messages written outside any run.
    pub run_id: Option<RunId>,
    /// The step of that run that wrote it, from 0; `None` outside a step.
    pub step: Option<u32>,
    /// When the message was last written, on the runtime's clock
    /// (milliseconds).
    pub updated_at: Millis,
    /// Set on terminal lifecycle responses (SPEC L12).
    pub outcome: Option<Outcome>,
    /// With `outcome`: why the run ended so, in words.
    pub reason: Option<String>,
    /// On a model step's message: the registered tools the attempt that
    /// answered offered, when its route named them (SPEC P6). A worker
    /// that takes the run over checks the step's calls against it, as the
    /// holder did (K3); `None` offers every registered tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<Vec<String>>,
}

impl PaiMeta {
    /// Provenance for a new message, without outcome or reason.
    pub fn new(producer: Producer, run_id: Option<&str>, step: Option<u32>, at: Millis) -> PaiMeta {
        PaiMeta {
            producer,
            run_id: run_id.map(RunId::from),
            step,
            updated_at: at,
            outcome: None,
            reason: None,
            offered: None,
        }
    }
}

/// Whether a tool call produced an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool produced an output.
    Output,
    /// The call failed; `source` says how.
    Error,
}

/// Where a tool result came from (SPEC T3, T5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// The run was cancelled, completed or responded before the call finished or was answered; the output says which (SPEC T8, A3, L12).
    Cancelled,
    /// A client denied an approval call; it never ran (SPEC T7).
    Denied,
    /// A client tool's output, submitted by the client (SPEC T7).
    Client,
}

impl ResultSource {
    /// The source's name in the event log and the store (`tool`,
    /// `invalid_input`, `client`).
    pub fn as_str(self) -> &'static str {
        match self {
            ResultSource::Tool => "tool",
            ResultSource::Fail => "fail",
            ResultSource::Throw => "throw",
            ResultSource::Rejected => "rejected",
            ResultSource::InvalidInput => "invalid_input",
            ResultSource::UnknownTool => "unknown_tool",
            ResultSource::Cancelled => "cancelled",
            ResultSource::Denied => "denied",
            ResultSource::Client => "client",
        }
    }
}

/// One part of a stored message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call.
    ToolCall {
        /// The call's id.
        call_id: CallId,
        /// The tool.
        tool: String,
        /// Its input.
        input: Value,
    },
    /// A tool result.
    ToolResult {
        /// The call's id.
        call_id: CallId,
        /// The tool.
        tool: String,
        /// Whether the tool produced an output.
        status: ToolStatus,
        /// Where the result came from.
        source: ResultSource,
        /// The output, the failure value, or the error detail.
        output: Value,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part::Text { text: text.into() }
    }
}

/// A message on its way to the store: everything a stored [`Message`]
/// has but its sequence number, which only the store assigns, when it
/// commits (SPEC H1). Appends, submits and staged writes carry these;
/// the store answers with the first number it gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewMessage {
    /// The message's id, from the runtime's id source.
    pub id: MessageId,
    /// Who speaks.
    pub role: Role,
    /// What the message holds, in order.
    pub parts: Vec<Part>,
    /// Where it may appear: transcript, model context, both or neither.
    pub visibility: Visibility,
    /// Runtime-owned provenance: producer, run, step, time (`metadata.pai`).
    pub pai: PaiMeta,
}

impl NewMessage {
    /// The message as stored under `seq`.
    pub fn stored(self, seq: u64) -> Message {
        let NewMessage {
            id,
            role,
            parts,
            visibility,
            pai,
        } = self;
        Message {
            id,
            seq,
            role,
            parts,
            visibility,
            pai,
        }
    }
}

/// A stored message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The message's id.
    pub id: MessageId,
    /// Physical sequence number in the thread, starting at 1, never reused.
    pub seq: u64,
    /// Who speaks.
    pub role: Role,
    /// What the message holds, in order.
    pub parts: Vec<Part>,
    /// Where it may appear: transcript, model context, both or neither.
    pub visibility: Visibility,
    /// Runtime-owned provenance: producer, run, step, time (`metadata.pai`).
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

    /// All text parts joined, taking the message: one text part is moved
    /// out, not copied.
    pub fn into_text(self) -> String {
        let mut texts = self.parts.into_iter().filter_map(|p| match p {
            Part::Text { text } => Some(text),
            _ => None,
        });
        let mut out = texts.next().unwrap_or_default();
        for t in texts {
            out.push_str(&t);
        }
        out
    }
}

/// A message as the model receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct ModelMessage {
    /// Who speaks.
    pub role: Role,
    /// What the message holds.
    pub content: Vec<ModelContent>,
}

impl ModelMessage {
    /// A system message with one text part.
    pub fn system(text: impl Into<String>) -> ModelMessage {
        ModelMessage {
            role: Role::System,
            content: vec![ModelContent::Text { text: text.into() }],
        }
    }

    /// A user message with one text part.
    pub fn user(text: impl Into<String>) -> ModelMessage {
        ModelMessage {
            role: Role::User,
            content: vec![ModelContent::Text { text: text.into() }],
        }
    }

    /// The text contents, joined (tool calls and results left out).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.content {
            if let ModelContent::Text { text } = c {
                out.push_str(text);
            }
        }
        out
    }
}

/// One piece of a model-facing message.
// No visibility, no provenance, no result source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub enum ModelContent {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call of the model.
    ToolCall {
        /// The call's id.
        call_id: CallId,
        /// The tool.
        tool: String,
        /// Its input.
        input: Value,
    },
    /// A tool's result.
    ToolResult {
        /// The call's id.
        call_id: CallId,
        /// The tool.
        tool: String,
        /// The output, failure value or error text the model sees.
        output: Value,
        /// The call failed.
        is_error: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn into_text_joins_the_text_parts_as_text_does() {
        let call = Part::ToolCall {
            call_id: "c".into(),
            tool: "t".into(),
            input: serde_json::Value::Null,
        };
        for parts in [
            vec![],
            vec![Part::text("one")],
            vec![Part::text("a"), call, Part::text("b")],
        ] {
            let m = Message {
                id: "m".into(),
                seq: 1,
                role: Role::Assistant,
                parts,
                visibility: Visibility::ALL,
                pai: PaiMeta::new(Producer::Model, None, None, 0),
            };
            assert_eq!(m.clone().into_text(), m.text());
        }
    }

    #[test]
    fn a_model_message_text_leaves_calls_out() {
        let m = ModelMessage {
            role: Role::Assistant,
            content: vec![
                ModelContent::Text { text: "a".into() },
                ModelContent::ToolCall {
                    call_id: "c".into(),
                    tool: "t".into(),
                    input: serde_json::Value::Null,
                },
                ModelContent::Text { text: "b".into() },
            ],
        };
        assert_eq!(m.text(), "ab");
        assert_eq!(ModelMessage::system("s").text(), "s");
    }
}
