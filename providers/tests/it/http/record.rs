//! `Recorder` between a reqwest client and the local replay server: the
//! client sees the upstream's bytes as they stream, the recording holds
//! them byte for byte and decodes, an error status and a cut connection
//! are passed on and recorded, and nothing names the key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pai_providers::{DecodeError, Format, RecordConfig, Recorder, Turn, decode};
use pai_runtime::StreamPart;
use serde_json::json;
use tokio::task::JoinHandle;

use super::server::{End, Reply, Server};
use super::{MS, expected};
use crate::common::recording;

const KEY: &str = "sk-ant-secret-key";

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pai-record-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A recorder for `server` into `out` for `turns` turns, running; its
/// address and the task that ends with its turns.
async fn recorder(server: &Server, out: &Path, turns: usize) -> (String, JoinHandle<Vec<Turn>>) {
    let upstream = server.base_url.trim_end_matches("/v1");
    let config = RecordConfig::new(upstream, out)
        .max_turns(Some(turns))
        .idle_timeout(Duration::from_millis(500));
    let recorder = Recorder::bind("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap();
    let base = format!("http://{}/v1", recorder.local_addr());
    (
        base,
        tokio::spawn(async move { recorder.run().await.unwrap() }),
    )
}

/// A streaming Anthropic request to `url`.
fn anthropic_request(url: &str) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(url)
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(
            r#"{"model":"claude","stream":true,"messages":[{"role":"user","content":"Weather?"}]}"#,
        )
}

/// The body's chunks as the client received them, and how the body ended.
async fn chunks(mut response: reqwest::Response) -> (Vec<Vec<u8>>, Result<(), reqwest::Error>) {
    let mut chunks = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => chunks.push(chunk.to_vec()),
            Ok(None) => return (chunks, Ok(())),
            Err(e) => return (chunks, Err(e)),
        }
    }
}

/// Every file in `dir`, by name, with its text.
fn files(dir: &Path) -> Vec<(String, String)> {
    let mut all: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (
                name,
                String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned(),
            )
        })
        .collect();
    all.sort();
    all
}

#[tokio::test]
async fn a_stream_passes_through_byte_for_byte_and_is_recorded() {
    let body = recording(Format::Anthropic, "tool-use-split.sse");
    let server = Server::start(vec![Reply::stream(&body, 5, MS, End::Finish)]).await;
    let out = out_dir("stream");
    let (base, run) = recorder(&server, &out, 1).await;
    let response = anthropic_request(&format!("{base}/messages?beta=true"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let (received, end) = chunks(response).await;
    end.unwrap();
    assert!(
        received.concat() == body,
        "the client got the upstream's bytes"
    );
    let turns = run.await.unwrap();
    let sse = out.join("turn-001.sse");
    assert!(
        std::fs::read(&sse).unwrap() == body,
        "recorded byte for byte"
    );
    let parts = decode(Format::Anthropic, &std::fs::read(&sse).unwrap())
        .unwrap()
        .parts;
    assert_eq!(parts, expected(Format::Anthropic, "tool-use-split.sse"));
    assert!(matches!(parts[0], StreamPart::TextDelta(_)), "{parts:?}");
    let call = parts.iter().find_map(|p| match p {
        StreamPart::ToolCall(call) => Some(call),
        _ => None,
    });
    assert_eq!(call.expect("a tool call").tool, "get_weather");
    // The upstream got the method, path, query, body and headers.
    let sent = &server.received()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.headers["x-api-key"], KEY);
    assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
    assert_eq!(sent.body["model"], "claude");
    let request = std::fs::read_to_string(out.join("turn-001.request.json")).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&request).unwrap(),
        sent.body
    );
    let [turn] = &turns[..] else {
        panic!("{turns:?}")
    };
    assert_eq!((turn.status, turn.bytes), (Some(200), body.len() as u64));
    assert_eq!(turn.decoded, Some(Ok(())));
    let line = turn.to_string();
    assert_eq!(
        line,
        format!(
            "turn 1: POST /v1/messages -> HTTP 200, {} bytes in {} (decodes as anthropic)",
            body.len(),
            sse.display()
        )
    );
    for (name, text) in files(&out) {
        assert!(!text.contains(KEY), "{name} names the key");
    }
}

