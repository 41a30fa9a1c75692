//! Model context resolution (SPEC M1–M5, L6): the history view resolvers read
//! through, the resolver's thread facade, and the memoized `next` of the onion
//! (this file); the run's cached default context between steps (`cache.rs`).

use std::fmt;

use serde_json::{Map, Value};
use tokio::sync::OnceCell;

use crate::error::{FailureCell, HookError, HookResult};
use crate::future::HookFuture;
use crate::message::{Message, ModelMessage};
use crate::model_view::into_model_messages;
use crate::store::{CachedThrough, HistoryRead, StoreError, StoreHandle};

pub(crate) mod cache;

/// A history read that the fence refused (SPEC M3, H5).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// The thread no longer exists (deleted, SPEC H5); it holds the thread's
    /// id.
    #[error("thread {0} no longer exists")]
    Gone(String),
    /// The thread is another incarnation than the resolver's (deleted and
    /// created again, SPEC H5) or another agent's (SPEC M3).
    #[error("thread {thread} is a different incarnation or agent than this resolver's")]
    Fenced {
        /// The thread's id.
        thread: String,
    },
    /// The store could not answer the read.
    #[error(transparent)]
    Store(StoreError),
}

impl From<HistoryError> for HookError {
    fn from(e: HistoryError) -> HookError {
        HookError::new(e.to_string())
    }
}

/// A page of raw history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPage {
    /// Messages in ascending sequence order.
    pub messages: Vec<Message>,
    /// Pass as the cursor to read the page before this one; `None` at the start.
    pub next_cursor: Option<u64>,
}

/// Read access to one thread's stored history for one step: every read is
/// bounded by the step's anchor (the newest sequence number at step start,
/// SPEC M1) and fenced to the owning agent and the thread's incarnation.
pub struct History<'a> {
    store: &'a StoreHandle,
    thread: &'a str,
    agent: &'a str,
    incarnation: u64,
    anchor: u64,
    /// The run's driver, told of every store error a read meets, whoever
    /// reads (a hook too): one that loses the lease stops its writes (K3).
    told: Option<&'a dyn StoreErrors>,
}

/// Who hears of the store errors a step's history reads meet.
pub(crate) trait StoreErrors: Sync {
    /// The store answered the read `request` with `e`.
    fn heard(&self, request: &str, e: &StoreError);
}

impl fmt::Debug for History<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("History")
            .field("thread", &self.thread)
            .field("incarnation", &self.incarnation)
            .field("anchor", &self.anchor)
            .finish()
    }
}

