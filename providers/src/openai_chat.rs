//! OpenAI-compatible Chat Completions streaming (OpenAI, vLLM, llama.cpp's
//! server, Ollama's `/v1` endpoint): `data:` lines of `chat.completion.chunk`
//! JSON, closed by `data: [DONE]`.
//!
//! Text streams as parts as it comes; tool calls, whose argument fragments
//! arrive keyed by `index`, are emitted whole when the choice's
//! `finish_reason` arrives, in index order, before the finish part. The
//! answer is whole then: a usage-only chunk and `[DONE]` may follow, and
//! a body that ends without `[DONE]` is accepted, as the official SDKs do.
//! A `refusal` (streamed like text) ends the answer as a refusal, a
//! `content_filter` finish as a filtered one (with Azure's filter results
//! as the explanation). Only choice 0 is decoded; other choices (`n` > 1)
//! are skipped and counted.

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
    /// The provider's refusal, as streamed so far.
    refusal: String,
    /// The answer finished (its finish part was written).
    finished: bool,
}

impl Chat {
    pub(crate) fn is_terminal(raw: &Raw<'_>) -> bool {
        raw.data.trim() == "[DONE]"
    }

    pub(crate) fn event(&mut self, raw: &Raw<'_>, out: &mut Out<'_>) -> Result<Flow, DecodeError> {
        if Chat::is_terminal(raw) {
            return match self.finished {
                true => Ok(Flow::End),
                false => Err(raw.malformed("the stream closed without a `finish_reason`")),
            };
        }
        if raw.name != "message" && raw.name != "error" {
            out.unknown(raw.name);
            return Ok(self.flow());
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
        Ok(self.flow())
    }

    fn flow(&self) -> Flow {
        match self.finished {
            true => Flow::Finished,
            false => Flow::Continue,
        }
    }

    fn choice(
        &mut self,
        raw: &Raw<'_>,
        choice: &Value,
        out: &mut Out<'_>,
    ) -> Result<(), DecodeError> {
        let index = opt(choice, "index").map_or(Ok(0), |_| raw.u64(choice, "index"))?;
        if index != 0 {
            out.report.skip("choices.other");
            return Ok(());
        }
        if let Some(delta) = opt(choice, "delta") {
            self.delta(raw, delta, out)?;
        }
        if let Some(reason) = opt(choice, "finish_reason") {
            let reason = raw.as_str(reason, "finish_reason")?;
            if self.finished {
                // Some servers repeat it on the usage chunk: the first stands.
                return Ok(());
            }
            out.report.stop_reason = Some(reason.to_owned());
            self.finish(raw, reason, choice, out)?;
        }
        Ok(())
    }

    fn delta(
        &mut self,
        raw: &Raw<'_>,
        delta: &Value,
        out: &mut Out<'_>,
    ) -> Result<(), DecodeError> {
        let text = opt(delta, "content")
            .map(|t| raw.as_str(t, "delta.content"))
            .transpose()?;
        let refusal = opt(delta, "refusal")
            .map(|t| raw.as_str(t, "delta.refusal"))
            .transpose()?;
        let calls = opt(delta, "tool_calls");
        let adds = text.is_some_and(|t| !t.is_empty())
            || refusal.is_some_and(|t| !t.is_empty())
            || calls.is_some();
        if self.finished && adds {
            return Err(raw.malformed("content after the choice's `finish_reason`"));
        }
        out.text(text.unwrap_or(""));
        if let Some(refusal) = refusal {
            out.report.refuse(refusal);
            self.refusal.push_str(refusal);
        }
        for key in ["reasoning_content", "reasoning"] {
            if opt(delta, key).is_some() {
                out.report.skip(&format!("delta.{key}"));
            }
        }
        if let Some(calls) = calls {
            let calls = calls
                .as_array()
                .ok_or_else(|| raw.malformed("`delta.tool_calls` is not a list"))?;
            for call in calls {
                self.call_delta(raw, call)?;
            }
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

    /// The choice's `finish_reason`: the calls, the refusal's words, then
    /// the finish part. The answer is whole.
    fn finish(
        &mut self,
        raw: &Raw<'_>,
        reason: &str,
        choice: &Value,
        out: &mut Out<'_>,
    ) -> Result<(), DecodeError> {
        for (_, call) in std::mem::take(&mut self.calls) {
            if call.tool.is_empty() {
                return Err(raw.malformed(format!("tool call {} has no function name", call.id)));
            }
            out.parts.push(call.finish(raw.index)?);
        }
        let mut finish = finish_reason(reason);
        if finish == FinishReason::ContentFilter {
            self.refusal = filtered(choice);
        } else if !self.refusal.is_empty() {
            finish = FinishReason::Refusal;
        }
        if !self.refusal.is_empty() {
            out.parts
                .push(StreamPart::refusal(std::mem::take(&mut self.refusal)));
        }
        out.parts.push(StreamPart::Finish(finish));
        self.finished = true;
        Ok(())
    }

    /// A tool call still streaming, for a truncation error.
    pub(crate) fn open_call(&self) -> Option<String> {
        self.calls.values().next().map(PendingCall::label)
    }
}

/// The runtime's finish reason for a Chat Completions `finish_reason`; the
/// provider's own word stays in the report.
fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        _ => FinishReason::Stop,
    }
}

/// The categories a content filter withheld the answer for, as Azure's
/// `content_filter_results` name them (`hate (high)`), joined; empty when
/// the choice names none.
fn filtered(choice: &Value) -> String {
    let Some(Value::Object(results)) = opt(choice, "content_filter_results") else {
        return String::new();
    };
    let named: Vec<String> = results
        .iter()
        .filter(|(_, r)| r.get("filtered").and_then(Value::as_bool) == Some(true))
        .map(
            |(category, r)| match r.get("severity").and_then(Value::as_str) {
                Some(severity) => format!("{category} ({severity})"),
                None => category.clone(),
            },
        )
        .collect();
    named.join(", ")
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
    fn content_filter_is_its_own_finish_with_the_filters_as_its_words() {
        let body = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"content_filter\",\"content_filter_results\":{\"hate\":{\"filtered\":true,\"severity\":\"high\"},\"sexual\":{\"filtered\":false,\"severity\":\"safe\"},\"violence\":{\"filtered\":true}}}]}\n\ndata: [DONE]\n\n";
        let decoded = chat(body).unwrap();
        assert_eq!(
            decoded.parts,
            [
                StreamPart::refusal("hate (high), violence"),
                StreamPart::Finish(FinishReason::ContentFilter)
            ]
        );
        assert_eq!(
            decoded.report.stop_reason.as_deref(),
            Some("content_filter")
        );
    }

    /// SPEC S6: the official SDKs do not need `[DONE]` once the choice
    /// finished; a usage chunk may still come, content may not.
    #[test]
    fn s6_a_finished_answer_needs_no_done() {
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n";
        let decoded = chat(body).unwrap();
        assert_eq!(
            decoded.parts,
            [
                StreamPart::text("Hi"),
                StreamPart::Finish(FinishReason::Stop)
            ]
        );
        assert_eq!(decoded.report.usage.map(|u| u.output_tokens), Some(1));
        assert_eq!(decoded.report.notes.len(), 1, "{:?}", decoded.report.notes);
        let late = format!("{body}data: {{\"choices\":[{{\"delta\":{{\"content\":\"!\"}}}}]}}\n\n");
        assert!(matches!(
            chat(&late),
            Err(DecodeError::Malformed { event: 2, .. })
        ));
    }

    #[test]
    fn a_refusal_streams_beside_the_text_and_ends_the_answer() {
        let body = "data: {\"choices\":[{\"delta\":{\"content\":null,\"refusal\":\"I can't\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"refusal\":\" help.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        let decoded = chat(body).unwrap();
        assert_eq!(
            decoded.parts,
            [
                StreamPart::refusal("I can't help."),
                StreamPart::Finish(FinishReason::Refusal)
            ]
        );
    }

    #[test]
    fn other_choices_are_skipped_and_counted() {
        let body = "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"b\"}},{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\ndata: {\"choices\":[{\"index\":1,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        let decoded = chat(body).unwrap();
        assert_eq!(
            decoded.parts,
            [
                StreamPart::text("a"),
                StreamPart::Finish(FinishReason::Stop)
            ]
        );
        assert_eq!(decoded.report.skipped.get("choices.other"), Some(&2));
    }
}
