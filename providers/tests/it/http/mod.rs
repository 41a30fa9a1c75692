//! `HttpModel` against a local server (`server.rs`) replaying the
//! recordings with chosen chunking and delays, and failing on purpose: an
//! error status, a cut connection, a stall past the idle timeout, no
//! headers in time, a refused connection. Also the request bodies the
//! model sent, and the recording proxy (`record.rs`) between a client and
//! that server. Nothing here reaches the network.

mod bodies;
#[cfg(feature = "record")]
mod record;
mod runtime;
mod server;

use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pai_providers::{Format, HttpConfig, HttpError, HttpModel, StreamReport, decode};
use pai_runtime::{
    LanguageModel, ModelError, ModelRequest, StreamPart,
    message::ModelMessage,
    model::{BoxStream, Route},
};

use crate::common::recording;
use server::{End, Reply, Server};

const MS: Duration = Duration::from_millis(1);

/// A model for `server` in `format`, with short timeouts.
fn model(server: &Server, format: Format) -> HttpModel {
    HttpModel::new(config(server, format)).unwrap()
}

fn config(server: &Server, format: Format) -> HttpConfig {
    HttpConfig::new(format, &server.base_url, "test-model")
        .api_key(Some("sk-test".into()))
        .first_byte_timeout(Duration::from_secs(2))
        .idle_timeout(Duration::from_millis(300))
}

fn ask(text: &str) -> ModelRequest {
    ModelRequest::new(
        Route::new("m"),
        "Be brief.",
        vec![ModelMessage::user(text)],
        vec![],
    )
}

/// Every part of a stream, in order.
async fn collect(mut stream: BoxStream) -> Vec<StreamPart> {
    let mut parts = Vec::new();
    while let Some(part) = poll_fn(|cx| stream.poll_next(cx)).await {
        parts.push(part);
    }
    parts
}

/// The parts of a recording decoded whole.
fn expected(format: Format, name: &str) -> Vec<StreamPart> {
    decode(format, &recording(format, name)).unwrap().parts
}

fn error_text(parts: &[StreamPart]) -> &str {
    match parts.last() {
        Some(StreamPart::Error(e)) => e,
        other => panic!("the stream should end with an error, not {other:?}"),
    }
}

#[tokio::test]
async fn text_cut_inside_characters_streams_the_recordings_parts() {
    let body = recording(Format::OpenAiChat, "text-multibyte.sse");
    let server = Server::start(vec![Reply::stream(&body, 5, MS, End::Finish)]).await;
    let reports: Arc<Mutex<Vec<StreamReport>>> = Arc::default();
    let sink = reports.clone();
    let config = config(&server, Format::OpenAiChat)
        .on_report(move |r| sink.lock().unwrap().push(r.clone()));
    let model = HttpModel::new(config).unwrap();
    let stream = model.stream(&ask("hi")).await.unwrap();
    let parts = collect(stream).await;
    assert_eq!(parts, expected(Format::OpenAiChat, "text-multibyte.sse"));
    let whole = decode(Format::OpenAiChat, &body).unwrap().report;
    assert_eq!(*reports.lock().unwrap(), [whole]);
}

#[tokio::test]
async fn tool_calls_with_split_arguments_arrive_whole() {
    let body = recording(Format::OpenAiChat, "tool-calls-split.sse");
    let server = Server::start(vec![Reply::stream(&body, 3, Duration::ZERO, End::Finish)]).await;
    let stream = model(&server, Format::OpenAiChat)
        .stream(&ask("weather?"))
        .await
        .unwrap();
    let parts = collect(stream).await;
    assert_eq!(parts, expected(Format::OpenAiChat, "tool-calls-split.sse"));
    assert!(parts.iter().any(|p| matches!(p, StreamPart::ToolCall(_))));
}

#[tokio::test]
async fn every_format_streams_its_recordings() {
    for (format, name) in [
        (Format::OpenAiResponses, "function-call-split.sse"),
        (Format::OpenAiResponses, "text-multibyte.sse"),
        (Format::Anthropic, "tool-use-split.sse"),
        (Format::Anthropic, "text-multibyte.sse"),
        (Format::OpenAiChat, "llamacpp-crlf.sse"),
    ] {
        let body = recording(format, name);
        let server = Server::start(vec![Reply::stream(&body, 7, MS, End::Finish)]).await;
        let stream = model(&server, format).stream(&ask("q")).await.unwrap();
        assert_eq!(collect(stream).await, expected(format, name), "{name}");
        let path = match format {
            Format::OpenAiChat => "/v1/chat/completions",
            Format::OpenAiResponses => "/v1/responses",
            Format::Anthropic => "/v1/messages",
        };
        assert_eq!(server.received()[0].path, path);
    }
}