impl<'a> History<'a> {
    pub(crate) fn new(
        store: &'a StoreHandle,
        thread: &'a str,
        agent: &'a str,
        incarnation: u64,
        anchor: u64,
    ) -> History<'a> {
        History {
            store,
            thread,
            agent,
            incarnation,
            anchor,
            told: None,
        }
    }

    /// Tells `driver` of every store error a read meets.
    pub(crate) fn told(mut self, driver: &'a dyn StoreErrors) -> History<'a> {
        self.told = Some(driver);
        self
    }

    /// The newest sequence number this step may see.
    pub fn anchor(&self) -> u64 {
        self.anchor
    }

    fn fence(&self) -> (&str, &str, u64) {
        (self.thread, self.agent, self.incarnation)
    }

    fn refused(&self, e: StoreError) -> HistoryError {
        if let Some(driver) = self.told {
            driver.heard("history", &e);
        }
        match e {
            StoreError::Forbidden { .. } => HistoryError::Fenced {
                thread: self.thread.to_string(),
            },
            StoreError::NoThread(_) => HistoryError::Gone(self.thread.to_string()),
            other => HistoryError::Store(other),
        }
    }

    async fn messages(&self, read: HistoryRead) -> Result<Vec<Message>, HistoryError> {
        let read = self.store.history_messages(self.fence(), read).await;
        read.map_err(|e| self.refused(e))
    }

    async fn map(&self, read: HistoryRead) -> Result<Map<String, Value>, HistoryError> {
        let read = self.store.history_map(self.fence(), read).await;
        read.map_err(|e| self.refused(e))
    }

    /// Stored messages with sequence numbers in `from..=through`, clipped to the anchor.
    pub async fn collect(&self, from: u64, through: u64) -> Result<Vec<Message>, HistoryError> {
        let through = through.min(self.anchor);
        self.messages(HistoryRead::Range { from, through }).await
    }

    /// The same range converted straight from storage to model messages
    /// (context-visible messages only).
    pub async fn model_messages(
        &self,
        from: u64,
        through: u64,
    ) -> Result<Vec<ModelMessage>, HistoryError> {
        let messages = self.collect(from, through).await?;
        Ok(into_model_messages(messages))
    }

    /// Up to `limit` messages strictly before `cursor` (or before the end of
    /// the anchored history), oldest first.
    pub async fn before(
        &self,
        cursor: Option<u64>,
        limit: usize,
    ) -> Result<HistoryPage, HistoryError> {
        let end = cursor.unwrap_or(self.anchor + 1).min(self.anchor + 1);
        let messages = self.messages(HistoryRead::Before { end, limit }).await?;
        let first = messages.first().map(|m| m.seq);
        // More lies before the page when the page is full and does not
        // start at the thread's first message.
        let next_cursor = first.filter(|_| messages.len() == limit).filter(|&s| s > 1);
        Ok(HistoryPage {
            messages,
            next_cursor,
        })
    }

    /// Every stored message visible to the step up to the anchor (context-
    /// hidden ones included), except those of runs still queued.
    pub async fn visible(&self) -> Result<Vec<Message>, HistoryError> {
        let anchor = self.anchor;
        self.messages(HistoryRead::Visible { anchor }).await
    }

    /// The visible messages (as [`visible`](History::visible)) that a
    /// reader holding `cached` lacks: the history epoch, whether the answer
    /// is all of them, and the messages.
    pub(crate) async fn visible_after(
        &self,
        cached: Option<CachedThrough>,
    ) -> Result<(u64, bool, Vec<Message>), HistoryError> {
        let read = self
            .store
            .history_visible(self.fence(), self.anchor, cached)
            .await;
        read.map_err(|e| self.refused(e))
    }

    pub(crate) fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// The runtime's default context: every context-visible message up to the
    /// anchor, except the messages of runs still waiting in the queue: those
    /// belong to their own run and enter context when it starts (K1, A4).
    pub async fn default_context(&self) -> Result<Vec<ModelMessage>, HistoryError> {
        let anchor = self.anchor;
        let messages = self.messages(HistoryRead::Visible { anchor }).await?;
        Ok(into_model_messages(messages))
    }
}

/// The thread as a resolver sees it: read-only. It has no way to change
/// message visibility, by construction (SPEC M4):
///
/// ```compile_fail,E0599
/// fn hide(thread: &pai_runtime::context::ResolverThread<'_>) {
///     thread.update_visibility("msg1", pai_runtime::message::Visibility::CONTEXT_ONLY);
/// }
/// ```
pub struct ResolverThread<'a> {
    pub(crate) history: &'a History<'a>,
}

impl fmt::Debug for ResolverThread<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolverThread")
            .field("thread", &self.history.thread)
            .finish()
    }
}

impl ResolverThread<'_> {
    /// The thread's id.
    pub fn id(&self) -> &str {
        self.history.thread
    }

    /// Server-written, client-readable thread metadata.
    pub async fn metadata(&self) -> Result<Map<String, Value>, HistoryError> {
        self.history.map(HistoryRead::Metadata).await
    }

    /// Server-only thread metadata.
    pub async fn private_metadata(&self) -> Result<Map<String, Value>, HistoryError> {
        self.history.map(HistoryRead::PrivateMetadata).await
    }
}

