//! The OpenAI Responses API stream: typed events (`event:` names the type,
//! and so does the data's `type`), closed by `response.completed`,
//! `response.incomplete` or `response.failed`.
//!
//! Text deltas become parts as they come; a function call opens with
//! `response.output_item.added`, streams its arguments by `output_index`
//! and is emitted whole at its `response.output_item.done`. Each message
//! item is a text part of its own: a second one starts after a
//! [`StreamPart::TextEnd`] (SPEC S6: several output items are kept apart,
//! not glued). A `refusal` content part ends the answer as a refusal with
//! its words; an `incomplete` response filtered by the provider, as a
//! filtered one. What the stream says twice (each item whole at its
//! `output_item.done`, the whole output at `response.completed`) is
//! compared with what the deltas assembled; a difference is a note in the
//! report (`said.rs`).

mod said;

use std::collections::BTreeMap;

use pai_runtime::{StreamPart, model::FinishReason};
use serde_json::Value;

use crate::body::error_message;
use crate::calls::PendingCall;
use crate::error::DecodeError;
use crate::event::{Flow, Out, Raw, opt};
use said::Said;

/// The terminal event, as truncation errors name it.
pub(crate) const TERMINAL: &str = "response.completed";

/// Events that carry nothing the parts or the report need.
const IGNORED: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.done",
    "response.function_call_arguments.done",
    "response.refusal.done",
];

/// The decoder's state between events.
#[derive(Debug, Default)]
pub(crate) struct Responses {
    calls: BTreeMap<u64, PendingCall>,
    made_calls: bool,
    /// Text streamed since the last item boundary.
    text_open: bool,
    /// The refusal's words, as streamed.
    refusal: String,
    /// What the deltas assembled, to compare with what the stream says
    /// whole.
    said: Said,
}

impl Responses {
    /// The event's type: the `event:` field, or the data's `type`.
    fn name<'r>(raw: &Raw<'r>, data: &'r Value) -> &'r str {
        match raw.name {
            "message" => data
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("message"),
            name => name,
        }
    }

    pub(crate) fn is_terminal(raw: &Raw<'_>) -> bool {
        let data = raw.json().unwrap_or(Value::Null);
        matches!(
            Responses::name(raw, &data),
            "response.completed" | "response.incomplete" | "response.failed"
        )
    }

    pub(crate) fn event(&mut self, raw: &Raw<'_>, out: &mut Out<'_>) -> Result<Flow, DecodeError> {
        let data = raw.json()?;
        let name = Responses::name(raw, &data);
        let raw = &Raw { name, ..*raw };
        match name {
            "response.output_text.delta" => {
                let delta = raw.str(&data, "delta")?;
                self.said.text(opt(&data, "output_index"), delta);
                self.text_open |= !delta.is_empty();
                out.text(delta);
            }
            "response.refusal.delta" => {
                let delta = raw.str(&data, "delta")?;
                out.report.refuse(delta);
                self.refusal.push_str(delta);
                self.said.refusal(opt(&data, "output_index"), delta);
            }
            "response.output_item.added" => self.item_added(raw, &data, out)?,
            "response.function_call_arguments.delta" => {
                let index = raw.u64(&data, "output_index")?;
                let call = self.calls.get_mut(&index).ok_or_else(|| {
                    raw.malformed(format!("no function call is open at output {index}"))
                })?;
                call.arguments.push_str(raw.str(&data, "delta")?);
            }
            "response.output_item.done" => self.item_done(raw, &data, out)?,
            "response.completed" | "response.incomplete" => return self.end(raw, &data, out),
            "response.failed" => {
                let message = opt(&data, "response.error.message").and_then(Value::as_str);
                out.parts
                    .push(StreamPart::error(message.unwrap_or("the response failed")));
                out.report.stop_reason = Some("failed".to_owned());
                return Ok(Flow::End);
            }
            "error" => {
                let message = error_message(&data).unwrap_or_else(|| data.to_string());
                out.parts.push(StreamPart::error(message));
                return Ok(Flow::Failed);
            }
            _ if IGNORED.contains(&name) => {}
            _ => out.unknown(name),
        }
        Ok(Flow::Continue)
    }