#[tokio::test]
async fn status_500_is_a_failed_attempt_naming_the_providers_message() {
    let error = r#"{"error":{"message":"The server had an error","type":"server_error"}}"#;
    let server = Server::start(vec![Reply::json(500, error), Reply::json(500, error)]).await;
    let model = model(&server, Format::OpenAiChat);
    let Err(failed) = model.start(&ask("hi")).await else {
        panic!("a 500 is no stream");
    };
    assert_eq!(
        failed,
        HttpError::Status {
            status: 500,
            message: "The server had an error".into()
        }
    );
    assert!(failed.is_transient());
    let Err(seen) = model.stream(&ask("hi")).await else {
        panic!("a 500 is no stream");
    };
    assert_eq!(
        seen,
        ModelError::Http {
            status: Some(500),
            retryable: true,
            message: "The server had an error".into()
        }
    );
    assert_eq!(
        seen.to_string(),
        "provider error: HTTP 500: The server had an error"
    );
    // Sent once each: the provider never retries.
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn a_json_body_with_status_200_is_a_failed_attempt() {
    let server = Server::start(vec![Reply::json(200, r#"{"error":"model not loaded"}"#)]).await;
    let Err(failed) = model(&server, Format::OpenAiChat).start(&ask("hi")).await else {
        panic!("a JSON body is no stream");
    };
    assert_eq!(
        failed,
        HttpError::NotAStream {
            content_type: "application/json".into(),
            message: "model not loaded".into()
        }
    );
}

#[tokio::test]
async fn a_connection_cut_mid_stream_ends_it_with_an_error_part() {
    let body = recording(Format::OpenAiChat, "text-multibyte.sse");
    let half = body.len() / 2;
    let server = Server::start(vec![Reply::stream(&body[..half], 10, MS, End::Cut)]).await;
    let stream = model(&server, Format::OpenAiChat)
        .stream(&ask("hi"))
        .await
        .unwrap();
    let parts = collect(stream).await;
    assert!(
        matches!(parts[0], StreamPart::TextDelta(_)),
        "the text before the cut arrives: {parts:?}"
    );
    let error = error_text(&parts);
    assert!(
        error.starts_with("the connection failed mid-stream"),
        "{error}"
    );
    assert!(error.contains("; the stream was cut after"), "{error}");
    assert!(error.contains("mid-event"), "{error}");
}

#[tokio::test]
async fn a_body_ending_early_is_a_truncated_stream() {
    let body = recording(Format::Anthropic, "tool-use-split.sse");
    let cut = &body[..body.len() * 2 / 3];
    let server = Server::start(vec![Reply::stream(cut, 64, MS, End::Finish)]).await;
    let stream = model(&server, Format::Anthropic)
        .stream(&ask("q"))
        .await
        .unwrap();
    let parts = collect(stream).await;
    let error = error_text(&parts);
    assert!(error.contains("without message_stop"), "{error}");
    assert!(error.contains("the stream was cut after"), "{error}");
}

#[tokio::test]
async fn a_stall_past_the_idle_timeout_ends_the_stream() {
    let body = recording(Format::OpenAiChat, "text-multibyte.sse");
    let half = body.len() / 2;
    let server = Server::start(vec![Reply::stream(&body[..half], 16, MS, End::Stall)]).await;
    let started = tokio::time::Instant::now();
    let stream = model(&server, Format::OpenAiChat)
        .stream(&ask("hi"))
        .await
        .unwrap();
    let parts = collect(stream).await;
    assert_eq!(error_text(&parts), "the stream stalled: no bytes for 300ms");
    assert!(started.elapsed() >= Duration::from_millis(300));
    // The stream's end dropped the response: the server sees the hang-up.
    assert!(server.dropped(1).await, "the connection was closed");
}

#[tokio::test]
async fn no_headers_within_the_first_byte_timeout_is_a_timeout() {
    let server = Server::start(vec![Reply::Whole {
        status: 200,
        content_type: "text/event-stream",
        body: String::new(),
        wait: Duration::from_secs(3),
    }])
    .await;
    let config = config(&server, Format::OpenAiChat).first_byte_timeout(Duration::from_millis(200));
    let model = HttpModel::new(config).unwrap();
    let Err(error) = model.stream(&ask("hi")).await else {
        panic!("no headers is no stream");
    };
    assert_eq!(error, ModelError::Timeout(200));
}

#[tokio::test]
async fn a_refused_connection_is_a_failed_attempt() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let config = HttpConfig::new(Format::OpenAiChat, format!("http://{addr}/v1"), "m");
    let Err(error) = HttpModel::new(config).unwrap().start(&ask("hi")).await else {
        panic!("nobody listens");
    };
    assert!(matches!(error, HttpError::Request { .. }), "{error}");
    assert!(error.is_transient());
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let body = recording(Format::OpenAiChat, "text-multibyte.sse");
    let slow = Duration::from_millis(50);
    let server = Server::start(vec![Reply::stream(&body, 8, slow, End::Finish)]).await;
    let mut stream = model(&server, Format::OpenAiChat)
        .stream(&ask("hi"))
        .await
        .unwrap();
    let first = poll_fn(|cx| stream.poll_next(cx)).await;
    assert!(matches!(first, Some(StreamPart::TextDelta(_))), "{first:?}");
    drop(stream);
    assert!(server.dropped(1).await, "the server saw the client hang up");
}
