//! The run's default model context, kept between the steps of an episode
//! (SPEC M1, H6) so a step pays for what was appended since the last one,
//! not for the whole thread.
//!
//! The store numbers every change to stored messages other than an append
//! (its history epoch). While the epoch stays the same, the visible
//! messages through the last anchor are unchanged, so the context is the
//! cached one extended by the appends since. Pairing (H6) is a function
//! of the whole sequence, but only across open calls: a prefix after
//! which no call waits for its result pairs the same alone as inside any
//! longer sequence. The cache so keeps two parts:
//! - `settled`: a paired prefix whose every call was answered within it;
//! - `open`: the converted messages after it, paired afresh at each read.

use std::sync::{Mutex, MutexGuard};

use crate::context::{History, HistoryError};
use crate::message::{Message, ModelContent, ModelMessage};
use crate::model_view::{model_message, pair_tool_calls};
use crate::store::CachedThrough;

/// One episode's context cache. Cheap when cold; never shared between
/// episodes, so a takeover or a resume starts from a whole read.
#[derive(Debug, Default)]
pub(crate) struct ContextCache(Mutex<Cached>);

#[derive(Debug, Default)]
struct Cached {
    /// What the store last answered for: `None` while cold or lent.
    through: Option<CachedThrough>,
    incarnation: u64,
    settled: Vec<ModelMessage>,
    open: Vec<ModelMessage>,
    /// `through` while `settled` is lent out.
    lent: Option<CachedThrough>,
}

/// The context lent to one step: `messages` starts with the cache's
/// settled prefix of `settled` messages, which must come back unchanged.
#[derive(Debug)]
pub(crate) struct Lent {
    pub(crate) messages: Vec<ModelMessage>,
    pub(crate) settled: usize,
}

impl ContextCache {
    fn lock(&self) -> MutexGuard<'_, Cached> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Brings the cache up to `history`'s anchor: one store read of what
    /// it lacks (everything, after a change other than an append).
    pub(crate) async fn refresh(&self, history: &History<'_>) -> Result<(), HistoryError> {
        let incarnation = history.incarnation();
        let cached = {
            let c = self.lock();
            c.through.filter(|_| c.incarnation == incarnation)
        };
        let (epoch, whole, messages) = history.visible_after(cached).await?;
        let through = CachedThrough {
            epoch,
            seq: history.anchor(),
        };
        self.lock().extend(incarnation, through, whole, messages);
        Ok(())
    }

    /// A copy of the context (for a resolver, which may keep it).
    pub(crate) fn context(&self) -> Vec<ModelMessage> {
        let c = self.lock();
        let mut out = Vec::with_capacity(c.settled.len() + c.open.len());
        out.extend(c.settled.iter().cloned());
        out.extend(pair_tool_calls(c.open.clone()));
        out
    }

    /// The context, its settled prefix moved out rather than copied. Until
    /// it comes back ([`give_back`](ContextCache::give_back)) the cache is
    /// cold: a step that never returns it costs the next one a whole read.
    pub(crate) fn lend(&self) -> Lent {
        let mut c = self.lock();
        let mut messages = std::mem::take(&mut c.settled);
        let settled = messages.len();
        messages.extend(pair_tool_calls(c.open.clone()));
        c.lent = c.through.take();
        Lent { messages, settled }
    }

    /// Takes back a lent context whose first `settled` messages are the
    /// settled prefix, unchanged.
    pub(crate) fn give_back(&self, mut messages: Vec<ModelMessage>, settled: usize) {
        let mut c = self.lock();
        if c.through.is_some() || messages.len() < settled {
            return;
        }
        messages.truncate(settled);
        c.settled = messages;
        c.through = c.lent.take();
    }
}

impl Cached {
    fn extend(
        &mut self,
        incarnation: u64,
        through: CachedThrough,
        whole: bool,
        messages: Vec<Message>,
    ) {
        if whole || self.through.is_none() {
            self.settled.clear();
            self.open.clear();
        }
        self.open
            .extend(messages.into_iter().filter_map(model_message));
        let closed = closed_prefix(&self.open);
        if closed > 0 {
            let done: Vec<ModelMessage> = self.open.drain(..closed).collect();
            self.settled.extend(pair_tool_calls(done));
        }
        self.incarnation = incarnation;
        self.through = Some(through);
        self.lent = None;
    }
}

/// The length of the longest prefix of `messages` after which no call is
/// open: each result closes the earliest open call with its id, as
/// pairing matches them (H6).
fn closed_prefix(messages: &[ModelMessage]) -> usize {
    let mut open: Vec<&str> = Vec::new();
    let mut closed = 0;
    for (i, m) in messages.iter().enumerate() {
        for c in &m.content {
            match c {
                ModelContent::ToolCall { call_id, .. } => open.push(call_id),
                ModelContent::ToolResult { call_id, .. } => {
                    if let Some(k) = open.iter().position(|id| *id == call_id.as_str()) {
                        open.remove(k);
                    }
                }
                ModelContent::Text { .. } => {}
            }
        }
        if open.is_empty() {
            closed = i + 1;
        }
    }
    closed
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