    fn item_added(
        &mut self,
        raw: &Raw<'_>,
        data: &Value,
        out: &mut Out<'_>,
    ) -> Result<(), DecodeError> {
        let item = raw.at(data, "item")?;
        let index = raw.u64(data, "output_index")?;
        match raw.str(item, "type")? {
            "message" => {
                // A second message: its text is a part of its own.
                if std::mem::take(&mut self.text_open) {
                    out.parts.push(StreamPart::TextEnd);
                }
                self.said.message(index);
            }
            "function_call" => {
                let call = PendingCall::new(
                    raw.str(item, "call_id")?,
                    raw.str(item, "name")?,
                    opt(item, "arguments").and_then(Value::as_str).unwrap_or(""),
                );
                self.calls.insert(index, call);
            }
            other => out.report.skip(&format!("item.{other}")),
        }
        Ok(())
    }

    fn item_done(
        &mut self,
        raw: &Raw<'_>,
        data: &Value,
        out: &mut Out<'_>,
    ) -> Result<(), DecodeError> {
        let item = raw.at(data, "item")?;
        let index = raw.u64(data, "output_index")?;
        match raw.str(item, "type")? {
            "message" => {
                let whole = said::message(raw, item)?;
                // Text the deltas never streamed is read from the item, as
                // the SDK reads it; what they did stream is compared.
                if let Some(text) = self.said.unstreamed(index, &whole) {
                    self.text_open |= !text.is_empty();
                    out.text(&text);
                }
                if self.refusal.is_empty() && !whole.refusal.is_empty() {
                    out.report.refuse(&whole.refusal);
                    self.refusal.push_str(&whole.refusal);
                }
                self.said.compare_message(raw, index, &whole, out.report);
                Ok(())
            }
            "function_call" => self.call_done(raw, index, item, out),
            _ => Ok(()),
        }
    }

    fn call_done(
        &mut self,
        raw: &Raw<'_>,
        index: u64,
        item: &Value,
        out: &mut Out<'_>,
    ) -> Result<(), DecodeError> {
        let mut call = self
            .calls
            .remove(&index)
            .ok_or_else(|| raw.malformed(format!("no function call is open at output {index}")))?;
        if let Some(whole) = opt(item, "arguments").and_then(Value::as_str) {
            if call.arguments.is_empty() {
                call.arguments.push_str(whole);
            } else if call.arguments != whole {
                // A call must not run on input the stream is unsure of.
                return Err(raw.malformed(format!(
                    "the arguments of {} differ from the fragments streamed",
                    call.label()
                )));
            }
        }
        self.said.call(index, &call);
        out.parts.push(call.finish(raw.index)?);
        self.made_calls = true;
        Ok(())
    }

    /// `response.completed` or `response.incomplete`: its output compared
    /// with what streamed, usage, the refusal's words, then the finish.
    fn end(&mut self, raw: &Raw<'_>, data: &Value, out: &mut Out<'_>) -> Result<Flow, DecodeError> {
        if let Some(call) = self.open_call() {
            return Err(raw.malformed(format!("tool call {call} never closed")));
        }
        if let Some(output) = opt(data, "response.output") {
            self.said.compare_output(raw, output, out.report)?;
        }
        if let Some(usage) = opt(data, "response.usage") {
            out.report.usage = raw.usage(usage, "input_tokens", "output_tokens")?;
        }
        let (mut finish, reason) = if raw.name == "response.incomplete" {
            let reason = opt(data, "response.incomplete_details.reason")
                .and_then(Value::as_str)
                .unwrap_or("incomplete");
            let finish = match reason {
                "max_output_tokens" => FinishReason::Length,
                "content_filter" => FinishReason::ContentFilter,
                _ => FinishReason::Stop,
            };
            (finish, reason)
        } else if self.made_calls {
            (FinishReason::ToolCalls, "completed")
        } else {
            (FinishReason::Stop, "completed")
        };
        if !self.refusal.is_empty() && finish != FinishReason::ContentFilter {
            finish = FinishReason::Refusal;
        }
        if !self.refusal.is_empty() {
            out.parts
                .push(StreamPart::refusal(std::mem::take(&mut self.refusal)));
        }
        out.report.stop_reason = Some(reason.to_owned());
        out.parts.push(StreamPart::Finish(finish));
        Ok(Flow::End)
    }

    /// A tool call still streaming, for a truncation error.
    pub(crate) fn open_call(&self) -> Option<String> {
        self.calls.values().next().map(PendingCall::label)
    }
}

