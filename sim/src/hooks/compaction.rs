//! `compaction`: the runtime's compaction helper (SPEC C1, C2) with a
//! scripted summary model: past `threshold` context-visible messages after
//! its cursor, it summarizes all but the newest `keep`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pai_runtime::{
    HookFuture, LanguageModel, ModelError, ModelRequest, StreamPart,
    hook::Compaction,
    message::ModelMessage,
    model::{BoxStream, FinishReason, ReadyStream},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::SimHook;

/// The compaction helper, installed as one lifecycle value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactionSpec {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// Compact once more than this many context-visible messages lie after the cursor.
    #[schemars(range(min = 1))]
    pub threshold: usize,
    /// Keep this many of the newest messages verbatim (below `threshold`).
    #[serde(default)]
    pub keep: usize,
    /// The summary model's answers, in order (the last repeats);
    /// `summary N` when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summaries: Vec<String>,
    /// The summary model fails at these calls (from 1): compaction is skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail_at: Vec<usize>,
    /// Virtual milliseconds each summary call takes before its answer
    /// exists: a window in which other writers may commit (the summary and
    /// cursor then commit only if the private metadata is still what
    /// compaction read, C1/H3).
    #[serde(default, skip_serializing_if = "crate::defaults::is_zero")]
    #[schemars(extend("default" = 0))]
    pub latency_ms: u64,
}

/// One request the scripted summary model was sent, and its answer: what
/// the oracles judge a summary by (SPEC C1).
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryCall {
    /// The run whose compaction sent the request.
    pub run_id: String,
    /// The step at which it was sent, numbered from 0 across the run's episodes
    /// as the event log numbers steps.
    pub step: u32,
    /// What it was asked to summarize.
    pub messages: Vec<ModelMessage>,
    /// The summary it gave, or why it failed.
    pub answer: Result<String, String>,
}

/// Where summary models record their requests: the world's, shared by
/// every worker (a crash does not lose what was asked).
pub type SummaryLog = Arc<Mutex<Vec<SummaryCall>>>;

/// The scripted summary model.
struct Summarizer {
    summaries: Vec<String>,
    fail_at: Vec<usize>,
    latency_ms: u64,
    calls: AtomicUsize,
    log: SummaryLog,
}

impl Summarizer {
    fn record(&self, r: &ModelRequest, answer: Result<String, String>) {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.push(SummaryCall {
            run_id: r.run_id.to_string(),
            step: r.step,
            messages: r.messages.clone(),
            answer,
        });
    }
}

impl LanguageModel for Summarizer {
    fn stream<'a>(&'a self, r: &'a ModelRequest) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let answer = self.answer(n, r);
        self.record(r, answer.clone());
        let latency = self.latency_ms;
        let stream = move || match answer {
            Err(why) => Err(ModelError::Provider(why)),
            Ok(text) => {
                let parts = vec![
                    StreamPart::TextDelta(text.into()),
                    StreamPart::Finish(FinishReason::Stop),
                ];
                Ok(Box::new(ReadyStream::new(parts)) as BoxStream)
            }
        };
        match latency {
            0 => HookFuture::ready(stream()),
            ms => HookFuture::new(async move {
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                stream()
            }),
        }
    }
}

impl Summarizer {
    /// The `n`-th call's summary, or why it fails.
    fn answer(&self, n: usize, r: &ModelRequest) -> Result<String, String> {
        if self.fail_at.contains(&n) {
            return Err(format!("summary call {n} failed"));
        }
        Ok(match self.summaries.get(n - 1).or(self.summaries.last()) {
            Some(s) => s.clone(),
            None => format!("summary {n} of {} messages", r.messages.len()),
        })
    }
}

impl CompactionSpec {
    pub(super) fn build(&self, _name: &str, log: &SummaryLog) -> SimHook {
        let model = Summarizer {
            summaries: self.summaries.clone(),
            fail_at: self.fail_at.clone(),
            latency_ms: self.latency_ms,
            calls: AtomicUsize::new(0),
            log: log.clone(),
        };
        Box::new(Compaction::new(self.threshold, self.keep, Arc::new(model)))
    }
}