#[tokio::test]
async fn the_client_sees_chunks_before_the_upstream_finishes() {
    // The upstream sends half the body, then nothing: a proxy that buffers
    // the body would give the client nothing before the stall.
    let body = recording(Format::OpenAiChat, "tool-calls-split.sse");
    let half = &body[..body.len() / 2];
    let server = Server::start(vec![Reply::stream(half, 64, MS, End::Stall)]).await;
    let out = out_dir("stall");
    let (base, run) = recorder(&server, &out, 1).await;
    let mut response = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .body(r#"{"model":"m","stream":true}"#)
        .send()
        .await
        .unwrap();
    let mut received = Vec::new();
    while received.len() < half.len() {
        let chunk = tokio::time::timeout(Duration::from_millis(400), response.chunk())
            .await
            .expect("each chunk arrives before the stall ends the turn")
            .unwrap()
            .expect("the body goes on");
        received.extend_from_slice(&chunk);
    }
    assert_eq!(received, half);
    let turns = run.await.unwrap();
    assert_eq!(std::fs::read(out.join("turn-001.sse")).unwrap(), half);
    let error = turns[0].error.as_deref().unwrap();
    assert_eq!(error, "the upstream stalled: no bytes for 500ms");
}

#[tokio::test]
async fn an_error_status_is_passed_through_and_recorded() {
    let error = r#"{"error":{"message":"The server had an error","type":"server_error"}}"#;
    let server = Server::start(vec![Reply::json(500, error)]).await;
    let out = out_dir("status");
    let (base, run) = recorder(&server, &out, 1).await;
    let response = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .header("authorization", format!("Bearer {KEY}"))
        .body(r#"{"model":"m","stream":true}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(response.text().await.unwrap(), error);
    let turns = run.await.unwrap();
    let recorded = std::fs::read(out.join("turn-001.body")).unwrap();
    assert_eq!(recorded, error.as_bytes());
    assert_eq!(
        decode(Format::OpenAiChat, &recorded).unwrap_err(),
        DecodeError::ErrorBody {
            message: "The server had an error".into(),
            status: Some(500)
        }
    );
    assert_eq!(turns[0].status, Some(500));
    assert!(turns[0].error.is_none());
    let line = turns[0].to_string();
    assert!(
        line.ends_with("(an error body: The server had an error)"),
        "{line}"
    );
    assert_eq!(
        server.received()[0].headers["authorization"],
        format!("Bearer {KEY}")
    );
}

#[tokio::test]
async fn a_cut_connection_leaves_what_arrived_and_names_the_cut() {
    let body = recording(Format::OpenAiChat, "tool-calls-split.sse");
    let half = &body[..body.len() / 2];
    let server = Server::start(vec![Reply::stream(half, 10, MS, End::Cut)]).await;
    let out = out_dir("cut");
    let (base, run) = recorder(&server, &out, 1).await;
    let response = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .body(r#"{"model":"m","stream":true}"#)
        .send()
        .await
        .unwrap();
    let (received, end) = chunks(response).await;
    assert!(end.is_err(), "the client sees the cut too");
    let turns = run.await.unwrap();
    // What arrived: the upstream's own server may lose the chunk it
    // wrote just before the cut, never more.
    let recorded = std::fs::read(out.join("turn-001.sse")).unwrap();
    assert!(half.starts_with(&recorded) && recorded.len() + 10 >= half.len());
    assert!(
        received.concat() == recorded,
        "the client got what was recorded"
    );
    assert_eq!(turns[0].bytes, recorded.len() as u64);
    let line = turns[0].to_string();
    assert!(
        line.contains("(a cut openai-chat stream: the stream was cut after"),
        "{line}"
    );
    assert!(
        line.contains("; error: the upstream connection failed mid-body"),
        "{line}"
    );
}

#[tokio::test]
async fn turns_are_numbered_in_order_and_the_limit_stops_the_recorder() {
    let text = recording(Format::OpenAiChat, "text-multibyte.sse");
    let tools = recording(Format::OpenAiChat, "tool-calls-split.sse");
    let replies = vec![
        Reply::stream(&tools, 7, MS, End::Finish),
        Reply::stream(&text, 7, MS, End::Finish),
    ];
    let server = Server::start(replies).await;
    let out = out_dir("turns");
    let (base, run) = recorder(&server, &out, 2).await;
    let client = reqwest::Client::new();
    for ask in ["weather?", "thanks"] {
        let body =
            json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": ask}]});
        let response = client
            .post(format!("{base}/chat/completions"))
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        chunks(response).await.1.unwrap();
    }
    let turns = run.await.unwrap();
    let numbers: Vec<usize> = turns.iter().map(|t| t.number).collect();
    assert_eq!(numbers, [1, 2]);
    assert_eq!(std::fs::read(out.join("turn-001.sse")).unwrap(), tools);
    assert_eq!(std::fs::read(out.join("turn-002.sse")).unwrap(), text);
    let names: Vec<String> = files(&out).into_iter().map(|(n, _)| n).collect();
    let want = [
        "turn-001.request.json",
        "turn-001.sse",
        "turn-002.request.json",
        "turn-002.sse",
    ];
    assert_eq!(names, want);
    let refused = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .send()
        .await;
    assert!(refused.is_err(), "the recorder stopped listening");
}

#[tokio::test]
async fn no_upstream_is_a_502_and_a_turn_without_recording() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let out = out_dir("refused");
    let config = RecordConfig::new(upstream, &out).max_turns(Some(1));
    let recorder = Recorder::bind("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap();
    let base = format!("http://{}/v1", recorder.local_addr());
    let run = tokio::spawn(recorder.run());
    let response = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 502);
    let turns = run.await.unwrap().unwrap();
    assert_eq!((turns[0].status, &turns[0].recording), (None, &None));
    let line = turns[0].to_string();
    assert!(
        line.starts_with("turn 1: POST /v1/chat/completions -> no response, 0 bytes; error: the request to the upstream failed"),
        "{line}"
    );
}

/// An upstream on raw TCP that answers one request with `body` in chunks
/// of the chunked encoding, all written at once, then closes the
/// connection without the last chunk: a cut right behind the data.
async fn cut_upstream(body: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut reply = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                      transfer-encoding: chunked\r\n\r\n"
        .to_vec();
    for chunk in body.chunks(100) {
        reply.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        reply.extend_from_slice(chunk);
        reply.extend_from_slice(b"\r\n");
    }
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = vec![0; 64 * 1024];
        let _ = socket.read(&mut request).await.unwrap();
        socket.write_all(&reply).await.unwrap();
        socket.shutdown().await.unwrap();
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_cut_right_behind_the_data_still_passes_every_byte_on() {
    let body = recording(Format::OpenAiChat, "text-multibyte.sse");
    let half = &body[..body.len() / 2];
    let out = out_dir("cut-behind");
    let config = RecordConfig::new(cut_upstream(half).await, &out).max_turns(Some(1));
    let recorder = Recorder::bind("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap();
    let url = format!("http://{}/v1/chat/completions", recorder.local_addr());
    let run = tokio::spawn(recorder.run());
    let response = reqwest::Client::new()
        .post(url)
        .body(r#"{"stream":true}"#)
        .send()
        .await
        .unwrap();
    let (received, end) = chunks(response).await;
    assert!(end.is_err(), "the client sees the cut");
    assert!(
        received.concat() == half,
        "every byte before the cut arrives"
    );
    let turns = run.await.unwrap().unwrap();
    assert!(std::fs::read(out.join("turn-001.sse")).unwrap() == half);
    let error = turns[0].error.as_deref().unwrap();
    assert!(
        error.starts_with("the upstream connection failed mid-body"),
        "{error}"
    );
}

#[tokio::test]
async fn a_client_that_hangs_up_does_not_cut_the_recording() {
    let body = recording(Format::OpenAiChat, "text-multibyte.sse");
    let slow = Duration::from_millis(20);
    let server = Server::start(vec![Reply::stream(&body, 64, slow, End::Finish)]).await;
    let out = out_dir("hang-up");
    let (base, run) = recorder(&server, &out, 1).await;
    let mut response = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .body(r#"{"stream":true}"#)
        .send()
        .await
        .unwrap();
    assert!(response.chunk().await.unwrap().is_some());
    drop(response);
    let turns = run.await.unwrap();
    assert!(std::fs::read(out.join("turn-001.sse")).unwrap() == body);
    assert_eq!(turns[0].error, None);
    assert_eq!(turns[0].decoded, Some(Ok(())));
}
