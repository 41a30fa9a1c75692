//! The compaction helper (SPEC C1, C2), one lifecycle value: a context
//! resolver that, once more than `threshold` context-visible messages lie
//! after its cursor, summarizes the older ones through a model call and
//! commits one summary record (transcript-visible, hidden from the default
//! context) and its private cursor in one mutation guarded by
//! `expect = private_metadata`; and a `prepare_history_rewrite` hook that
//! resets the cursor in the rewrite's own transaction when the rewrite
//! touches messages at or before it. A step's context is the summary, then
//! the context-visible messages after the cursor; the cursor never falls
//! between a tool call and its result (H6). A summary is model output
//! that is stored and reused as context, so it passes the run's canonical
//! transforms first, as a step's text does (C3, S1).

use std::future::poll_fn;
use std::sync::Arc;

use crate::context::{ContextInput, ContextNext};
use crate::error::{HookError, HookResult};
use crate::future::HookFuture;
use crate::id::MessageId;
use crate::lifecycle::{
    HookCx, Lifecycle, Phase, Phases, Progress, RewriteInput, RewriteKind, RewritePatch,
};
use crate::message::{Message, ModelMessage, Part, Producer, Role, Visibility};
use crate::model::{LanguageModel, ModelRequest, StreamPart};
use crate::model_view::to_model_messages;
use crate::patch::Route;
use crate::store::{Expect, StoredThread};
use serde::{Deserialize, Serialize};

/// The private metadata key of the cursor.
pub const COMPACTION_KEY: &str = "pai.compaction";

/// Why a compaction did not start: its run heard of a cancel or a delete.
const STOPPED: &str = "the run was cancelled or its thread deleted";

/// Where compaction stands: every context-visible message up to and
/// including message `through` (a sequence number), in context order, is
/// summarized by message `summary`. Context order is not always sequence
/// order (SPEC M1: a queued run's message enters when its run is
/// claimed), so `covers` keeps the newest sequence number summarized: a
/// rewrite of any message up to it resets the cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionCursor {
    /// The sequence number of the newest message summarized in context order:
    /// messages after it (in context order) are sent as they are.
    pub through: u64,
    /// The stored summary message that stands for every message up to
    /// `through`.
    pub summary: MessageId,
    /// The newest sequence number among the summarized messages (0 in cursors
    /// written before it existed): a rewrite of any message up to it resets the
    /// cursor.
    #[serde(default)]
    pub covers: u64,
}

impl CompactionCursor {
    /// The cursor stored in `thread`'s private metadata, if any.
    pub fn of(thread: &StoredThread) -> Option<CompactionCursor> {
        let v = thread.private_metadata.get(COMPACTION_KEY)?;
        serde_json::from_value(v.clone()).ok()
    }
}

/// The compaction helper; install it as one hook (`compose(vec![Box::new(c), ...])`).
pub struct Compaction {
    threshold: usize,
    keep: usize,
    model: Arc<dyn LanguageModel>,
}

impl std::fmt::Debug for Compaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compaction")
            .field("threshold", &self.threshold)
            .field("keep", &self.keep)
            .finish_non_exhaustive()
    }
}

/// What the summary model is asked to do.
const PROMPT: &str = "Summarize the conversation so far for your own later use.";

impl Compaction {
    /// Compacts once more than `threshold` context-visible messages lie
    /// after the cursor, keeping the newest `keep` of them verbatim
    /// (`keep` is clamped below `threshold`); `model` writes the summaries.
    pub fn new(threshold: usize, keep: usize, model: Arc<dyn LanguageModel>) -> Compaction {
        let threshold = threshold.max(1);
        Compaction {
            threshold,
            keep: keep.min(threshold - 1),
            model,
        }
    }

    /// Summarizes `segment` (after `previous`'s summary) into one text.
    async fn summarize(
        &self,
        run: &str,
        step: u32,
        previous: Option<&str>,
        segment: &[&Message],
    ) -> Result<String, String> {
        let mut messages = vec![ModelMessage::system(PROMPT)];
        if let Some(p) = previous {
            messages.push(ModelMessage::system(p));
        }
        messages.extend(to_model_messages(segment.iter().copied()));
        let request = ModelRequest {
            run_id: run.into(),
            step,
            attempt: 1,
            route: Route::new("compaction"),
            instructions: PROMPT.to_string(),
            tools: Vec::new(),
            messages,
            timeout_ms: None,
            registered: Arc::from(Vec::new()),
        };
        let mut stream = self
            .model
            .stream(&request)
            .await
            .map_err(|e| e.to_string())?;
        let mut text = String::new();
        // A text part ended: the next one is a paragraph of its own (S6).
        let mut apart = false;
        // Bounded by the stream: a provider stream ends.
        while let Some(part) = poll_fn(|cx| stream.poll_next(cx)).await {
            match part {
                StreamPart::TextDelta(d) => {
                    if std::mem::take(&mut apart) && !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(&d);
                }
                StreamPart::TextEnd => apart = true,
                StreamPart::Error(e) => return Err(e.into()),
                // A refused summary is no summary (S6).
                StreamPart::Finish(f) if f.refusal().is_some() => {
                    return Err(format!("the summary model declined: {}", f.as_str()));
                }
                StreamPart::Finish(_) => break,
                StreamPart::ToolCall(_) | StreamPart::Refusal(_) => {}
            }
        }
        Ok(text)
    }

