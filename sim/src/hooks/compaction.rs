//! `compaction`: the runtime's compaction helper (SPEC C1, C2) with a
//! scripted summary model: past `threshold` context-visible messages after
//! its cursor, it summarizes all but the newest `keep`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pai_runtime::{
    BoxStream, Compaction, FinishReason, HookFuture, LanguageModel, ModelError, ModelRequest,
    ReadyStream, StreamPart,
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
}

/// The scripted summary model.
struct Summarizer {
    summaries: Vec<String>,
    fail_at: Vec<usize>,
    calls: AtomicUsize,
}

impl LanguageModel for Summarizer {
    fn stream<'a>(&'a self, r: &'a ModelRequest) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if self.fail_at.contains(&n) {
            let e = ModelError::Provider(format!("summary call {n} failed"));
            return HookFuture::ready(Err(e));
        }
        let text = match self.summaries.get(n - 1).or(self.summaries.last()) {
            Some(s) => s.clone(),
            None => format!("summary {n} of {} messages", r.messages.len()),
        };
        let parts = vec![
            StreamPart::TextDelta(text.into()),
            StreamPart::Finish(FinishReason::Stop),
        ];
        HookFuture::ready(Ok(Box::new(ReadyStream::new(parts)) as BoxStream))
    }
}

impl CompactionSpec {
    pub(super) fn build(&self, _name: &str) -> SimHook {
        let model = Summarizer {
            summaries: self.summaries.clone(),
            fail_at: self.fail_at.clone(),
            calls: AtomicUsize::new(0),
        };
        Box::new(Compaction::new(self.threshold, self.keep, Arc::new(model)))
    }
}
