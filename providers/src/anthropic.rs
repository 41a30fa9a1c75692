//! The Anthropic Messages stream: `message_start`, content blocks
//! (`content_block_start`/`_delta`/`_stop`, with `text_delta` and
//! `input_json_delta`), `message_delta` with the stop reason and usage,
//! `ping`, `error`, closed by `message_stop`.
//!
//! Text deltas become parts as they come; a `tool_use` block is emitted
//! whole at its `content_block_stop`. Blocks of other types (thinking,
//! server tools) are skipped and counted, and so are their deltas.
//!
//! A `message_start` may already hold content blocks and its stop reason
//! (programmatic tool calling): those blocks are emitted at once, and a
//! block that streams again at one of their indices is compared with what
//! was given instead of emitted twice (SPEC S6). The answer is whole at
//! its stop reason (the `message_delta`'s, or the `message_start`'s):
//! then come the refusal's words (`stop_details.explanation`) and the
//! finish part; a body that ends there without `message_stop` is accepted,
//! as the SDKs do. A tool call still streaming when the output limit
//! stopped the message is dropped, with a note: its input never closed.

use std::collections::BTreeMap;

use pai_runtime::{StreamPart, model::FinishReason};
use serde_json::Value;

use crate::body::error_message;
use crate::calls::PendingCall;
use crate::error::DecodeError;
use crate::event::{Flow, Out, Raw, opt};

/// The terminal event, as truncation errors name it.
pub(crate) const TERMINAL: &str = "message_stop";

/// An open content block.
#[derive(Debug)]
enum Block {
    Text,
    Tool(PendingCall),
    /// A block of a type the decoder does not turn into parts.
    Other,
    /// A block `message_start` gave whole, streaming again: compared at
    /// its stop with what was given.
    Again {
        given: Given,
        streamed: Given,
    },
}

/// A content block as a whole: what `message_start` gave, or what a block
/// streamed again assembled.
#[derive(Debug, Clone, PartialEq)]
enum Given {
    Text(String),
    Tool {
        id: String,
        name: String,
        input: String,
    },
    Other(String),
}

/// The decoder's state between events.
#[derive(Debug, Default)]
pub(crate) struct Anthropic {
    blocks: BTreeMap<u64, Block>,
    /// Blocks `message_start` gave whole, by index.
    given: BTreeMap<u64, Given>,
    /// The open message's id, once `message_start` came.
    message: Option<String>,
    /// The stop reason came: the finish part was written.
    finished: Option<String>,
    /// Text was emitted since the last tool call or text boundary.
    text_open: bool,
    /// A block of another type began since the last text: the next text
    /// block is a text of its own (S6).
    apart: bool,
}

impl Anthropic {
    pub(crate) fn is_terminal(raw: &Raw<'_>) -> bool {
        raw.name == TERMINAL
    }

    pub(crate) fn event(&mut self, raw: &Raw<'_>, out: &mut Out<'_>) -> Result<Flow, DecodeError> {
        let data = raw.json()?;
        match raw.name {
            "message_start" => self.message_start(raw, &data, out)?,
            "content_block_start" => self.start(raw, &data, out)?,
            "content_block_delta" => self.delta(raw, &data, out)?,
            "content_block_stop" => self.block_stop(raw, &data, out)?,
            "message_delta" => self.message_delta(raw, &data, out)?,
            "message_stop" => return self.stop(raw),
            "ping" => {}
            "error" => {
                let message = error_message(&data).unwrap_or_else(|| data.to_string());
                out.parts.push(StreamPart::error(message));
                return Ok(Flow::Failed);
            }
            name => out.unknown(name),
        }
        Ok(match self.finished {
            Some(_) => Flow::Finished,
            None => Flow::Continue,
        })
    }

    /// Content after the answer finished is a stream that says two things.
    fn not_finished(&self, raw: &Raw<'_>) -> Result<(), DecodeError> {
        match &self.finished {
            Some(reason) => Err(raw.malformed(format!("content after the stop reason {reason:?}"))),
            None => Ok(()),
        }
    }

