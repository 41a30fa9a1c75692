//! A run taken over from a holder whose lease expired (SPEC K3, K5): it
//! continues from its last committed step. Calls of that step whose
//! results were never committed run again (same idempotency key: run id +
//! call id, so a tool can deduplicate its side effect); a call whose result
//! is committed never does.

use std::collections::BTreeSet;

use super::episode::EpisodeEnd;
use super::exec::{Exec, Fail};
use super::step::tool_calls;
use super::tools::Call;
use crate::event::{RunStage, Transition};
use crate::message::{Message, Part, Role};
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
        Ok(Some(EpisodeEnd::Wait(self.lease.take_waited())))
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
