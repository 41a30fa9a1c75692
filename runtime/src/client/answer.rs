//! Answering a waiting run's calls (SPEC T7, T9): approve, deny, submit a
//! client tool's output. Each answer is recorded at once; the answer that
//! completes the step's set wakes the thread's driver to resume the run.

use serde_json::Value;

use super::{ClientError, ThreadHandle};
use crate::event::EventKind;
use crate::id::CallId;
use crate::store::{Answer, AnswerMiss, WaitingCall};

impl<C: Send + Sync + 'static> ThreadHandle<C> {
    /// Approves a waiting call of an approval tool: it runs when the run resumes.
    pub async fn approve(&self, call_id: &str) -> Result<(), ClientError> {
        self.answer(call_id, Answer::Approved).await
    }

    /// Denies a waiting call of an approval tool: it never runs, and the
    /// model sees `reason` as its error.
    pub async fn deny(&self, call_id: &str, reason: impl Into<String>) -> Result<(), ClientError> {
        let reason = reason.into();
        self.answer(call_id, Answer::Denied { reason }).await
    }

    /// Submits the output of a waiting client tool call; it must match the
    /// tool's output type, or it is refused and nothing is stored.
    pub async fn submit_tool_result(
        &self,
        call_id: &str,
        output: Value,
    ) -> Result<(), ClientError> {
        self.answer(call_id, Answer::Submitted { output }).await
    }

    /// The calls the thread's current run waits on, with their answers so far.
    pub async fn waiting(&self) -> Result<Vec<WaitingCall>, ClientError> {
        let t = self.read_scoped().await?;
        // Only the current run has waiting calls: an end or a resume's
        // commit forgets them.
        let waiting = t.runs.into_iter().find(|r| !r.waiting.is_empty());
        Ok(waiting.map(|r| r.waiting).unwrap_or_default())
    }

    async fn answer(&self, call_id: &str, answer: Answer) -> Result<(), ClientError> {
        let sh = self.shared();
        self.check_output(call_id, &answer).await?;
        // One commit (H1): watchers hear of it, in version order.
        let mut attached = sh.process.attach(&self.id).await;
        let done = sh
            .store
            .answer(&self.scope(), call_id, answer.clone())
            .await?
            .map_err(|miss| miss_error(call_id, miss))?;
        let start = done.ready && sh.worker.drives_sends() && attached.claim_driver();
        sh.told(&mut attached, done.version);
        drop(attached);
        sh.emit(&self.id, &done.run, || EventKind::Answered {
            call_id: call_id.into(),
            answer,
            version: done.version,
        });
        if start {
            tokio::spawn(crate::step_loop::drive(sh.clone(), self.id.clone()));
        }
        Ok(())
    }

    /// A submitted output must match the tool's output type (T7).
    async fn check_output(&self, call_id: &str, answer: &Answer) -> Result<(), ClientError> {
        let Answer::Submitted { output } = answer else {
            return Ok(());
        };
        let Some(call) = self
            .waiting()
            .await?
            .into_iter()
            .find(|c| c.call_id == call_id)
        else {
            return Err(ClientError::NotWaiting {
                call: call_id.into(),
            });
        };
        let tools = &self.shared().agent.tools;
        let Some(tool) = tools.iter().find(|t| t.spec().name == call.tool) else {
            return Ok(());
        };
        tool.check_output(output)
            .map_err(|message| ClientError::InvalidOutput {
                call: call_id.into(),
                tool: call.tool.clone(),
                message,
            })
    }
}

fn miss_error(call_id: &str, miss: AnswerMiss) -> ClientError {
    let call = CallId::from(call_id);
    match miss {
        AnswerMiss::NotWaiting => ClientError::NotWaiting { call },
        AnswerMiss::AlreadyAnswered => ClientError::AlreadyAnswered { call },
        AnswerMiss::WrongKind(kind) => ClientError::WrongAnswer {
            call,
            kind: kind.as_str(),
        },
    }
}
