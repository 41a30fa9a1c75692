//! A run taken over from a holder whose lease expired (SPEC K3, K5): it
//! continues from its last committed step. Calls of that step whose
//! results were never committed run again (same idempotency key: run id +
//! call id, so a tool can deduplicate its side effect); a call whose result
//! is committed never does.

use std::collections::BTreeSet;

use super::episode::EpisodeEnd;
use super::exec::{Exec, Fail};
use super::step::tool_calls;
use super::tools::{CANCELLED_UNSTORED, Call};
use crate::event::{EventKind, RunStage, Transition};
use crate::id::CallId;
use crate::lifecycle::ToolResult;
use crate::message::{Message, Part, ResultSource, Role};
use crate::patch::Route;

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// Runs the last committed step's calls that have no committed result;
    /// the episode ends here if some of them now wait for a client.
    pub(super) async fn rerun_orphans(&self, route: &Route) -> Result<Option<EpisodeEnd>, Fail> {
        let stage = RunStage::Resume;
        let read = self.sh.store.inspect(self.thread).await;
        let thread = read.map_err(|e| self.store_fail(stage, e))?;
        let Some((step, calls)) = thread.and_then(|t| orphans(&t.messages, self.run)) else {
            return Ok(None);
        };
        let done = self.tools(step, route, &calls).await?;
        if done.pending.is_empty() {
            return Ok(None);
        }
        self.settle_pending(step, &Transition::Wait, done).await?;
        let (calls, version) = self.lease.take_waited();
        Ok(Some(EpisodeEnd::Wait(calls, version)))
    }
}

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// A run taken over after a cancel (K3): the last committed step's
    /// calls without a committed result never run again; each gets a
    /// cancelled result that `after_tool_result` sees (T8, T4), committed
    /// under this episode's token.
    /// `closed` are results of this step already made (the waiting calls
    /// given up); the other calls without a committed result get theirs
    /// here, and all of them are committed as one message, in call order.
    pub(super) async fn close_orphans(
        &self,
        step: u32,
        closed: Vec<ToolResult>,
    ) -> Result<(), Fail> {
        let stage = RunStage::Resume;
        let read = self.sh.store.inspect(self.thread).await;
        let thread = read.map_err(|e| self.store_fail(stage, e))?;
        let Some((last, calls)) = thread.and_then(|t| orphans(&t.messages, self.run)) else {
            return self.commit_closed(step, closed).await;
        };
        let done: BTreeSet<CallId> = closed.iter().map(|r| r.call_id.clone()).collect();
        let mut finals = closed;
        for c in calls.iter().filter(|c| !done.contains(&c.call_id)) {
            let text = serde_json::Value::String(CANCELLED_UNSTORED.into());
            let result = c.error(ResultSource::Cancelled, text);
            self.emit(|| EventKind::ToolEnd {
                step: last,
                result: result.clone(),
                detail: None,
            });
            finals.push(self.after_tool_result(last, result).await?);
        }
        let place = |r: &ToolResult| calls.iter().position(|c| c.call_id == r.call_id);
        finals.sort_by_key(|r| place(r));
        self.commit_closed(last, finals).await
    }

    /// Commits closing results, if there are any.
    async fn commit_closed(&self, step: u32, finals: Vec<ToolResult>) -> Result<(), Fail> {
        if finals.is_empty() {
            return Ok(());
        }
        self.commit_answered(step, &finals).await
    }
}

/// The step number and the calls without a committed result of `run`'s
/// last committed assistant message.
fn orphans(messages: &[Message], run: &str) -> Option<(u32, Vec<Call>)> {
    let last = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && m.pai.run_id.as_deref() == Some(run))?;
    let step = last.pai.step?;
    let answered: BTreeSet<&str> = messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut calls: Vec<Call> = tool_calls(&last.parts);
    calls.retain(|c| !answered.contains(c.call_id.as_str()));
    (!calls.is_empty()).then_some((step, calls))
}
