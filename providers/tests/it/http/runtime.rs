//! The provider inside the runtime, as README's "talking to a real model"
//! shows it: an agent whose model is an `HttpModel` answers a message
//! from a local server's recorded stream.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pai_providers::{Format, HttpConfig, HttpModel, decode};
use pai_runtime::{
    Agent, Clock, HookFuture, IdKind, IdSource, Millis, Role, Runtime, StreamPart, model::ModelMap,
};

use super::server::{End, Reply, Server};
use crate::common::recording;

/// Wall-clock time, for a runtime that talks to a real model.
struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        let since = SystemTime::now().duration_since(UNIX_EPOCH);
        since.map_or(0, |d| d.as_millis() as Millis)
    }

    fn sleep(&self, ms: Millis) -> HookFuture<'static, ()> {
        HookFuture::new(tokio::time::sleep(Duration::from_millis(ms)))
    }
}

/// Counted ids.
#[derive(Default)]
struct Counter(AtomicU64);

impl IdSource for Counter {
    fn next_id(&self, kind: IdKind) -> String {
        format!(
            "{}_{}",
            kind.prefix(),
            self.0.fetch_add(1, Ordering::Relaxed)
        )
    }
}

#[tokio::test]
async fn an_agent_answers_through_the_http_model() {
    let body = recording(Format::OpenAiChat, "text-multibyte.sse");
    let server = Server::start(vec![Reply::stream(&body, 9, Duration::ZERO, End::Finish)]).await;
    let config = HttpConfig::new(Format::OpenAiChat, &server.base_url, "llama3.2")
        .api_key(std::env::var("PAI_TEST_NO_SUCH_KEY").ok());
    let model = HttpModel::new(config).unwrap();
    let agent = Agent::new("assistant", "local").instructions("Answer briefly.");
    let rt = Runtime::builder(agent, ())
        .models(ModelMap::new().with("local", Arc::new(model)))
        .clock(Arc::new(SystemClock))
        .ids(Arc::new(Counter::default()))
        .build()
        .unwrap();
    let thread = rt.client("alice").thread("demo");
    thread.send("Say hello.").await.unwrap();
    let state = thread.wait_until_idle().await.unwrap();
    let answer = state.messages.iter().rfind(|m| m.role == Role::Assistant);
    let text: String = decode(Format::OpenAiChat, &body)
        .unwrap()
        .parts
        .iter()
        .filter_map(|p| match p {
            StreamPart::TextDelta(d) => Some(d.as_str().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(answer.map(|m| m.text()), Some(text));
    let sent = &server.received()[0].body;
    assert_eq!(sent["model"], "llama3.2");
    assert_eq!(sent["messages"][0]["content"], "Answer briefly.");
    assert_eq!(sent["messages"][1]["content"], "Say hello.");
}
