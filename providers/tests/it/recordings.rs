//! Each recording decodes to the parts and report written here.

use pai_providers::{Cut, DecodeError, Format, StreamReport, Usage, decode};
use pai_runtime::{StreamPart, model::FinishReason};
use serde_json::json;

use crate::common::{recording, recordings};

fn text(s: &str) -> StreamPart {
    StreamPart::text(s)
}

fn finish(reason: FinishReason) -> StreamPart {
    StreamPart::Finish(reason)
}

fn usage(input_tokens: u64, output_tokens: u64) -> Option<Usage> {
    Some(Usage {
        input_tokens,
        output_tokens,
    })
}

/// Decodes a recording, checks its parts, returns its report.
fn check(format: Format, name: &str, expected: &[StreamPart]) -> StreamReport {
    let decoded = decode(format, &recording(format, name))
        .unwrap_or_else(|e| panic!("{}/{name}: {e}", format.as_str()));
    assert_eq!(decoded.parts, expected, "{}/{name}", format.as_str());
    decoded.report
}

/// Every recording decodes, but the cut ones, which are cut streams.
#[test]
fn every_recording_decodes() {
    let all = recordings();
    assert!(all.len() >= 20, "{} recordings", all.len());
    for (format, name, body) in all {
        match (decode(format, &body), name.starts_with("cut-")) {
            (Ok(_), false) | (Err(DecodeError::Truncated { .. }), true) => {}
            (other, _) => panic!("{}/{name}: {other:?}", format.as_str()),
        }
    }
}

#[test]
fn openai_chat_text_multibyte() {
    let parts = [
        text("Hé"),
        text("llo 👋🏽 "),
        text("世界"),
        text("! Ça va?"),
        finish(FinishReason::Stop),
    ];
    let report = check(Format::OpenAiChat, "text-multibyte.sse", &parts);
    assert_eq!(report.usage, usage(12, 9));
    assert_eq!(report.stop_reason.as_deref(), Some("stop"));
    assert_eq!(report.skipped_total(), 0);
}

#[test]
fn openai_chat_tool_calls_split() {
    let parts = [
        StreamPart::tool_call(
            "call_weather",
            "get_weather",
            json!({"city": "Zürich", "unit": "°C"}),
        ),
        StreamPart::tool_call("call_time", "get_time", json!({"tz": "Europe/Zurich"})),
        finish(FinishReason::ToolCalls),
    ];
    let report = check(Format::OpenAiChat, "tool-calls-split.sse", &parts);
    assert_eq!(report.usage, usage(40, 31));
}

#[test]
fn openai_chat_midstream_error() {
    let parts = [
        text("Let me th"),
        text("ink… "),
        StreamPart::error("The server had an error while processing your request."),
    ];
    check(Format::OpenAiChat, "midstream-error.sse", &parts);
}

#[test]
fn openai_chat_llamacpp_crlf() {
    let parts = [
        text("こんにちは"),
        text("、元気"),
        finish(FinishReason::Length),
    ];
    let report = check(Format::OpenAiChat, "llamacpp-crlf.sse", &parts);
    assert_eq!(report.usage, usage(5, 4));
    assert_eq!(report.skipped.get("delta.reasoning_content"), Some(&1));
}

#[test]
fn openai_chat_refusal() {
    let report = check(
        Format::OpenAiChat,
        "refusal.sse",
        &[
            StreamPart::refusal("I can't help with that."),
            finish(FinishReason::Refusal),
        ],
    );
    assert_eq!(report.refusal.as_deref(), Some("I can't help with that."));
}

#[test]
fn openai_responses_text_multibyte() {
    let parts = [
        text("Grüß"),
        text(" dich 🇨🇭"),
        text(" — 你好"),
        finish(FinishReason::Stop),
    ];
    let report = check(Format::OpenAiResponses, "text-multibyte.sse", &parts);
    assert_eq!(report.usage, usage(8, 11));
    assert_eq!(report.stop_reason.as_deref(), Some("completed"));
    assert_eq!(report.skipped_total(), 0);
}

#[test]
fn openai_responses_function_call_split() {
    let parts = [
        StreamPart::tool_call(
            "call_abc",
            "get_weather",
            json!({"city": "São Paulo", "days": 3}),
        ),
        finish(FinishReason::ToolCalls),
    ];
    let report = check(Format::OpenAiResponses, "function-call-split.sse", &parts);
    assert_eq!(report.usage, usage(30, 22));
    // The reasoning summary is an event type the decoder skips, counted.
    assert_eq!(
        report.skipped.get("response.reasoning_summary_text.delta"),
        Some(&1)
    );
}

#[test]
fn openai_responses_midstream_error() {
    let parts = [
        text("Partial ünïcödé"),
        StreamPart::error("The model produced invalid content."),
    ];
    check(Format::OpenAiResponses, "midstream-error.sse", &parts);
}

#[test]
fn openai_responses_incomplete_length() {
    let parts = [text("Once upon a ti"), finish(FinishReason::Length)];
    let report = check(Format::OpenAiResponses, "incomplete-length.sse", &parts);
    assert_eq!(report.stop_reason.as_deref(), Some("max_output_tokens"));
    assert_eq!(report.usage, usage(5, 4));
}