    /// `message_start`: usage, and the content and stop reason it may
    /// already hold. The same message started again is skipped (a
    /// duplicate); another one while this is open is two responses spliced.
    fn message_start(
        &mut self,
        raw: &Raw<'_>,
        data: &Value,
        out: &mut Out<'_>,
    ) -> Result<(), DecodeError> {
        let id = opt(data, "message.id")
            .and_then(Value::as_str)
            .unwrap_or("");
        match &self.message {
            Some(open) if open == id => {
                out.report.skip("message_start.again");
                return Ok(());
            }
            Some(open) => {
                return Err(
                    raw.malformed(format!("message {id:?} started while {open:?} was open"))
                );
            }
            None => self.message = Some(id.to_owned()),
        }
        if let Some(usage) = opt(data, "message.usage") {
            out.report.usage = raw.usage(usage, "input_tokens", "output_tokens")?;
        }
        if let Some(content) = opt(data, "message.content") {
            let blocks = content
                .as_array()
                .ok_or_else(|| raw.malformed("`message.content` is not a list"))?;
            for (index, block) in blocks.iter().enumerate() {
                let given = self.give(raw, block, out)?;
                self.given.insert(index as u64, given);
            }
        }
        if let Some(reason) = opt(data, "message.stop_reason") {
            let reason = raw.as_str(reason, "message.stop_reason")?;
            self.finish(raw, reason, opt(data, "message.stop_details"), out)?;
        }
        Ok(())
    }

    /// One block `message_start` gave whole: emitted at once.
    fn give(
        &mut self,
        raw: &Raw<'_>,
        block: &Value,
        out: &mut Out<'_>,
    ) -> Result<Given, DecodeError> {
        Ok(match raw.str(block, "type")? {
            "text" => {
                let text = opt(block, "text").and_then(Value::as_str).unwrap_or("");
                self.text(text, out);
                Given::Text(text.to_owned())
            }
            "tool_use" => {
                let (id, name) = (raw.str(block, "id")?, raw.str(block, "name")?);
                let input = opt(block, "input").map_or_else(String::new, Value::to_string);
                let call = PendingCall::new(id, name, &input);
                self.text_open = false;
                out.parts.push(call.finish(raw.index)?);
                Given::Tool {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    input,
                }
            }
            other => {
                self.apart = true;
                out.report.skip(&format!("content_block.{other}"));
                Given::Other(other.to_owned())
            }
        })
    }

    /// The start of a text block's text. Text blocks next to each other
    /// are one text (citations cut a sentence into blocks); one that
    /// follows a block of another type (a server tool's, thinking) starts
    /// a text of its own, as the provider's blocks keep them apart (S6).
    fn text(&mut self, text: &str, out: &mut Out<'_>) {
        if std::mem::take(&mut self.apart) && self.text_open {
            out.parts.push(StreamPart::TextEnd);
        }
        self.text_open |= !text.is_empty();
        out.text(text);
    }

    fn start(&mut self, raw: &Raw<'_>, data: &Value, out: &mut Out<'_>) -> Result<(), DecodeError> {
        self.not_finished(raw)?;
        let index = raw.u64(data, "index")?;
        let block = raw.at(data, "content_block")?;
        let kind = raw.str(block, "type")?;
        let text = || opt(block, "text").and_then(Value::as_str).unwrap_or("");
        let block = match (self.given.get(&index), kind) {
            (Some(given), _) => Block::Again {
                given: given.clone(),
                streamed: match kind {
                    "text" => Given::Text(text().to_owned()),
                    "tool_use" => Given::Tool {
                        id: raw.str(block, "id")?.to_owned(),
                        name: raw.str(block, "name")?.to_owned(),
                        input: whole_input(block),
                    },
                    other => Given::Other(other.to_owned()),
                },
            },
            (None, "text") => {
                self.text(text(), out);
                Block::Text
            }
            (None, "tool_use") => {
                let mut call = PendingCall::new(raw.str(block, "id")?, raw.str(block, "name")?, "");
                call.arguments = whole_input(block);
                Block::Tool(call)
            }
            (None, other) => {
                self.apart = true;
                out.report.skip(&format!("content_block.{other}"));
                Block::Other
            }
        };
        if self.blocks.insert(index, block).is_some() {
            return Err(raw.malformed(format!("block {index} started twice")));
        }
        Ok(())
    }