    /// One step's compaction: a new cursor and summary when past the
    /// threshold (committed, or skipped on a conflict), then the context.
    async fn resolve<C: Sync>(
        &self,
        cx: &HookCx<'_, C>,
        input: &ContextInput<'_>,
    ) -> HookResult<Vec<ModelMessage>> {
        let facade = cx
            .run
            .ok_or_else(|| HookError::new("compaction resolves context only inside a run"))?;
        let stored = facade
            .read_thread()
            .await
            .map_err(|e| HookError::new(e.to_string()))?;
        let visible = input.history.visible().await?;
        let mut cursor = CompactionCursor::of(&stored);
        let mut summary = cursor
            .as_ref()
            .and_then(|c| summary_text(&visible, &stored, c));
        let after = after_cursor(&visible, cursor.as_ref());
        if after.len() > self.threshold
            && let Some(through) = choose_cursor(&after, self.keep)
        {
            let next = self.compact(cx, input.step, &stored, &visible, cursor.as_ref(), through);
            match next.await {
                Ok((c, text)) => (cursor, summary) = (Some(c), Some(text)),
                Err(NotCompacted::Failed(e)) => return Err(e),
                Err(NotCompacted::Skipped(reason)) => facade.progress(Progress::Skipped {
                    step: input.step,
                    reason,
                }),
            }
        }
        Ok(context(&visible, summary.as_deref(), cursor.as_ref()))
    }

    /// Summarizes up to `through` and commits summary and cursor in one
    /// mutation guarded by the private metadata it read (C1). The summary
    /// passes the run's canonical transforms before it is stored or used
    /// (C3): what a redactor masks in a step never comes back through it.
    async fn compact<C: Sync>(
        &self,
        cx: &HookCx<'_, C>,
        step: u32,
        stored: &StoredThread,
        visible: &[Message],
        cursor: Option<&CompactionCursor>,
        through: u64,
    ) -> Result<(CompactionCursor, String), NotCompacted> {
        let facade = cx.run.ok_or(NotCompacted::Skipped("no run".into()))?;
        let after = after_cursor(visible, cursor);
        let end = after
            .iter()
            .position(|m| m.seq == through)
            .map_or(0, |i| i + 1);
        let segment: Vec<&Message> = after[..end].to_vec();
        let covers = segment.iter().map(|m| m.seq).max().unwrap_or(through);
        if facade.stopped() {
            // The run heard of a cancel or a delete while its step's
            // context was resolved: no summary call starts (K6, H5).
            return Err(NotCompacted::Skipped(STOPPED.into()));
        }
        facade.progress(Progress::Started {
            step,
            through,
            messages: segment.len(),
        });
        let previous = cursor.and_then(|c| summary_text(visible, stored, c));
        let text = self
            .summarize(cx.run_id, step, previous.as_deref(), &segment)
            .await
            .map_err(NotCompacted::Skipped)?;
        // A transform that panics fails the run, as on a step's text (X2).
        let text = facade
            .canonical_summary(step, text)
            .map_err(|e| NotCompacted::Failed(HookError::new(e)))?;
        let expect = Expect::private_metadata_of(stored);
        let summary = text.clone();
        let committed = cx
            .mutate(expect, |s| {
                let visibility = Visibility {
                    transcript: true,
                    context: false,
                };
                let id = s.append_as(Producer::Compaction, Role::System, text, visibility);
                let cursor = CompactionCursor {
                    through,
                    summary: id,
                    covers,
                };
                let value = serde_json::to_value(&cursor).map_err(|e| e.to_string())?;
                s.set_private(COMPACTION_KEY, value);
                Ok(cursor)
            })
            .await;
        let (cursor, done) = committed.map_err(|e| NotCompacted::Skipped(e.to_string()))?;
        facade.progress(Progress::Compacted {
            step,
            summary: cursor.summary.clone(),
            through,
            version: done.version,
        });
        Ok((cursor, summary))
    }
}

