//! A runtime wired the way an application wires it: the system clock,
//! random ids, threads in a SQLite file, a scripted model standing in for
//! a provider, and a tracing subscriber. Run it twice: the second run finds
//! the first run's messages in the database.
//!
//! ```text
//! cargo run -p pai-runtime --features sqlite --example sqlite_app -- [DB_PATH]
//! ```

#![allow(clippy::print_stdout)] // an example prints the transcript it made

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use pai_runtime::{
    Agent, Clock, HookFuture, IdKind, IdSource, LanguageModel, Millis, ModelError, ModelRequest,
    Part, Runtime, StreamPart, ToolError,
    model::{BoxStream, FinishReason, ModelMap, ReadyStream},
    store::{SqliteConfig, SqliteStore},
    tool_fn,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Wall-clock time; timers on Tokio.
struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as Millis)
    }

    fn sleep(&self, ms: Millis) -> HookFuture<'static, ()> {
        HookFuture::new(tokio::time::sleep(std::time::Duration::from_millis(ms)))
    }
}

/// Ids from a process-random key (std's `RandomState`) and a counter.
struct RandomIds {
    key: RandomState,
    counter: AtomicU64,
}

impl IdSource for RandomIds {
    fn next_id(&self, kind: IdKind) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("{}_{:016x}", kind.prefix(), self.key.hash_one(n))
    }
}

/// Stands in for a provider: asks for the clock tool, then answers.
struct ScriptedModel;

impl LanguageModel for ScriptedModel {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        let parts = match request.step {
            0 => vec![
                StreamPart::TextDelta("Let me look at the clock.".into()),
                StreamPart::tool_call(
                    format!("call_{}", request.messages.len()),
                    "time",
                    json!({}),
                ),
                StreamPart::Finish(FinishReason::ToolCalls),
            ],
            _ => vec![
                StreamPart::TextDelta(
                    format!(
                        "Done. This thread now has {} messages in context.",
                        request.messages.len()
                    )
                    .into(),
                ),
                StreamPart::Finish(FinishReason::Stop),
            ],
        };
        HookFuture::ready(Ok(Box::new(ReadyStream::new(parts)) as BoxStream))
    }
}

#[derive(Deserialize)]
struct NoInput {}

#[derive(Serialize)]
struct Now {
    unix_ms: Millis,
}

fn runtime(db: &str) -> anyhow::Result<Runtime<()>> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    // Leases expire by the same clock the runtime runs on.
    let store = SqliteStore::open(db, Some(clock.clone()), SqliteConfig::default())?;
    let time = tool_fn("time", "the current time", |_cx, _: NoInput| async move {
        Ok::<_, ToolError>(Now {
            unix_ms: SystemClock.now(),
        })
    });
    let agent = Agent::new("assistant", "scripted")
        .instructions("Answer briefly.")
        .tool(time);
    let ids = RandomIds {
        key: RandomState::new(),
        counter: AtomicU64::new(0),
    };
    Ok(Runtime::builder(agent, ())
        .store(Arc::new(store))
        .models(ModelMap::new().with("scripted", Arc::new(ScriptedModel)))
        .clock(clock)
        .ids(Arc::new(ids))
        .build()?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let db = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "pai-example.db".to_string());
    let rt = runtime(&db)?;
    let thread = rt.client("alice").thread("demo");
    thread.send("What time is it?").await?;
    let state = thread.wait_until_idle().await?;
    tracing::info!(db, version = state.version, "thread idle");
    for m in &state.messages {
        let results = m.parts.iter().filter_map(|p| match p {
            Part::ToolResult { output, .. } => Some(output.to_string()),
            _ => None,
        });
        let shown = std::iter::once(m.text())
            .chain(results)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        println!("{:>3} {:<9} {shown}", m.seq, format!("{:?}", m.role));
    }
    Ok(())
}
