//! OpenAI-compatible Chat Completions streaming (OpenAI, vLLM, llama.cpp's
//! server, Ollama's `/v1` endpoint): `data:` lines of `chat.completion.chunk`
//! JSON, closed by `data: [DONE]`.
//!
//! Text streams as parts as it comes; tool calls, whose argument fragments
//! arrive keyed by `index`, are emitted whole at `[DONE]`, in index order,
//! before the finish part. Only choice 0 is decoded (`n` > 1 is refused).

use std::collections::BTreeMap;

use pai_runtime::{StreamPart, model::FinishReason};
use serde_json::Value;

use crate::body::error_message;
use crate::calls::PendingCall;
use crate::error::DecodeError;
use crate::event::{Flow, Out, Raw, opt};

/// The terminal event, as truncation errors name it.
pub(crate) const TERMINAL: &str = "data: [DONE]";

/// The decoder's state between events.
#[derive(Debug, Default)]
pub(crate) struct Chat {
    calls: BTreeMap<u64, PendingCall>,
    finish: Option<FinishReason>,
}

impl Chat {
    pub(crate) fn is_terminal(raw: &Raw<'_>) -> bool {
        raw.data.trim() == "[DONE]"
    }

    pub(crate) fn event(&mut self, raw: &Raw<'_>, out: &mut Out<'_>) -> Result<Flow, DecodeError> {
        if Chat::is_terminal(raw) {
            return self.done(raw, out);
        }
        if raw.name != "message" && raw.name != "error" {
            out.report.skip(raw.name);
            return Ok(Flow::Continue);
        }
        let chunk = raw.json()?;
        if raw.name == "error" || opt(&chunk, "error").is_some() {
            let message = error_message(&chunk).unwrap_or_else(|| chunk.to_string());
            out.parts.push(StreamPart::error(message));
            return Ok(Flow::Failed);
        }
        if let Some(usage) = opt(&chunk, "usage") {
            out.report.usage = raw.usage(usage, "prompt_tokens", "completion_tokens")?;
        }
        let choices = match opt(&chunk, "choices") {
            Some(Value::Array(choices)) => choices.as_slice(),
            None if out.report.usage.is_some() => &[],
            _ => return Err(raw.malformed("`choices` is not a list")),
        };
        for choice in choices {
            self.choice(raw, choice, out)?;
        }
        Ok(Flow::Continue)
    }

    fn choice(
        &mut self,
        raw: &Raw<'_>,
        choice: &Value,
        out: &mut Out<'_>,
    ) -> Result<(), DecodeError> {
        let index = opt(choice, "index").map_or(Ok(0), |_| raw.u64(choice, "index"))?;
        if index != 0 {
            return Err(raw.malformed(format!("choice {index}: only choice 0 is decoded")));
        }
        if let Some(delta) = opt(choice, "delta") {
            if let Some(text) = opt(delta, "content") {
                out.text(raw.as_str(text, "delta.content")?);
            }
            if let Some(refusal) = opt(delta, "refusal") {
                out.report.refuse(raw.as_str(refusal, "delta.refusal")?);
            }
            for key in ["reasoning_content", "reasoning"] {
                if opt(delta, key).is_some() {
                    out.report.skip(&format!("delta.{key}"));
                }
            }
            if let Some(calls) = opt(delta, "tool_calls") {
                let calls = calls
                    .as_array()
                    .ok_or_else(|| raw.malformed("`delta.tool_calls` is not a list"))?;
                for call in calls {
                    self.call_delta(raw, call)?;
                }
            }
        }
        if let Some(reason) = opt(choice, "finish_reason") {
            let reason = raw.as_str(reason, "finish_reason")?;
            self.finish = Some(finish_reason(reason));
            out.report.stop_reason = Some(reason.to_owned());
        }
        Ok(())
    }

    fn call_delta(&mut self, raw: &Raw<'_>, call: &Value) -> Result<(), DecodeError> {
        let index = raw.u64(call, "index")?;
        let field = |path: &str| opt(call, path).map(|v| raw.as_str(v, path)).transpose();
        let (id, name, arguments) = (
            field("id")?,
            field("function.name")?,
            field("function.arguments")?,
        );
        let pending = match self.calls.get_mut(&index) {
            Some(pending) => pending,
            None => {
                let id = id.ok_or_else(|| {
                    raw.malformed(format!("tool call {index} starts without an `id`"))
                })?;
                self.calls
                    .entry(index)
                    .or_insert(PendingCall::new(id, "", ""))
            }
        };
        if let Some(name) = name {
            pending.tool.push_str(name);
        }
        if let Some(arguments) = arguments {
            pending.arguments.push_str(arguments);
        }
        Ok(())
    }

    /// `[DONE]`: the calls, then the finish part.
    fn done(&mut self, raw: &Raw<'_>, out: &mut Out<'_>) -> Result<Flow, DecodeError> {
        let finish = self
            .finish
            .ok_or_else(|| raw.malformed("the stream closed without a `finish_reason`"))?;
        for (_, call) in std::mem::take(&mut self.calls) {
            if call.tool.is_empty() {
                return Err(raw.malformed(format!("tool call {} has no function name", call.id)));
            }
            out.parts.push(call.finish(raw.index)?);
        }
        out.parts.push(StreamPart::Finish(finish));
        Ok(Flow::End)
    }

    /// A tool call still streaming, for a truncation error.
    pub(crate) fn open_call(&self) -> Option<String> {
        self.calls.values().next().map(PendingCall::label)
    }
}

/// The runtime's finish reason for a Chat Completions `finish_reason`; the
/// provider's own word stays in the report (`content_filter` is a stop).
fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        _ => FinishReason::Stop,
    }
}

#[cfg(test)]
mod tests {
    use pai_runtime::{StreamPart, model::FinishReason};
    use serde_json::json;

    use crate::{DecodeError, Format, decode};

    fn chat(body: &str) -> Result<crate::Decoded, DecodeError> {
        decode(Format::OpenAiChat, body.as_bytes())
    }

    #[test]
    fn an_error_event_is_an_error_part() {
        let decoded =
            chat("event: error\ndata: {\"message\":\"busy\"}\n\ndata: [DONE]\n\n").unwrap();
        assert_eq!(decoded.parts, [StreamPart::error("busy")]);
    }

    #[test]
    fn name_fragments_append_and_empty_arguments_are_an_empty_object() {
        let body = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"get_\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"time\",\"arguments\":\"\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let decoded = chat(body).unwrap();
        assert_eq!(
            decoded.parts,
            [
                StreamPart::tool_call("c", "get_time", json!({})),
                StreamPart::Finish(FinishReason::ToolCalls)
            ]
        );
    }

    #[test]
    fn a_call_without_an_id_is_malformed() {
        let body = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"f\"}}]}}]}\n\n";
        assert!(matches!(
            chat(body),
            Err(DecodeError::Malformed { event: 0, .. })
        ));
    }

    #[test]
    fn content_filter_is_a_stop_with_the_reason_reported() {
        let body = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\ndata: [DONE]\n\n";
        let decoded = chat(body).unwrap();
        assert_eq!(decoded.parts, [StreamPart::Finish(FinishReason::Stop)]);
        assert_eq!(
            decoded.report.stop_reason.as_deref(),
            Some("content_filter")
        );
    }
}