/// Why a compaction committed nothing.
enum NotCompacted {
    /// The step goes on with the cursor it had (a failed summary call, a
    /// conflict): the reason is logged (C1).
    Skipped(String),
    /// The run fails: a canonical transform of the summary panicked (X2).
    Failed(HookError),
}

/// Context-visible messages after the cursor, in context order: those
/// after message `through` where it still is, else those stored after it.
fn after_cursor<'m>(visible: &'m [Message], cursor: Option<&CompactionCursor>) -> Vec<&'m Message> {
    let rest = match cursor {
        None => visible,
        Some(c) => match visible.iter().position(|m| m.seq == c.through) {
            Some(i) => &visible[i + 1..],
            None => {
                let start = visible.iter().position(|m| m.seq > c.through);
                &visible[start.unwrap_or(visible.len())..]
            }
        },
    };
    rest.iter().filter(|m| m.visibility.context).collect()
}

/// The newest cursor that leaves the last `keep` of `after` verbatim and
/// splits no tool call from its result; `None` if there is none.
fn choose_cursor(after: &[&Message], keep: usize) -> Option<u64> {
    let mut cut = after.len().checked_sub(keep)?;
    // Bounded: `cut` only decreases.
    while cut > 0 {
        let (head, tail) = after.split_at(cut);
        if !splits_a_call(head, tail) {
            return head.last().map(|m| m.seq);
        }
        cut -= 1;
    }
    None
}

/// Whether a call in `head` has its result in `tail`.
fn splits_a_call(head: &[&Message], tail: &[&Message]) -> bool {
    let calls = head.iter().flat_map(|m| &m.parts).filter_map(|p| match p {
        Part::ToolCall { call_id, .. } => Some(call_id),
        _ => None,
    });
    let mut calls = calls.peekable();
    if calls.peek().is_none() {
        return false;
    }
    let results: Vec<&str> = tail
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    calls.any(|c| results.contains(&c.as_str()))
}

/// The summary's text, if its record is still stored.
fn summary_text(
    visible: &[Message],
    stored: &StoredThread,
    c: &CompactionCursor,
) -> Option<String> {
    let m = visible
        .iter()
        .chain(&stored.messages)
        .find(|m| m.id == c.summary)?;
    Some(m.text())
}

/// SPEC C2: the summary, then the context-visible messages after the cursor.
fn context(
    visible: &[Message],
    summary: Option<&str>,
    cursor: Option<&CompactionCursor>,
) -> Vec<ModelMessage> {
    let mut out = Vec::new();
    if let Some(text) = summary.filter(|_| cursor.is_some()) {
        out.push(ModelMessage::system(format!(
            "Summary of the earlier conversation: {text}"
        )));
    }
    out.extend(to_model_messages(after_cursor(visible, cursor)));
    out
}

/// C1, regeneration repair: the cursor is reset when a rewrite touches a
/// message at or before it (or its summary record).
fn repair(input: &RewriteInput<'_>) -> RewritePatch {
    let Some(cursor) = CompactionCursor::of(input.thread) else {
        return RewritePatch::default();
    };
    let covered = cursor.covers.max(cursor.through);
    let at_or_before = |id: &MessageId| {
        *id == cursor.summary
            || input
                .thread
                .messages
                .iter()
                .any(|m| m.id == *id && m.seq <= covered)
    };
    let touched = match input.kind {
        RewriteKind::Regenerate { removed, .. } => removed.iter().any(at_or_before),
        RewriteKind::Visibility { changes } => changes.iter().any(|c| at_or_before(&c.message)),
    };
    match touched {
        true => RewritePatch::default().remove(true, COMPACTION_KEY),
        false => RewritePatch::default(),
    }
}

impl<C: Send + Sync + 'static> Lifecycle<C> for Compaction {
    fn name(&self) -> &str {
        "compaction"
    }

    fn phases(&self) -> Phases {
        Phases::only(Phase::ResolveModelContext).with(Phase::PrepareHistoryRewrite)
    }

    fn resolve_model_context<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a ContextInput<'_>,
        next: ContextNext<'a>,
    ) -> HookFuture<'a, HookResult<Vec<ModelMessage>>> {
        HookFuture::new(async move {
            let base = self.resolve(cx, input).await?;
            next.with_base(base).await
        })
    }

    fn prepare_history_rewrite<'a>(
        &'a self,
        _cx: &'a HookCx<'_, C>,
        input: &'a RewriteInput<'_>,
    ) -> HookFuture<'a, HookResult<RewritePatch>> {
        HookFuture::ready(Ok(repair(input)))
    }
}

/// Used by tests: a cursor as stored.
#[cfg(test)]
fn cursor_value(through: u64, summary: &str) -> serde_json::Value {
    serde_json::to_value(CompactionCursor {
        through,
        summary: summary.into(),
        covers: through,
    })
    .unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