    fn delta(&mut self, raw: &Raw<'_>, data: &Value, out: &mut Out<'_>) -> Result<(), DecodeError> {
        self.not_finished(raw)?;
        let index = raw.u64(data, "index")?;
        let delta = raw.at(data, "delta")?;
        let kind = raw.str(delta, "type")?;
        let block = self
            .blocks
            .get_mut(&index)
            .ok_or_else(|| raw.malformed(format!("block {index} is not open")))?;
        match (kind, block) {
            ("text_delta", Block::Text) => {
                let text = raw.str(delta, "text")?;
                self.text_open |= !text.is_empty();
                out.text(text);
            }
            ("input_json_delta", Block::Tool(call)) => {
                call.arguments.push_str(raw.str(delta, "partial_json")?);
            }
            (
                "text_delta",
                Block::Again {
                    streamed: Given::Text(t),
                    ..
                },
            ) => {
                t.push_str(raw.str(delta, "text")?);
            }
            (
                "input_json_delta",
                Block::Again {
                    streamed: Given::Tool { input, .. },
                    ..
                },
            ) => {
                input.push_str(raw.str(delta, "partial_json")?);
            }
            (
                _,
                Block::Other
                | Block::Again {
                    streamed: Given::Other(_),
                    ..
                },
            ) => {
                out.report.skip(&format!("delta.{kind}"));
            }
            ("text_delta" | "input_json_delta", _) => {
                return Err(raw.malformed(format!("a {kind} for block {index} of another type")));
            }
            _ => out.report.skip(&format!("delta.{kind}")),
        }
        Ok(())
    }

    fn block_stop(
        &mut self,
        raw: &Raw<'_>,
        data: &Value,
        out: &mut Out<'_>,
    ) -> Result<(), DecodeError> {
        let index = raw.u64(data, "index")?;
        match self.blocks.remove(&index) {
            Some(Block::Tool(call)) => {
                self.text_open = false;
                out.parts.push(call.finish(raw.index)?);
            }
            Some(Block::Again { given, streamed }) => {
                if !same(&given, &streamed) {
                    out.report.note(format!(
                        "event {}: block {index} streamed {} but message_start gave {}",
                        raw.index,
                        describe(&streamed),
                        describe(&given)
                    ));
                }
            }
            Some(Block::Text | Block::Other) => {}
            // Closed by the stop reason already.
            None if self.finished.is_some() => {}
            None => return Err(raw.malformed(format!("block {index} is not open"))),
        }
        Ok(())
    }

    fn message_delta(
        &mut self,
        raw: &Raw<'_>,
        data: &Value,
        out: &mut Out<'_>,
    ) -> Result<(), DecodeError> {
        if let Some(reason) = opt(data, "delta.stop_reason") {
            let reason = raw.as_str(reason, "delta.stop_reason")?;
            match &self.finished {
                None => self.finish(raw, reason, opt(data, "delta.stop_details"), out)?,
                Some(first) if first != reason => out.report.note(format!(
                    "event {}: a second stop reason {reason:?} after {first:?}",
                    raw.index
                )),
                Some(_) => {}
            }
        }
        if let Some(usage) = opt(data, "usage") {
            // `output_tokens` here is cumulative; `input_tokens`, when
            // present, replaces message_start's.
            let mut total = out.report.usage.unwrap_or_default();
            if let Some(n) = opt(usage, "output_tokens") {
                total.output_tokens = n
                    .as_u64()
                    .ok_or_else(|| raw.malformed("`usage.output_tokens` is not a whole number"))?;
            }
            if let Some(n) = opt(usage, "input_tokens") {
                total.input_tokens = n
                    .as_u64()
                    .ok_or_else(|| raw.malformed("`usage.input_tokens` is not a whole number"))?;
            }
            out.report.usage = Some(total);
        }
        Ok(())
    }

    /// The stop reason: blocks still open are closed (a tool call cut by
    /// the output limit is dropped, with a note; at any other stop it is
    /// an error), then the refusal's words, then the finish part.
    fn finish(
        &mut self,
        raw: &Raw<'_>,
        reason: &str,
        details: Option<&Value>,
        out: &mut Out<'_>,
    ) -> Result<(), DecodeError> {
        let finish = match reason {
            "tool_use" => FinishReason::ToolCalls,
            "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
            "refusal" => FinishReason::Refusal,
            _ => FinishReason::Stop,
        };
        for (index, block) in std::mem::take(&mut self.blocks) {
            match block {
                Block::Tool(call) if finish == FinishReason::Length => out.report.note(format!(
                    "event {}: tool call {} was still streaming at the output limit; dropped",
                    raw.index,
                    call.label()
                )),
                Block::Tool(_) => {
                    return Err(raw.malformed(format!("block {index} never stopped")));
                }
                _ => {}
            }
        }
        if finish == FinishReason::Refusal {
            let words = details
                .and_then(|d| opt(d, "explanation"))
                .and_then(Value::as_str)
                .unwrap_or("");
            out.report.refuse(words);
            if !words.is_empty() {
                out.parts.push(StreamPart::refusal(words));
            }
        }
        out.report.stop_reason = Some(reason.to_owned());
        out.parts.push(StreamPart::Finish(finish));
        self.finished = Some(reason.to_owned());
        Ok(())
    }

