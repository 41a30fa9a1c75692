//! `compaction`: the runtime's compaction helper (SPEC C1, C2) with a
//! scripted summary model: past `threshold` context-visible messages after
//! its cursor, it summarizes all but the newest `keep`.

use std::sync::Arc;

use pai_runtime::{
    HookFuture, LanguageModel, ModelError, ModelRequest, StreamPart,
    hook::Compaction,
    model::{BoxStream, FinishReason, ReadyStream},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::build_context::{BuildContext, SummaryCall, SummaryLog};
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
    /// `summary N` when empty. The N-th answer goes to the N-th call the
    /// world's summary model of this hook is sent (among every worker); a
    /// call a step makes again after a takeover gets the answer it got.
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

/// The scripted summary model.
struct Summarizer {
    summaries: Vec<String>,
    fail_at: Vec<usize>,
    latency_ms: u64,
    /// The hook's name in the world's answer book.
    source: String,
    answers: Arc<crate::book::AnswerBook>,
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
        let call = (r.run_id.as_str(), r.step, r.attempt);
        let n = self
            .answers
            .answer(&self.source, call, usize::MAX)
            .map_or(1, |g| g.n);
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
    /// The helper, its summary model recording in the context's log.
    pub(super) fn hook(&self, name: &str, context: &BuildContext) -> SimHook {
        let model = Summarizer {
            summaries: self.summaries.clone(),
            fail_at: self.fail_at.clone(),
            latency_ms: self.latency_ms,
            source: format!("compaction:{name}"),
            answers: context.answers.clone(),
            log: context.summaries.clone(),
        };
        Box::new(Compaction::new(self.threshold, self.keep, Arc::new(model)))
    }
}