#[test]
fn anthropic_text_multibyte() {
    let parts = [
        text("Ελληνικά"),
        text(" και 日本語 "),
        text("🧑‍💻!"),
        finish(FinishReason::Stop),
    ];
    let report = check(Format::Anthropic, "text-multibyte.sse", &parts);
    assert_eq!(report.usage, usage(25, 15));
    assert_eq!(report.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(report.skipped_total(), 0);
}

#[test]
fn anthropic_tool_use_split() {
    let parts = [
        text("Checking the weather…"),
        StreamPart::tool_call(
            "toolu_01",
            "get_weather",
            json!({"location": "Kraków", "unit": "celsius", "tags": ["🌧"]}),
        ),
        finish(FinishReason::ToolCalls),
    ];
    let report = check(Format::Anthropic, "tool-use-split.sse", &parts);
    assert_eq!(report.usage, usage(25, 58));
}

#[test]
fn anthropic_overloaded_error() {
    let parts = [text("Über"), StreamPart::error("Overloaded")];
    check(Format::Anthropic, "overloaded-error.sse", &parts);
}

#[test]
fn anthropic_thinking_max_tokens() {
    let parts = [text("1, 2, "), text("3, 4"), finish(FinishReason::Length)];
    let report = check(Format::Anthropic, "thinking-max-tokens.sse", &parts);
    assert_eq!(report.skipped.get("content_block.thinking"), Some(&1));
    assert_eq!(report.skipped.get("delta.thinking_delta"), Some(&1));
    assert_eq!(report.skipped.get("delta.signature_delta"), Some(&1));
    assert_eq!(report.skipped_total(), 3);
}

/// SPEC S6: programmatic tool calling's `message_start` holds the call.
#[test]
fn anthropic_message_start_content() {
    let parts = [
        StreamPart::tool_call(
            "toolu_01Pre",
            "get_weather",
            json!({"location": "Zürich", "unit": "celsius"}),
        ),
        finish(FinishReason::ToolCalls),
    ];
    let report = check(Format::Anthropic, "message-start-content.sse", &parts);
    assert_eq!(report.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(report.kinds().get("server tools"), Some(&1));
}

/// SPEC S6: a refusal keeps the text before it and ends with its words.
#[test]
fn anthropic_refusal() {
    let words = "This request triggered restrictions on violative cyber content (ticket ab-1234-cd) and was blocked under the Usage Policy.";
    let parts = [
        text("Sure — the first step is "),
        StreamPart::refusal(words),
        finish(FinishReason::Refusal),
    ];
    let report = check(Format::Anthropic, "refusal.sse", &parts);
    assert_eq!(report.refusal.as_deref(), Some(words));
}

/// SPEC S6: a body cut inside an event is a cut stream, located.
#[test]
fn anthropic_cut_mid_event() {
    let body = recording(Format::Anthropic, "cut-mid-event.sse");
    let e = decode(Format::Anthropic, &body).unwrap_err();
    assert_eq!(
        e,
        DecodeError::Truncated {
            events: 6,
            bytes: body.len() as u64,
            cut: Cut::MidEvent,
            expected: "message_stop",
            open_call: Some("toolu_01 (get_weather)".into()),
        }
    );
}

#[test]
fn openai_chat_content_filter() {
    let parts = [
        text("The story goes on: "),
        StreamPart::refusal("violence (high)"),
        finish(FinishReason::ContentFilter),
    ];
    let report = check(Format::OpenAiChat, "content-filter.sse", &parts);
    assert_eq!(report.stop_reason.as_deref(), Some("content_filter"));
    assert_eq!(report.usage, usage(31, 6));
}

/// SPEC S6: no `[DONE]` after the finish and the usage chunk.
#[test]
fn openai_chat_no_done() {
    let parts = [
        text("Bonjour"),
        text(", ça va ?"),
        finish(FinishReason::Stop),
    ];
    let report = check(Format::OpenAiChat, "no-done.sse", &parts);
    assert_eq!(report.usage, usage(9, 5));
    assert_eq!(
        report.notes,
        ["the body ended after the finish without data: [DONE]"]
    );
}

#[test]
fn openai_chat_cut_between_events() {
    let body = recording(Format::OpenAiChat, "cut-between-events.sse");
    let e = decode(Format::OpenAiChat, &body).unwrap_err();
    assert!(
        matches!(
            e,
            DecodeError::Truncated {
                events: 3,
                cut: Cut::BetweenEvents,
                open_call: None,
                ..
            }
        ),
        "{e:?}"
    );
}

/// SPEC S6: two message items are two texts, not one glued.
#[test]
fn openai_responses_two_messages() {
    let parts = [
        text("Got it — "),
        text("checking today's headlines."),
        StreamPart::TextEnd,
        text("Here are a few: "),
        text("models shipped, chips sold."),
        finish(FinishReason::Stop),
    ];
    let report = check(Format::OpenAiResponses, "two-messages.sse", &parts);
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    assert_eq!(report.kinds().get("citations"), Some(&1));
    assert_eq!(report.kinds().get("server tools"), Some(&1));
}

#[test]
fn openai_responses_refusal() {
    let parts = [
        StreamPart::refusal("I'm sorry, I can't help with that."),
        finish(FinishReason::Refusal),
    ];
    let report = check(Format::OpenAiResponses, "refusal.sse", &parts);
    assert_eq!(
        report.refusal.as_deref(),
        Some("I'm sorry, I can't help with that.")
    );
}