/// Input of `resolve_model_context`.
#[derive(Debug)]
pub struct ContextInput<'a> {
    /// The step being resolved, numbered from 0 across the run's episodes.
    pub step: u32,
    /// The thread's stored history as of the step's start (its anchor, SPEC
    /// M1): what a resolver reads to build the context.
    pub history: &'a History<'a>,
    /// The thread's metadata, read-only (SPEC M4).
    pub thread: &'a ResolverThread<'a>,
}

/// One link of the resolver onion: resolves the context downstream of it,
/// with `base` replacing the innermost leaf when given.
pub(crate) trait ContextLink: Send + Sync {
    fn resolve(
        &self,
        base: Option<Vec<ModelMessage>>,
    ) -> HookFuture<'_, HookResult<Vec<ModelMessage>>>;
}

/// The `next` of `resolve_model_context` (SPEC M2).
///
/// [`run`](ContextNext::run) resolves the downstream chain once and memoizes
/// it: a second call does not run the inner hooks again.
/// [`with_base`](ContextNext::with_base) runs the inner hooks over `base`
/// instead of the runtime's default leaf.
pub struct ContextNext<'a> {
    link: &'a dyn ContextLink,
    base: Option<Vec<ModelMessage>>,
    memo: OnceCell<HookResult<Vec<ModelMessage>>>,
    failure: &'a FailureCell,
}

impl fmt::Debug for ContextNext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextNext")
            .field("base", &self.base.as_ref().map(Vec::len))
            .field("resolved", &self.memo.initialized())
            .finish()
    }
}

impl<'a> ContextNext<'a> {
    pub(crate) fn new(
        link: &'a dyn ContextLink,
        base: Option<Vec<ModelMessage>>,
        failure: &'a FailureCell,
    ) -> ContextNext<'a> {
        ContextNext {
            link,
            base,
            memo: OnceCell::new(),
            failure,
        }
    }

    pub(crate) fn failure(&self) -> &'a FailureCell {
        self.failure
    }

    /// The downstream context, resolved at most once per step.
    pub async fn run(&self) -> HookResult<Vec<ModelMessage>> {
        self.memo
            .get_or_init(|| self.link.resolve(self.base.clone()))
            .await
            .clone()
    }

    /// The downstream chain run over `base` instead of the default leaf.
    pub async fn with_base(&self, base: Vec<ModelMessage>) -> HookResult<Vec<ModelMessage>> {
        self.link.resolve(Some(base)).await
    }
}

impl ContextLink for ContextNext<'_> {
    fn resolve(
        &self,
        base: Option<Vec<ModelMessage>>,
    ) -> HookFuture<'_, HookResult<Vec<ModelMessage>>> {
        match base {
            Some(b) => HookFuture::new(self.with_base(b)),
            None => HookFuture::new(self.run()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SPEC M3, H5: every read is fenced to the owning agent and the
    /// thread's incarnation; a thread that is gone says so.
    #[tokio::test]
    async fn m3_reads_are_fenced_to_agent_and_incarnation() {
        let store = StoreHandle::default();
        let scope = crate::store::handle::Scope {
            thread: "t",
            agent: "agent",
            owner: "owner",
        };
        store.open(&scope).await.unwrap();
        let ok = History::new(&store, "t", "agent", 1, 0);
        assert_eq!(ok.collect(1, 9).await, Ok(vec![]));
        let fenced = HistoryError::Fenced { thread: "t".into() };
        let other_agent = History::new(&store, "t", "intruder", 1, 0);
        assert_eq!(other_agent.collect(1, 9).await, Err(fenced.clone()));
        let old_incarnation = History::new(&store, "t", "agent", 2, 0);
        assert_eq!(old_incarnation.before(None, 5).await, Err(fenced));
        let gone = History::new(&store, "gone", "agent", 1, 0);
        let gone_err = HistoryError::Gone("gone".into());
        assert_eq!(gone.collect(1, 9).await, Err(gone_err));
        let thread = ResolverThread { history: &ok };
        assert_eq!(thread.id(), "t");
    }
}
