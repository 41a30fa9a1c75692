//! The bad-stream table: each body is an error (the same one however the
//! body is cut), never a panic and never parts silently lost; and unknown
//! events are skipped and counted.

use pai_providers::{Cut, DecodeError, Decoder, Format, decode};
use pai_runtime::StreamPart;

use crate::common::decode_cut;

const CHAT_TEXT: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n";
const CHAT_CALL: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\": \"}}]}}]}\n\n";
const CHAT_TOOL_FINISH: &str =
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
const CHAT_STOP: &str =
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
const DONE: &str = "data: [DONE]\n\n";

const ANT_START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n";
const ANT_TOOL: &str = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{}}}\n\n\
    event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\": [1, \"}}\n\n";
const ANT_STOP_BLOCK: &str =
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n";
const ANT_END: &str = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n\
    event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

const RESP_TEXT: &str = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"hi\"}\n\n";

/// One row: a format, a body, and what its error must be.
struct Case {
    name: &'static str,
    format: Format,
    body: Vec<u8>,
    expect: fn(&DecodeError) -> bool,
}

fn case(
    name: &'static str,
    format: Format,
    body: &[&str],
    expect: fn(&DecodeError) -> bool,
) -> Case {
    Case {
        name,
        format,
        body: body.concat().into_bytes(),
        expect,
    }
}

/// Chat Completions streams.
fn chat_cases() -> Vec<Case> {
    use DecodeError::*;
    use Format::*;
    vec![
        case(
            "chat cut between events",
            OpenAiChat,
            &[CHAT_TEXT, CHAT_TEXT],
            |e| {
                matches!(
                    e,
                    Truncated {
                        events: 2,
                        bytes: 116,
                        cut: Cut::BetweenEvents,
                        expected: "data: [DONE]",
                        open_call: None
                    }
                )
            },
        ),
        case(
            "chat cut mid-event",
            OpenAiChat,
            &[
                CHAT_TEXT,
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h",
            ],
            |e| {
                matches!(
                    e,
                    Truncated {
                        events: 1,
                        cut: Cut::MidEvent,
                        ..
                    }
                )
            },
        ),
        case(
            "chat truncated in a tool call",
            OpenAiChat,
            &[CHAT_CALL],
            |e| matches!(e, Truncated { open_call: Some(c), .. } if c == "call_1 (f)"),
        ),
        case(
            "chat [DONE] without its blank line and no finish",
            OpenAiChat,
            &[CHAT_TEXT, "data: [DONE]\n"],
            |e| {
                matches!(
                    e,
                    Truncated {
                        events: 1,
                        cut: Cut::MidEvent,
                        ..
                    }
                )
            },
        ),
        case("empty body", OpenAiChat, &[], |e| {
            matches!(e, Truncated { events: 0, .. })
        }),
        case(
            "chat malformed JSON",
            OpenAiChat,
            &[CHAT_TEXT, "data: {\"choices\": [\n\n", DONE],
            |e| matches!(e, Malformed { event: 1, .. }),
        ),
        case(
            "chat choices not a list",
            OpenAiChat,
            &["data: {\"choices\": 3}\n\n"],
            |e| matches!(e, Malformed { event: 0, .. }),
        ),
        case(
            "chat content after the finish",
            OpenAiChat,
            &[CHAT_STOP, CHAT_TEXT],
            |e| matches!(e, Malformed { event: 1, .. }),
        ),
        case(
            "chat [DONE] without a finish reason",
            OpenAiChat,
            &[CHAT_TEXT, DONE],
            |e| matches!(e, Malformed { event: 1, .. }),
        ),
        case(
            "chat arguments never close",
            OpenAiChat,
            &[CHAT_CALL, CHAT_TOOL_FINISH, DONE],
            |e| matches!(e, ToolArguments { event: 1, call_id, tool, .. } if call_id == "call_1" && tool == "f"),
        ),
        case(
            "chat event after [DONE]",
            OpenAiChat,
            &[CHAT_STOP, DONE, CHAT_TEXT],
            |e| matches!(e, AfterEnd { event: 2, .. }),
        ),
    ]
}

/// Anthropic and Responses streams.
fn event_cases() -> Vec<Case> {
    use DecodeError::*;
    use Format::*;
    vec![
        case(
            "anthropic arguments never close",
            Anthropic,
            &[ANT_START, ANT_TOOL, ANT_STOP_BLOCK, ANT_END],
            |e| matches!(e, ToolArguments { event: 3, call_id, .. } if call_id == "toolu_1"),
        ),
        case(
            "anthropic truncated in a tool call",
            Anthropic,
            &[ANT_START, ANT_TOOL],
            |e| matches!(e, Truncated { events: 3, expected: "message_stop", open_call: Some(c), cut: Cut::BetweenEvents, .. } if c == "toolu_1 (f)"),
        ),
        case(
            "anthropic delta for no block",
            Anthropic,
            &[
                ANT_START,
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":4,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
            ],
            |e| matches!(e, Malformed { event: 1, .. }),
        ),
        case("responses truncated", OpenAiResponses, &[RESP_TEXT], |e| {
            matches!(
                e,
                Truncated {
                    events: 1,
                    expected: "response.completed",
                    ..
                }
            )
        }),
    ]
}

