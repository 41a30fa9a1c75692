//! A step's waiting calls (SPEC T7, T9, K5): each gets its final result
//! from its answer (approved calls run now), every result passes
//! `after_tool_result` (T4), and they are committed in call order in the
//! one commit that forgets the waiting calls, so a call whose result is
//! committed never runs again. The calls are answerable from the moment
//! their step's policy let them through: answered while the step's backend
//! tools still ran, they are resolved in that step, without a wait (T9).

use super::exec::{Exec, Fail};
use super::tools::{Call, GivenUp, Ready, given_up};
use crate::event::{EventKind, RunStage};
use crate::lifecycle::ToolResult;
use crate::store::{Answer, Appended, WaitingCall};

/// How the waiting calls end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resolution {
    /// As their answers say.
    Answered,
    /// The run will not go on (cancelled, or it responded): a call that
    /// has not run and has no final answer gets a cancelled result that
    /// says why (T8); a denial or a client's output stays the result.
    GiveUp(GivenUp),
}

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// Gives every waiting call of the run its final result and commits them.
    pub(super) async fn resume(&self, how: Resolution) -> Result<(), Fail> {
        if let Some((step, finals)) = self.resolve_waiting(how).await? {
            self.commit_answered(step, &finals).await?;
        }
        Ok(())
    }

    /// The final results of the calls the run waits on, resolved `how`
    /// (each through `after_tool_result`), not committed yet.
    pub(super) async fn resolve_waiting(
        &self,
        how: Resolution,
    ) -> Result<Option<(u32, Vec<ToolResult>)>, Fail> {
        let waiting = self.recorded_calls(RunStage::Resume).await?;
        let Some(step) = waiting.first().map(|w| w.step) else {
            return Ok(None);
        };
        let calls: Vec<Call> = waiting.iter().map(Call::waiting).collect();
        let finals = self.resolve(step, &calls, &waiting, how).await?;
        Ok(Some((step, finals.into_iter().flatten().collect())))
    }

    /// The calls the store records for the run, with their answers.
    async fn recorded_calls(&self, stage: RunStage) -> Result<Vec<WaitingCall>, Fail> {
        self.sh
            .store
            .waiting_calls(self.thread, self.run)
            .await
            .map_err(|e| self.store_fail(stage, e))
    }

    /// Makes the step's `pending` calls answerable while its backend tools
    /// run (T9): one commit, told to the thread's watchers. Those already
    /// `recorded` as answerable (a taker's, K3) keep their answers and are
    /// not announced again.
    pub(super) async fn await_calls(
        &self,
        pending: &[WaitingCall],
        recorded: &[WaitingCall],
    ) -> Result<(), Fail> {
        let stage = RunStage::Tools;
        self.writable(stage)?;
        let mut attached = self.sh.process.attach(self.thread).await;
        let fence = (self.thread, self.run, self.token);
        let done = self.sh.store.await_calls(fence, pending.to_vec()).await;
        let version = match done {
            Ok(version) => version,
            // A cancel came first (K6): the calls are given up with the
            // step's closing results, never made answerable.
            Err(e) if self.cancelled("await", &e) => return Ok(()),
            Err(e) => return Err(self.store_fail(stage, e)),
        };
        self.sh.told(&mut attached, version);
        drop(attached);
        let new = |c: &&WaitingCall| !recorded.iter().any(|r| r.call_id == c.call_id);
        self.emit(|| EventKind::Awaiting {
            calls: pending
                .iter()
                .filter(new)
                .map(|c| c.call_id.clone())
                .collect(),
            version,
        });
        Ok(())
    }

    /// The step's pending calls with their answers, if every one of them
    /// has been answered by now (T9).
    pub(super) async fn answered_early(
        &self,
        pending: &[WaitingCall],
    ) -> Result<Option<Vec<WaitingCall>>, Fail> {
        let recorded = self.recorded_calls(RunStage::Tools).await?;
        let all = pending.iter().all(|p| {
            recorded
                .iter()
                .any(|r| r.call_id == p.call_id && r.answer.is_some())
        });
        Ok(all.then_some(recorded))
    }

    /// The results of calls answered while the step's backend tools ran,
    /// put at their places among the step's `finals` (T9).
    pub(super) async fn resolve_early(
        &self,
        step: u32,
        calls: &[Call],
        answered: &[WaitingCall],
        finals: &mut [Option<ToolResult>],
    ) -> Result<(), Fail> {
        let resolved = self
            .resolve(step, calls, answered, Resolution::Answered)
            .await?;
        for (slot, r) in finals.iter_mut().zip(resolved) {
            if r.is_some() {
                *slot = r;
            }
        }
        Ok(())
    }

    /// Final results, at their calls' places among `calls`, for the
    /// `waiting` calls: from their answers, approved calls run now.
    async fn resolve(
        &self,
        step: u32,
        calls: &[Call],
        waiting: &[WaitingCall],
        how: Resolution,
    ) -> Result<Vec<Option<ToolResult>>, Fail> {
        let mut ready: Vec<Ready> = Vec::new();
        let mut early = vec![None; calls.len()];
        for w in waiting {
            let Some(i) = calls.iter().position(|c| c.call_id == w.call_id) else {
                continue;
            };
            match self.answered(&calls[i], w, how) {
                Ok(result) => {
                    self.emit(|| EventKind::ToolEnd {
                        step,
                        result: result.clone(),
                        detail: None,
                    });
                    early[i] = Some(result);
                }
                Err(tool) => ready.push((i, tool, w.input.clone())),
            }
        }
        self.run_batch(step, calls, ready, early).await
    }

    /// Commits a resumed run's results and forgets its waiting calls in
    /// one write under the lease, with the run metadata the results'
    /// hooks wrote (K5), and tells the thread's watchers.
    pub(super) async fn commit_resumed(
        &self,
        message: crate::message::NewMessage,
        metadata: Option<serde_json::Value>,
    ) -> Result<Appended, Fail> {
        let stage = RunStage::CommitToolResults;
        self.writable(stage)?;
        let mut attached = self.sh.process.attach(self.thread).await;
        let store = &self.sh.store;
        let (thread, run, token) = (self.thread, self.run, self.token);
        let committed = store.commit_resumed(thread, run, token, vec![message], metadata);
        let appended = committed.await.map_err(|e| self.store_fail(stage, e))?;
        self.sh.told(&mut attached, appended.version);
        Ok(appended)
    }

    /// A waiting call's result from its answer, or the tool to run it with
    /// (an approved call). A call without an answer here is given up.
    fn answered(
        &self,
        call: &Call,
        w: &WaitingCall,
        how: Resolution,
    ) -> Result<ToolResult, std::sync::Arc<dyn crate::tool::Tool>> {
        // Answered: a call without an answer here is a cancelled run's
        // (a waiting run resumes unanswered only for its cancel, T9).
        let why = match how {
            Resolution::GiveUp(why) => return Ok(given_up(call, w.answer.as_ref(), why)),
            Resolution::Answered => GivenUp::Cancelled,
        };
        let Some(Answer::Approved) = w.answer else {
            return Ok(given_up(call, w.answer.as_ref(), why));
        };
        let tool = self
            .sh
            .agent
            .tools
            .iter()
            .find(|t| t.spec().name == call.tool);
        match tool {
            Some(t) => Err(t.clone()),
            None => {
                let msg = format!("tool {} is not registered", call.tool);
                Ok(call.error(
                    crate::message::ResultSource::UnknownTool,
                    serde_json::Value::String(msg),
                ))
            }
        }
    }
}