    fn stop(&mut self, raw: &Raw<'_>) -> Result<Flow, DecodeError> {
        if let Some(block) = self.blocks.keys().next() {
            return Err(raw.malformed(format!("block {block} never stopped")));
        }
        match self.finished {
            Some(_) => Ok(Flow::End),
            None => Err(raw.malformed("the message stopped without a `stop_reason`")),
        }
    }

    /// A tool call still streaming, for a truncation error.
    pub(crate) fn open_call(&self) -> Option<String> {
        self.blocks.values().find_map(|b| match b {
            Block::Tool(call) => Some(call.label()),
            _ => None,
        })
    }
}

/// A `tool_use` block's input as its start gives it: a non-empty `input`
/// is the whole input (no deltas follow); `{}` or none, nothing yet.
fn whole_input(block: &Value) -> String {
    match opt(block, "input") {
        Some(Value::Object(map)) if map.is_empty() => String::new(),
        Some(input) => input.to_string(),
        None => String::new(),
    }
}

/// Two wholes say the same: equal texts, or calls with the same id, name
/// and input (as JSON values: key order and spacing aside).
fn same(a: &Given, b: &Given) -> bool {
    let json = |s: &str| match s.trim() {
        "" => Some(Value::Object(Default::default())),
        s => serde_json::from_str::<Value>(s).ok(),
    };
    match (a, b) {
        (
            Given::Tool { id, name, input },
            Given::Tool {
                id: i2,
                name: n2,
                input: in2,
            },
        ) => id == i2 && name == n2 && json(input).is_some() && json(input) == json(in2),
        _ => a == b,
    }
}

fn describe(g: &Given) -> String {
    match g {
        Given::Text(t) => format!("text {t:?}"),
        Given::Tool { id, name, input } => format!("tool call {id} ({name}) {input}"),
        Given::Other(kind) => format!("a {kind} block"),
    }
}

#[cfg(test)]
mod tests {
    use pai_runtime::{StreamPart, model::FinishReason};
    use serde_json::json;

    use crate::{Format, decode};

    fn event(name: &str, data: &str) -> String {
        format!("event: {name}\ndata: {data}\n\n")
    }

