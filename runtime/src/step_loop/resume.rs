//! A resumed run's waiting calls (SPEC T7, T9, K5): each gets its final
//! result from its answer (approved calls run now), every result passes
//! `after_tool_result` (T4), and they are committed in call order in the
//! one commit that forgets the waiting calls, so a call whose result is
//! committed never runs again.

use serde_json::Value;

use super::exec::{Exec, Fail};
use super::tools::{CANCELLED_WAITING, Call, Ready};
use crate::event::{EventKind, RunStage};
use crate::lifecycle::ToolResult;
use crate::message::{ResultSource, ToolStatus};
use crate::store::{Answer, Appended, WaitingCall};

/// How the waiting calls end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resolution {
    /// As their answers say.
    Answered,
    /// The run will not go on (cancelled, or it responded): a call that
    /// has not run and has no final answer gets a cancelled result with
    /// this text (T8); a denial or a client's output stays the result.
    GiveUp(&'static str),
}

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// Gives every waiting call of the run its final result and commits them.
    pub(super) async fn resume(&self, how: Resolution) -> Result<(), Fail> {
        let waiting = self
            .sh
            .store
            .waiting_calls(self.thread, self.run)
            .await
            .map_err(|e| self.store_fail(RunStage::Resume, e))?;
        let Some(step) = waiting.first().map(|w| w.step) else {
            return Ok(());
        };
        let calls: Vec<Call> = waiting.iter().map(Call::waiting).collect();
        let mut ready: Vec<Ready> = Vec::new();
        let mut early = vec![None; calls.len()];
        for (i, w) in waiting.iter().enumerate() {
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
        let finals = self.run_ready(step, &calls, ready, early).await?;
        let message = self.results_message(step, &finals);
        let id = message.id.clone();
        let appended = self.commit_resumed(message).await?;
        self.emit(|| EventKind::CommitToolResults {
            step,
            message: id,
            version: appended.version,
        });
        Ok(())
    }

    /// Commits a resumed run's results and forgets its waiting calls in
    /// one write under the lease (K5), and tells the thread's watchers.
    async fn commit_resumed(&self, message: crate::message::Message) -> Result<Appended, Fail> {
        let stage = RunStage::CommitToolResults;
        self.writable(stage)?;
        let mut attached = self.sh.process.attach(self.thread).await;
        let store = &self.sh.store;
        let committed = store.commit_resumed(self.thread, self.run, self.token, vec![message]);
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
        // A denial or a client's output is final whatever happens to the
        // run; an approved call that has not run, or a call nobody
        // answered, is given up when the run will not go on.
        let (answer, text) = match (how, w.answer.as_ref()) {
            (Resolution::GiveUp(text), Some(Answer::Approved) | None) => (None, text),
            (_, answer) => (answer, CANCELLED_WAITING),
        };
        match answer {
            None => Ok(call.error(ResultSource::Cancelled, Value::String(text.into()))),
            Some(Answer::Denied { reason }) => {
                Ok(call.error(ResultSource::Denied, Value::String(reason.clone())))
            }
            Some(Answer::Submitted { output }) => Ok(ToolResult {
                call_id: call.call_id.clone(),
                tool: call.tool.clone(),
                status: ToolStatus::Output,
                source: ResultSource::Client,
                output: output.clone(),
            }),
            Some(Answer::Approved) => {
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
                        Ok(call.error(ResultSource::UnknownTool, Value::String(msg)))
                    }
                }
            }
        }
    }
}