#[cfg(test)]
mod tests {
    use pai_runtime::StreamPart;

    use crate::{DecodeError, Format, decode};

    fn event(name: &str, data: &str) -> String {
        format!("event: {name}\ndata: {data}\n\n")
    }

    const ADDED: &str = r#"{"output_index":0,"item":{"type":"function_call","call_id":"c","name":"f","arguments":""}}"#;

    #[test]
    fn arguments_that_differ_from_the_fragments_are_malformed() {
        let body = [
            event("response.output_item.added", ADDED),
            event(
                "response.function_call_arguments.delta",
                r#"{"output_index":0,"delta":"{}"}"#,
            ),
            event(
                "response.output_item.done",
                r#"{"output_index":0,"item":{"type":"function_call","arguments":"{\"a\":1}"}}"#,
            ),
        ]
        .concat();
        let result = decode(Format::OpenAiResponses, body.as_bytes());
        assert!(
            matches!(result, Err(DecodeError::Malformed { event: 2, .. })),
            "{result:?}"
        );
    }

    #[test]
    fn a_failed_response_is_an_error_part() {
        let body = event(
            "response.failed",
            r#"{"response":{"error":{"code":"x","message":"boom"}}}"#,
        );
        let decoded = decode(Format::OpenAiResponses, body.as_bytes()).unwrap();
        assert_eq!(decoded.parts, [StreamPart::error("boom")]);
        assert_eq!(decoded.report.stop_reason.as_deref(), Some("failed"));
    }

    #[test]
    fn completion_with_a_call_still_open_is_malformed() {
        let body = [
            event("response.output_item.added", ADDED),
            event("response.completed", "{}"),
        ]
        .concat();
        let result = decode(Format::OpenAiResponses, body.as_bytes());
        assert!(
            matches!(result, Err(DecodeError::Malformed { event: 1, .. })),
            "{result:?}"
        );
    }

    /// A message item whose text no delta streamed is read from its done
    /// event, as the SDK reads it; a call the final output holds but the
    /// stream never gave is a note (SPEC S6).
    #[test]
    fn s6_text_only_in_the_done_event_is_read_and_a_missing_call_noted() {
        let item = r#"{"type":"message","content":[{"type":"output_text","text":"Hi there"}]}"#;
        let call = r#"{"type":"function_call","call_id":"c9","name":"f","arguments":"{}"}"#;
        let body = [
            event(
                "response.output_item.added",
                r#"{"output_index":0,"item":{"type":"message","content":[]}}"#,
            ),
            event(
                "response.output_item.done",
                &format!(r#"{{"output_index":0,"item":{item}}}"#),
            ),
            event(
                "response.completed",
                &format!(r#"{{"response":{{"status":"completed","output":[{item},{call}]}}}}"#),
            ),
        ]
        .concat();
        let decoded = decode(Format::OpenAiResponses, body.as_bytes()).unwrap();
        assert_eq!(
            decoded.parts,
            [
                StreamPart::text("Hi there"),
                StreamPart::Finish(pai_runtime::model::FinishReason::Stop)
            ]
        );
        assert_eq!(
            decoded.report.notes,
            ["event 2: response.output[1] is a call c9 (f) that never streamed"]
        );
    }

    /// Two message items are two texts: a `TextEnd` between them (S6).
    #[test]
    fn s6_a_second_message_item_starts_a_text_of_its_own() {
        let added = |i: u64| {
            event(
                "response.output_item.added",
                &format!(r#"{{"output_index":{i},"item":{{"type":"message","content":[]}}}}"#),
            )
        };
        let delta = |i: u64, t: &str| {
            event(
                "response.output_text.delta",
                &format!(r#"{{"output_index":{i},"delta":"{t}"}}"#),
            )
        };
        let body = [
            added(0),
            delta(0, "a"),
            added(1),
            delta(1, "b"),
            event("response.completed", "{}"),
        ]
        .concat();
        let decoded = decode(Format::OpenAiResponses, body.as_bytes()).unwrap();
        assert_eq!(
            decoded.parts,
            [
                StreamPart::text("a"),
                StreamPart::TextEnd,
                StreamPart::text("b"),
                StreamPart::Finish(pai_runtime::model::FinishReason::Stop)
            ]
        );
    }
}
