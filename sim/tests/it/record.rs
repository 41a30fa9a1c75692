//! `pai-sim record` end to end: the binary between `HttpModel` and the
//! providers' local replay server records a two-turn conversation (tool
//! calls with split arguments, then the answer); the recordings, named in
//! a scenario's `[model] replay`, load and pass every oracle.

use std::future::poll_fn;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use pai_providers::{Format, HttpConfig, HttpModel};
use pai_runtime::{LanguageModel, ModelRequest, StreamPart, message::ModelMessage, model::Route};

#[path = "../../../providers/tests/it/http/server.rs"]
#[allow(dead_code)]
mod server;

use server::{End, Reply, Server};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(root().join(path)).unwrap()
}

const TOOLS: &str = "providers/recordings/openai-chat/tool-calls-split.sse";
const ANSWER: &str = "scenarios/providers/recordings/openai-chat-weather-answer.sse";

/// The scenario replaying the two recorded turns.
const SCENARIO: &str = r#"name = "a conversation recorded through pai-sim record"
rules = ["S1"]
seed = 3

[[agent.tools]]
name = "get_weather"
echo = true

[[agent.tools]]
name = "get_time"
output = { time = "14:05" }

[model]
replay = ["rec/turn-001.sse", "rec/turn-002.sse"]
format = "openai-chat"
chunk = 5

[[timeline]]
send = "Weather and time in Zürich?"
"#;

/// One streamed call through `model`: its parts.
async fn call(model: &HttpModel, text: &str) -> Vec<StreamPart> {
    let request = ModelRequest::new(Route::new("m"), "", vec![ModelMessage::user(text)], vec![]);
    let mut stream = model.stream(&request).await.unwrap();
    let mut parts = Vec::new();
    while let Some(part) = poll_fn(|cx| stream.poll_next(cx)).await {
        parts.push(part);
    }
    parts
}

/// Runs the recorder binary for two turns between `HttpModel` and the
/// replay server; its stderr and stdout.
async fn record_two_turns(out: &Path) -> (String, String) {
    let replies = vec![
        Reply::stream(&read(TOOLS), 9, Duration::from_millis(1), End::Finish),
        Reply::stream(&read(ANSWER), 9, Duration::from_millis(1), End::Finish),
    ];
    let upstream = Server::start(replies).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_pai-sim"))
        .args(["record", "--listen", "127.0.0.1:0", "--max-turns", "2"])
        .arg("--upstream")
        .arg(upstream.base_url.trim_end_matches("/v1"))
        .arg("--out")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let addr = first
        .strip_prefix("recording on http://")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("the first line names the address: {first}"));
    let config = HttpConfig::new(Format::OpenAiChat, format!("http://{addr}/v1"), "gpt")
        .api_key(Some("sk-live-do-not-log".into()));
    let model = HttpModel::new(config).unwrap();
    let tools = call(&model, "Weather and time in Zürich?").await;
    assert!(
        tools.iter().any(|p| matches!(p, StreamPart::ToolCall(_))),
        "{tools:?}"
    );
    let answer = call(&model, "thanks").await;
    assert!(matches!(answer[0], StreamPart::TextDelta(_)), "{answer:?}");
    let done = tokio::task::spawn_blocking(move || {
        let mut rest = String::new();
        stderr.read_to_string(&mut rest).unwrap();
        let mut stdout = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        (child.wait().unwrap(), first + &rest, stdout)
    });
    let (status, stderr, stdout) = done.await.unwrap();
    assert!(status.success(), "{stderr}");
    (stderr, stdout)
}

#[test]
fn a_conversation_recorded_through_the_proxy_replays_as_a_scenario() {
    let dir = std::env::temp_dir().join(format!("pai-sim-record-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("rec");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (stderr, stdout) = runtime.block_on(record_two_turns(&out));
    assert_eq!(
        std::fs::read(out.join("turn-001.sse")).unwrap(),
        read(TOOLS)
    );
    assert_eq!(
        std::fs::read(out.join("turn-002.sse")).unwrap(),
        read(ANSWER)
    );
    let lines: Vec<&str> = stderr.lines().skip(1).collect();
    let turn = |n: usize, file: &str| {
        format!(
            "turn {n}: POST /v1/chat/completions -> HTTP 200, {} bytes in {} (decodes as openai-chat)",
            read(file).len(),
            out.join(format!("turn-00{n}.sse")).display()
        )
    };
    assert_eq!(lines, [turn(1, TOOLS), turn(2, ANSWER)], "{stderr}");
    assert!(!stderr.contains("sk-live"), "the key is never printed");
    let rec = |n| out.join(format!("turn-00{n}.sse")).display().to_string();
    let table = format!(
        "[model]\nreplay = [{:?}, {:?}]\nformat = \"openai-chat\"\n",
        rec(1),
        rec(2)
    );
    assert_eq!(stdout, table);
    let file = dir.join("recorded.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let scenario = pai_sim::Scenario::load(&file).unwrap();
    let (report, problems) = pai_sim::check(&scenario, 3).unwrap();
    assert!(problems.is_empty(), "{problems:?}\n{}", report.transcript);
    assert!(
        report.transcript.contains("rec/turn-002.sse"),
        "{}",
        report.transcript
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