    #[test]
    fn a_whole_input_in_the_block_start_needs_no_delta() {
        let body = [
            event("content_block_start", r#"{"index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{"x":1}}}"#),
            event("content_block_stop", r#"{"index":0}"#),
            event("message_delta", r#"{"delta":{"stop_reason":"tool_use"}}"#),
            event("message_stop", "{}"),
        ]
        .concat();
        let decoded = decode(Format::Anthropic, body.as_bytes()).unwrap();
        assert_eq!(
            decoded.parts,
            [
                StreamPart::tool_call("t", "f", json!({"x": 1})),
                StreamPart::Finish(FinishReason::ToolCalls)
            ]
        );
    }

    #[test]
    fn a_refusal_ends_the_answer_with_the_providers_words() {
        let body = [
            event("message_delta", r#"{"delta":{"stop_reason":"refusal","stop_details":{"type":"refusal","category":"cyber","explanation":"Blocked under the policy."}}}"#),
            event("message_stop", "{}"),
        ]
        .concat();
        let decoded = decode(Format::Anthropic, body.as_bytes()).unwrap();
        assert_eq!(
            decoded.parts,
            [
                StreamPart::refusal("Blocked under the policy."),
                StreamPart::Finish(FinishReason::Refusal)
            ]
        );
        assert_eq!(
            decoded.report.refusal.as_deref(),
            Some("Blocked under the policy.")
        );
        let bare = [
            event("message_delta", r#"{"delta":{"stop_reason":"refusal"}}"#),
            event("message_stop", "{}"),
        ]
        .concat();
        let decoded = decode(Format::Anthropic, bare.as_bytes()).unwrap();
        assert_eq!(decoded.parts, [StreamPart::Finish(FinishReason::Refusal)]);
        assert_eq!(decoded.report.refusal.as_deref(), Some(""));
    }

    const START: &str =
        r#"{"message":{"id":"m1","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}"#;

    /// SPEC S6: a `message_start` that holds a whole `tool_use` block and
    /// its stop reason, then `message_stop` (programmatic tool calling).
    #[test]
    fn s6_message_start_with_content_gives_its_call() {
        let body = [
            event("message_start", r#"{"message":{"id":"m1","content":[{"type":"code_execution_tool_result","tool_use_id":"s"},{"type":"tool_use","id":"toolu_9","name":"lookup","input":{"id":"c1"}}],"stop_reason":"tool_use","usage":{"input_tokens":0,"output_tokens":0}}}"#),
            event("message_stop", "{}"),
        ]
        .concat();
        let decoded = decode(Format::Anthropic, body.as_bytes()).unwrap();
        assert_eq!(
            decoded.parts,
            [
                StreamPart::tool_call("toolu_9", "lookup", json!({"id": "c1"})),
                StreamPart::Finish(FinishReason::ToolCalls)
            ]
        );
        assert_eq!(
            decoded
                .report
                .skipped
                .get("content_block.code_execution_tool_result"),
            Some(&1)
        );
    }

    /// A block streamed again at an index `message_start` gave is compared,
    /// not emitted twice; a difference is a note (SPEC S6).
    #[test]
    fn s6_a_given_block_streamed_again_is_compared() {
        let body = |again: &str| {
            [
                event(
                    "message_start",
                    r#"{"message":{"id":"m1","content":[{"type":"text","text":"Hello"}]}}"#,
                ),
                event(
                    "content_block_start",
                    r#"{"index":0,"content_block":{"type":"text","text":""}}"#,
                ),
                event(
                    "content_block_delta",
                    &format!(r#"{{"index":0,"delta":{{"type":"text_delta","text":"{again}"}}}}"#),
                ),
                event("content_block_stop", r#"{"index":0}"#),
                event("message_delta", r#"{"delta":{"stop_reason":"end_turn"}}"#),
                event("message_stop", "{}"),
            ]
            .concat()
        };
        let same = decode(Format::Anthropic, body("Hello").as_bytes()).unwrap();
        assert_eq!(
            same.parts,
            [
                StreamPart::text("Hello"),
                StreamPart::Finish(FinishReason::Stop)
            ]
        );
        assert!(same.report.notes.is_empty(), "{:?}", same.report.notes);
        let other = decode(Format::Anthropic, body("Hullo").as_bytes()).unwrap();
        assert_eq!(other.parts, same.parts);
        assert_eq!(
            other.report.notes,
            ["event 3: block 0 streamed text \"Hullo\" but message_start gave text \"Hello\""]
        );
    }

    #[test]
    fn the_same_message_started_twice_is_one_and_another_is_an_error() {
        let twice = [
            event("message_start", START),
            event("message_start", START),
            event("message_delta", r#"{"delta":{"stop_reason":"end_turn"}}"#),
            event("message_stop", "{}"),
        ]
        .concat();
        let decoded = decode(Format::Anthropic, twice.as_bytes()).unwrap();
        assert_eq!(decoded.report.skipped.get("message_start.again"), Some(&1));
        let spliced = twice.replacen("\"m1\"", "\"m0\"", 1);
        assert!(matches!(
            decode(Format::Anthropic, spliced.as_bytes()),
            Err(crate::DecodeError::Malformed { event: 1, .. })
        ));
    }

    /// The output limit stopped a tool call mid-input: it is dropped with
    /// a note, and the body may end without `message_stop`.
    #[test]
    fn a_call_cut_by_the_output_limit_is_dropped_and_noted() {
        let body = [
            event("message_start", START),
            event(
                "content_block_start",
                r#"{"index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}"#,
            ),
            event(
                "content_block_delta",
                r#"{"index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\": [1"}}"#,
            ),
            event(
                "message_delta",
                r#"{"delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":9}}"#,
            ),
        ]
        .concat();
        let decoded = decode(Format::Anthropic, body.as_bytes()).unwrap();
        assert_eq!(decoded.parts, [StreamPart::Finish(FinishReason::Length)]);
        assert_eq!(decoded.report.notes.len(), 2, "{:?}", decoded.report.notes);
        assert!(decoded.report.notes[0].contains("t (f) was still streaming"));
        assert!(decoded.report.notes[1].contains("without message_stop"));
    }
}