/// Bodies that are not event streams.
fn body_cases() -> Vec<Case> {
    use DecodeError::*;
    use Format::*;
    vec![
        case(
            "responses arguments for no call",
            OpenAiResponses,
            &[
                "event: response.function_call_arguments.delta\ndata: {\"output_index\":2,\"delta\":\"{\"}\n\n",
            ],
            |e| matches!(e, Malformed { event: 0, .. }),
        ),
        case(
            "OpenAI error body",
            OpenAiChat,
            &[
                "{\"error\":{\"message\":\"Incorrect API key provided\",\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}\n",
            ],
            |e| matches!(e, ErrorBody { message, status: Some(401) } if message == "Incorrect API key provided"),
        ),
        case(
            "Anthropic error body",
            Anthropic,
            &[
                "\n{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}",
            ],
            |e| matches!(e, ErrorBody { message, status: Some(401) } if message == "invalid x-api-key"),
        ),
        case(
            "Ollama error body",
            OpenAiChat,
            &["{\"error\":\"model \\\"llama9\\\" not found\"}"],
            |e| matches!(e, ErrorBody { message, status: None } if message == "model \"llama9\" not found"),
        ),
        case(
            "vLLM error body",
            OpenAiResponses,
            &[
                "{\"object\":\"error\",\"message\":\"max_tokens is too large\",\"type\":\"BadRequestError\",\"code\":400}",
            ],
            |e| matches!(e, ErrorBody { message, status: Some(400) } if message == "max_tokens is too large"),
        ),
        case(
            "a body that starts like JSON but is not",
            OpenAiChat,
            &["{\"error\": oops"],
            |e| matches!(e, NotAStream { .. }),
        ),
        case(
            "an HTML error page",
            Anthropic,
            &["<html><body>502 Bad Gateway</body></html>\n"],
            |e| matches!(e, Truncated { events: 0, .. }),
        ),
    ]
}

fn table() -> Vec<Case> {
    use DecodeError::InvalidUtf8;
    use Format::*;
    let mut cases: Vec<Case> = [chat_cases(), event_cases(), body_cases()]
        .into_iter()
        .flatten()
        .collect();
    // Bytes that are not UTF-8: a stray byte, and a character cut by the end.
    let mut stray = CHAT_TEXT.as_bytes().to_vec();
    stray.insert(46, 0xff);
    cases.push(Case {
        name: "a stray byte",
        format: OpenAiChat,
        body: stray,
        expect: |e| matches!(e, InvalidUtf8 { offset: 46 }),
    });
    // The cut character starts right after CHAT_STOP, 67 bytes in.
    assert_eq!(CHAT_STOP.len(), 67);
    let mut cut = CHAT_STOP.as_bytes().to_vec();
    cut.extend_from_slice(&"€".as_bytes()[..2]);
    cases.push(Case {
        name: "a cut character",
        format: OpenAiChat,
        body: cut,
        expect: |e| matches!(e, InvalidUtf8 { offset: 67 }),
    });
    cases
}

#[test]
fn bad_streams_are_errors_at_every_split() {
    for case in table() {
        let whole = decode(case.format, &case.body);
        let Err(error) = &whole else {
            panic!("{}: decoded: {whole:?}", case.name);
        };
        assert!((case.expect)(error), "{}: {error:?}", case.name);
        for cut in 0..=case.body.len() {
            let split = decode_cut(case.format, &case.body, &[cut]);
            assert_eq!(
                split.as_ref().err(),
                Some(error),
                "{} cut at {cut}",
                case.name
            );
        }
        let bytes: Vec<usize> = (1..case.body.len()).collect();
        assert_eq!(
            decode_cut(case.format, &case.body, &bytes).err().as_ref(),
            Some(error),
            "{}",
            case.name
        );
    }
}

#[test]
fn unknown_events_are_skipped_and_counted() {
    let mut decoder = Decoder::new(Format::Anthropic);
    let mut parts = Vec::new();
    let unknown = "event: content_block_flourish\ndata: {\"type\":\"content_block_flourish\"}\n\n";
    decoder.feed(ANT_START.as_bytes(), &mut parts).unwrap();
    decoder.feed(unknown.as_bytes(), &mut parts).unwrap();
    decoder.feed(unknown.as_bytes(), &mut parts).unwrap();
    // Observable while the stream goes on.
    assert_eq!(decoder.report().skipped_total(), 2);
    decoder
        .feed(
            b"event: message_delta\ndata: {\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n",
            &mut parts,
        )
        .unwrap();
    decoder
        .feed(b"event: message_stop\ndata: {}\n\n", &mut parts)
        .unwrap();
    let report = decoder.finish().unwrap();
    assert_eq!(report.skipped.get("content_block_flourish"), Some(&2));
    assert_eq!(
        parts,
        [StreamPart::Finish(pai_runtime::model::FinishReason::Stop)]
    );
}

#[test]
fn a_failed_decoder_keeps_failing() {
    let mut decoder = Decoder::new(Format::OpenAiChat);
    let mut parts = Vec::new();
    let error = decoder.feed(b"data: nope\n\n", &mut parts).unwrap_err();
    assert_eq!(
        decoder.feed(CHAT_STOP.as_bytes(), &mut parts),
        Err(error.clone())
    );
    assert_eq!(decoder.finish(), Err(error));
    assert!(parts.is_empty());
}
