//! The Anthropic Messages stream: `message_start`, content blocks
//! (`content_block_start`/`_delta`/`_stop`, with `text_delta` and
//! `input_json_delta`), `message_delta` with the stop reason and usage,
//! `ping`, `error`, closed by `message_stop`.
//!
//! Text deltas become parts as they come; a `tool_use` block is emitted
//! whole at its `content_block_stop`. Blocks of other types (thinking,
//! server tools) are skipped and counted, and so are their deltas.

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
}

/// The decoder's state between events.
#[derive(Debug, Default)]
pub(crate) struct Anthropic {
    blocks: BTreeMap<u64, Block>,
    finish: Option<FinishReason>,
}

impl Anthropic {
    pub(crate) fn is_terminal(raw: &Raw<'_>) -> bool {
        raw.name == TERMINAL
    }

    pub(crate) fn event(&mut self, raw: &Raw<'_>, out: &mut Out<'_>) -> Result<Flow, DecodeError> {
        let data = raw.json()?;
        match raw.name {
            "message_start" => {
                if let Some(usage) = opt(&data, "message.usage") {
                    out.report.usage = raw.usage(usage, "input_tokens", "output_tokens")?;
                }
            }
            "content_block_start" => self.start(raw, &data, out)?,
            "content_block_delta" => self.delta(raw, &data, out)?,
            "content_block_stop" => {
                let index = raw.u64(&data, "index")?;
                match self.blocks.remove(&index) {
                    Some(Block::Tool(call)) => out.parts.push(call.finish(raw.index)?),
                    Some(_) => {}
                    None => return Err(raw.malformed(format!("block {index} is not open"))),
                }
            }
            "message_delta" => self.message_delta(raw, &data, out)?,
            "message_stop" => return self.stop(raw, out),
            "ping" => {}
            "error" => {
                let message = error_message(&data).unwrap_or_else(|| data.to_string());
                out.parts.push(StreamPart::error(message));
                return Ok(Flow::Failed);
            }
            name => out.report.skip(name),
        }
        Ok(Flow::Continue)
    }

    fn start(&mut self, raw: &Raw<'_>, data: &Value, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let index = raw.u64(data, "index")?;
        let block = raw.at(data, "content_block")?;
        let block = match raw.str(block, "type")? {
            "text" => {
                out.text(opt(block, "text").and_then(Value::as_str).unwrap_or(""));
                Block::Text
            }
            "tool_use" => {
                let mut call = PendingCall::new(raw.str(block, "id")?, raw.str(block, "name")?, "");
                // A non-empty `input` here is the whole input (no deltas follow).
                match opt(block, "input") {
                    Some(Value::Object(map)) if map.is_empty() => {}
                    Some(input) => call.arguments = input.to_string(),
                    None => {}
                }
                Block::Tool(call)
            }
            other => {
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
        let index = raw.u64(data, "index")?;
        let delta = raw.at(data, "delta")?;
        let kind = raw.str(delta, "type")?;
        let block = self
            .blocks
            .get_mut(&index)
            .ok_or_else(|| raw.malformed(format!("block {index} is not open")))?;
        match (kind, block) {
            ("text_delta", Block::Text) => out.text(raw.str(delta, "text")?),
            ("input_json_delta", Block::Tool(call)) => {
                call.arguments.push_str(raw.str(delta, "partial_json")?);
            }
            (_, Block::Other) => out.report.skip(&format!("delta.{kind}")),
            ("text_delta" | "input_json_delta", _) => {
                return Err(raw.malformed(format!("a {kind} for block {index} of another type")));
            }
            _ => out.report.skip(&format!("delta.{kind}")),
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
            self.finish = Some(match reason {
                "tool_use" => FinishReason::ToolCalls,
                "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
                _ => FinishReason::Stop,
            });
            if reason == "refusal" {
                out.report.refuse("");
            }
            out.report.stop_reason = Some(reason.to_owned());
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

    fn stop(&mut self, raw: &Raw<'_>, out: &mut Out<'_>) -> Result<Flow, DecodeError> {
        if let Some(block) = self.blocks.keys().next() {
            return Err(raw.malformed(format!("block {block} never stopped")));
        }
        let finish = self
            .finish
            .ok_or_else(|| raw.malformed("the message stopped without a `stop_reason`"))?;
        out.parts.push(StreamPart::Finish(finish));
        Ok(Flow::End)
    }

    /// A tool call still streaming, for a truncation error.
    pub(crate) fn open_call(&self) -> Option<String> {
        self.blocks.values().find_map(|b| match b {
            Block::Tool(call) => Some(call.label()),
            _ => None,
        })
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
    fn a_refusal_is_reported() {
        let body = [
            event("message_delta", r#"{"delta":{"stop_reason":"refusal"}}"#),
            event("message_stop", "{}"),
        ]
        .concat();
        let decoded = decode(Format::Anthropic, body.as_bytes()).unwrap();
        assert_eq!(decoded.parts, [StreamPart::Finish(FinishReason::Stop)]);
        assert_eq!(decoded.report.refusal.as_deref(), Some(""));
    }
}
