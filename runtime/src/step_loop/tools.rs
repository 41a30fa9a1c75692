//! A step's tool calls (SPEC T1–T5, T8): every `before_tool_call` first, then
//! ready backend tools in parallel, every final result through
//! `after_tool_result`, results committed in call order. Calls of approval
//! and client tools are left pending: the step waits on them (T7).

use std::future::Future as _;
use std::sync::Arc;

use serde_json::Value;
use tokio::task::{JoinError, JoinSet};
use tracing::Instrument;

use super::exec::{Exec, Fail};
use crate::event::{EventKind, RunStage};
use crate::future::guarded;
use crate::id::CallId;
use crate::lifecycle::{
    Phase, ToolCallDecision, ToolCallInput, ToolResult, ToolResultDecision, ToolResultInput,
};
use crate::message::{ResultSource, ToolStatus};
use crate::patch::Route;
use crate::store::{Answer, WaitingCall};
use crate::tool::dyn_tool::call_kind;
use crate::tool::{Tool, ToolCx, ToolKind, ToolOutcome};

/// What is stored (and what the model reads) in place of a thrown tool
/// error's detail, which goes to logs only (SPEC T5).
const THROWN_TOOL_ERROR: &str = "The tool failed with an internal error.";

// What a cancelled result says (T8, A3, L12): what happened to the call,
// never only what did not.

/// A call whose tool was running when the run was cancelled (T8).
pub(super) const CANCELLED_RUNNING: &str = "The run was cancelled while the tool was running.";

/// A call the run was cancelled before its tool started (T8).
pub(super) const CANCELLED_UNSTARTED: &str = "The run was cancelled before the tool started.";

/// A call of a run taken over after a cancel whose result no holder
/// stored: it may have started with the holder that lost the run (K3).
pub(super) const CANCELLED_UNSTORED: &str =
    "The run was cancelled before the call's result was stored.";

const CANCELLED_UNANSWERED: &str = "The run was cancelled while the call waited for its answer.";
const CANCELLED_APPROVED: &str =
    "The run was cancelled after the call was approved, before it ran.";
const COMPLETED_UNANSWERED: &str = "The run completed while the call waited for its answer.";
const COMPLETED_APPROVED: &str = "The run completed after the call was approved, before it ran.";
const RESPONDED_UNANSWERED: &str =
    "The run ended with a response while the call waited for its answer.";
const RESPONDED_APPROVED: &str =
    "The run ended with a response after the call was approved, before it ran.";

/// Why a client or approval call that has not run is given up, which its
/// cancelled result says, and whether it had been approved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GivenUp {
    /// The run was cancelled (or its thread deleted, T8, H5).
    Cancelled,
    /// The run completed without it (A3).
    Completed,
    /// `prepare_run` responded on the resume (L12).
    Responded,
}

impl GivenUp {
    /// The text of the result: the call waited for its answer, or it was
    /// approved and never ran.
    fn text(self, approved: bool) -> &'static str {
        match (self, approved) {
            (GivenUp::Cancelled, false) => CANCELLED_UNANSWERED,
            (GivenUp::Cancelled, true) => CANCELLED_APPROVED,
            (GivenUp::Completed, false) => COMPLETED_UNANSWERED,
            (GivenUp::Completed, true) => COMPLETED_APPROVED,
            (GivenUp::Responded, false) => RESPONDED_UNANSWERED,
            (GivenUp::Responded, true) => RESPONDED_APPROVED,
        }
    }
}

/// One tool call the model asked for.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub(super) call_id: CallId,
    pub(super) tool: String,
    pub(super) input: Value,
}

impl Call {
    /// The call a waiting call stands for.
    pub(super) fn waiting(w: &WaitingCall) -> Call {
        Call {
            call_id: w.call_id.clone(),
            tool: w.tool.clone(),
            input: w.input.clone(),
        }
    }

    /// A final result for this call that never ran (or was cut short).
    pub(super) fn error(&self, source: ResultSource, output: Value) -> ToolResult {
        ToolResult {
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            status: ToolStatus::Error,
            source,
            output,
        }
    }
}

/// A call the policy let through to a registered tool.
pub(super) type Ready = (usize, Arc<dyn Tool>, Value);

/// What a finished tool task returns: its call's index, its input when an
/// `on_output` handler will read it, and its outcome (or panic).
type Finished = (usize, Option<Value>, Result<ToolOutcome, String>);

/// What a step's tools left: final results in call order, and the calls
/// still waiting for a client (T7).
#[derive(Debug, Default)]
pub(super) struct ToolsDone {
    pub(super) finals: Vec<ToolResult>,
    pub(super) pending: Vec<WaitingCall>,
}

/// A batch of tool calls: every call of the step, and which of them this
/// batch owes a final result.
#[derive(Clone, Copy)]
struct Batch<'c> {
    calls: &'c [Call],
    owed: &'c [bool],
}

/// What the policy decided for a step's calls.
struct Policy {
    ready: Vec<Ready>,
    early: Vec<Option<ToolResult>>,
    pending: Vec<WaitingCall>,
}

/// A pending call's result when the run will not wait for it: the
/// denial or the client's output recorded for it, else cancelled.
pub(super) fn given_up(call: &Call, answer: Option<&Answer>, why: GivenUp) -> ToolResult {
    match answer {
        Some(Answer::Denied { reason }) => {
            call.error(ResultSource::Denied, Value::String(reason.clone()))
        }
        Some(Answer::Submitted { output }) => ToolResult {
            call_id: call.call_id.clone(),
            tool: call.tool.clone(),
            status: ToolStatus::Output,
            source: ResultSource::Client,
            output: output.clone(),
        },
        Some(Answer::Approved) => call.error(ResultSource::Cancelled, why.text(true).into()),
        None => call.error(ResultSource::Cancelled, why.text(false).into()),
    }
}

/// A tool's outcome as a final result, and a thrown error's detail for the
/// logs only (T5).
fn outcome_result(call: &Call, out: Result<ToolOutcome, String>) -> (ToolResult, Option<String>) {
    let thrown = || Value::String(THROWN_TOOL_ERROR.into());
    let (status, source, output, detail) = match out {
        Ok(ToolOutcome::Output(v)) => (ToolStatus::Output, ResultSource::Tool, v, None),
        Ok(ToolOutcome::Fail(v)) => (ToolStatus::Error, ResultSource::Fail, v, None),
        Ok(ToolOutcome::Throw(m)) => (ToolStatus::Error, ResultSource::Throw, thrown(), Some(m)),
        Ok(ToolOutcome::InvalidInput(m)) => (
            ToolStatus::Error,
            ResultSource::InvalidInput,
            Value::String(format!("invalid input: {m}")),
            None,
        ),
        Err(panic) => (
            ToolStatus::Error,
            ResultSource::Throw,
            thrown(),
            Some(format!("panicked: {panic}")),
        ),
    };
    let result = ToolResult {
        call_id: call.call_id.clone(),
        tool: call.tool.clone(),
        status,
        source,
        output,
    };
    (result, detail)
}

impl<'a, C: Send + Sync + 'static> Exec<'a, C> {
    /// Runs one step's tool calls and commits their results; returns the
    /// final results in call order. `route` is the answering attempt's (P6).
    /// Client and approval calls are answerable from the moment the policy
    /// let them through (T9); if every one of them has its answer when the
    /// backend tools end, their results join this step's and nothing waits.
    pub(super) async fn tools(
        &self,
        step: u32,
        route: &Route,
        calls: &[Call],
    ) -> Result<ToolsDone, Fail> {
        self.tools_of(step, route, calls, &[]).await
    }

    /// [`Exec::tools`] for calls some of which the store records as let
    /// through already (`recorded`: a taker's calls of the last committed
    /// step, K3): those keep the input recorded for them and go to no
    /// `before_tool_call` again, nor are they made answerable again; once
    /// every such call has its answer, they are resolved here (approved
    /// calls run), as in one process.
    pub(super) async fn tools_of(
        &self,
        step: u32,
        route: &Route,
        calls: &[Call],
        recorded: &[WaitingCall],
    ) -> Result<ToolsDone, Fail> {
        let Policy {
            ready,
            early,
            pending,
        } = self.policy(step, route, calls, recorded).await?;
        if pending.len() > recorded.len() {
            self.await_calls(&pending, recorded).await?;
        }
        let backend = !ready.is_empty();
        let answers_in = backend || !recorded.is_empty();
        let mut finals = self.run_batch(step, calls, ready, early).await?;
        if answers_in && !pending.is_empty() && !self.stop.is_set() {
            let answered = self.answered_early(&pending).await?;
            if let Some(answered) = answered {
                self.resolve_early(step, calls, &answered, &mut finals)
                    .await?;
                let finals: Vec<ToolResult> = finals.into_iter().flatten().collect();
                self.commit_answered(step, &finals).await?;
                return Ok(ToolsDone {
                    finals,
                    pending: Vec::new(),
                });
            }
        }
        let finals: Vec<ToolResult> = finals.into_iter().flatten().collect();
        if !finals.is_empty() {
            self.commit_results(step, &finals).await?;
        }
        if self.stop.is_set() {
            self.give_up(step, &pending, GivenUp::Cancelled).await?;
            return Err(Fail::new(RunStage::Tools, "stopped"));
        }
        Ok(ToolsDone { finals, pending })
    }

    /// Runs the ready calls in parallel; every final result (early ones
    /// first: they are final already) passes `after_tool_result` (T4).
    /// Returns each final result at its call's place.
    pub(super) async fn run_batch(
        &self,
        step: u32,
        calls: &[Call],
        mut ready: Vec<Ready>,
        mut early: Vec<Option<ToolResult>>,
    ) -> Result<Vec<Option<ToolResult>>, Fail> {
        if !ready.is_empty() {
            self.confirm_lease().await?;
        }
        // A stop that came while the policy hooks or the lease check ran
        // (a cancel, a deletion): no tool starts after it (T8, H5).
        if self.stop.is_set() {
            for (i, _, _) in ready.drain(..) {
                early[i] = Some(self.never_started(step, &calls[i]));
            }
        }
        // The calls this batch owes a result: the ready and the early ones,
        // never a call left pending for a client (it is given up apart).
        let mut owed: Vec<bool> = early.iter().map(Option::is_some).collect();
        for (i, _, _) in &ready {
            owed[*i] = true;
        }
        let mut running = self.start(step, calls, ready);
        let mut finals: Vec<Option<ToolResult>> = vec![None; calls.len()];
        for (i, result) in early.into_iter().enumerate() {
            if let Some(r) = result {
                finals[i] = Some(self.final_result(step, &calls[i].input, r).await?);
            }
        }
        let batch = Batch { calls, owed: &owed };
        self.collect(step, batch, &mut running, &mut finals).await?;
        Ok(finals)
    }

    /// The cancelled result of a ready call the run stopped before it
    /// started (T8).
    fn never_started(&self, step: u32, call: &Call) -> ToolResult {
        let text = Value::String(CANCELLED_UNSTARTED.into());
        let result = call.error(ResultSource::Cancelled, text);
        self.emit(|| EventKind::ToolEnd {
            step,
            result: result.clone(),
            detail: None,
        });
        result
    }

    /// Pending calls the run will not wait for (it completes or is
    /// cancelled, A3, T8) get their final results, committed as one tool
    /// message that also ends their being answerable: a denial or a
    /// client's output recorded meanwhile stays (T9); every other call gets
    /// a cancelled result. `after_tool_result` sees each (T4).
    pub(super) async fn give_up(
        &self,
        step: u32,
        pending: &[WaitingCall],
        why: GivenUp,
    ) -> Result<(), Fail> {
        if pending.is_empty() {
            return Ok(());
        }
        // Closing first: an answer can no longer land between this read
        // and the commit below only to be overwritten (T9).
        let recorded = self
            .sh
            .store
            .close_calls(self.thread, self.run, self.token)
            .await
            .map_err(|e| self.store_fail(RunStage::Tools, e))?;
        let mut finals = Vec::with_capacity(pending.len());
        for w in pending {
            let c = Call::waiting(w);
            let answer = recorded
                .iter()
                .find(|r| r.call_id == w.call_id)
                .and_then(|r| r.answer.as_ref());
            let result = given_up(&c, answer, why);
            self.emit(|| EventKind::ToolEnd {
                step,
                result: result.clone(),
                detail: None,
            });
            finals.push(self.final_result(step, &w.input, result).await?);
        }
        self.commit_answered(step, &finals).await
    }

    /// `before_tool_call` for every call before any tool starts (T1): the
    /// calls that may run, and the results of those that may not (T3). A
    /// call the store records as let through (`recorded`) is pending as
    /// recorded, without asking again (K3).
    async fn policy(
        &self,
        step: u32,
        route: &Route,
        calls: &[Call],
        recorded: &[WaitingCall],
    ) -> Result<Policy, Fail> {
        let mut ready = Vec::new();
        let mut early = vec![None; calls.len()];
        let mut pending = Vec::new();
        for (i, c) in calls.iter().enumerate() {
            if let Some(w) = recorded.iter().find(|w| w.call_id == c.call_id) {
                pending.push(w.clone());
                continue;
            }
            let input = ToolCallInput {
                step,
                call_id: &c.call_id,
                tool: &c.tool,
                input: &c.input,
            };
            let decision = self
                .decide(Phase::BeforeToolCall, &input, |l, cx, i| {
                    l.before_tool_call(cx, i)
                })
                .await?;
            self.emit(|| EventKind::BeforeToolCall {
                step,
                call_id: c.call_id.clone(),
                tool: c.tool.clone(),
                decision: decision.clone(),
            });
            let input = match decision {
                ToolCallDecision::Reject { message } => {
                    early[i] = Some(c.error(ResultSource::Rejected, Value::String(message)));
                    continue;
                }
                ToolCallDecision::ReplaceInput(v) => v,
                ToolCallDecision::Continue => c.input.clone(),
            };
            // Approval is decided per call, on the input it would run with (T7).
            let kind = self
                .offered_tool(route, &c.tool)
                .map(|t| (call_kind(t.as_ref(), &input), t));
            match kind {
                Some((Ok(ToolKind::Backend), tool)) => ready.push((i, tool.clone(), input)),
                Some((Ok(kind), _)) => pending.push(WaitingCall {
                    call_id: c.call_id.clone(),
                    tool: c.tool.clone(),
                    input,
                    kind,
                    step,
                    answer: None,
                }),
                Some((Err(panic), _)) => {
                    tracing::warn!(call_id = %c.call_id, "approval predicate panicked: {panic}");
                    let thrown = Value::String(THROWN_TOOL_ERROR.into());
                    early[i] = Some(c.error(ResultSource::Throw, thrown));
                }
                None => {
                    let msg = format!("tool {} is not available in this step", c.tool);
                    early[i] = Some(c.error(ResultSource::UnknownTool, Value::String(msg)));
                }
            }
        }
        Ok(Policy {
            ready,
            early,
            pending,
        })
    }

    /// Starts the ready tools in parallel (T2), each guarded against panics.
    fn start(&self, step: u32, calls: &[Call], ready: Vec<Ready>) -> JoinSet<Finished> {
        let mut running = JoinSet::new();
        for (i, tool, input) in ready {
            let c = &calls[i];
            let cx = ToolCx {
                run_id: self.run.into(),
                call_id: c.call_id.clone(),
                idempotency_key: format!("{}/{}", self.run, c.call_id),
            };
            self.emit(|| EventKind::ToolStart {
                step,
                call_id: c.call_id.clone(),
                tool: c.tool.clone(),
                input: input.clone(),
                idempotency_key: cx.idempotency_key.clone(),
            });
            let kept = self
                .sh
                .agent
                .on_output
                .handles(&c.tool)
                .then(|| input.clone());
            let span = tracing::info_span!("tool", call_id = %c.call_id, tool = %c.tool);
            let task = async move { (i, kept, guarded(|| tool.call(cx, input)).await) };
            running.spawn(task.instrument(span));
        }
        running
    }

    /// Waits for the running tools in the order they finish. If the run is
    /// stopped first, the rest are cancelled and their cancelled results
    /// reach `after_tool_result` and the store (T8, T4, H6).
    async fn collect(
        &self,
        step: u32,
        batch: Batch<'_>,
        running: &mut JoinSet<Finished>,
        finals: &mut [Option<ToolResult>],
    ) -> Result<(), Fail> {
        let calls = batch.calls;
        while let Some(joined) = self.next_tool(running).await {
            let Some(joined) = joined else {
                running.abort_all();
                return self.cancel_rest(step, batch, finals).await;
            };
            let (i, kept, out) =
                joined.map_err(|e| Fail::new(RunStage::Tool, format!("tool task failed: {e}")))?;
            let (result, detail) = outcome_result(&calls[i], out);
            if let Some(d) = &detail {
                tracing::warn!(call_id = %result.call_id, tool = %result.tool, detail = %d, "tool threw");
            }
            self.emit(|| EventKind::ToolEnd {
                step,
                result: result.clone(),
                detail,
            });
            let input = kept.unwrap_or(Value::Null);
            finals[i] = Some(self.final_result(step, &input, result).await?);
        }
        Ok(())
    }

    /// A final result: `on_output` for a successful output of the tool or
    /// the client (T6), then `after_tool_result` (T4); what either writes
    /// to the run metadata commits with the results (K5).
    async fn final_result(
        &self,
        step: u32,
        input: &Value,
        result: ToolResult,
    ) -> Result<ToolResult, Fail> {
        self.batch.open();
        // Only the tool's own output and a client's submitted one have
        // status output; every other source is an error.
        let successful = result.status == ToolStatus::Output;
        if successful && self.sh.agent.on_output.handles(&result.tool) {
            self.on_output(step, input, &result).await?;
        }
        self.after_tool_result(step, result).await
    }

    /// Every call still without a final result gets a cancelled one (T8).
    async fn cancel_rest(
        &self,
        step: u32,
        batch: Batch<'_>,
        finals: &mut [Option<ToolResult>],
    ) -> Result<(), Fail> {
        for (i, c) in batch.calls.iter().enumerate() {
            if finals[i].is_some() || !batch.owed[i] {
                continue;
            }
            let text = Value::String(CANCELLED_RUNNING.into());
            let result = c.error(ResultSource::Cancelled, text);
            self.emit(|| EventKind::ToolEnd {
                step,
                result: result.clone(),
                detail: None,
            });
            finals[i] = Some(self.after_tool_result(step, result).await?);
        }
        Ok(())
    }

    /// The next tool to finish: `None` when none is left, `Some(None)` when
    /// the run was stopped first.
    async fn next_tool(
        &self,
        running: &mut JoinSet<Finished>,
    ) -> Option<Option<Result<Finished, JoinError>>> {
        if running.is_empty() {
            return None;
        }
        let mut stop = self.stop.wait();
        let mut joined = std::pin::pin!(running.join_next());
        std::future::poll_fn(|cx| {
            if std::pin::Pin::new(&mut stop).poll(cx).is_ready() {
                return std::task::Poll::Ready(Some(None));
            }
            joined.as_mut().poll(cx).map(|j| j.map(Some))
        })
        .await
    }

    /// `after_tool_result` over one final result (T4, L9); a replacement is
    /// what is stored and what the model sees (T5). The run metadata its
    /// hooks write is staged for the results' commit (K5).
    pub(super) async fn after_tool_result(
        &self,
        step: u32,
        mut result: ToolResult,
    ) -> Result<ToolResult, Fail> {
        self.batch.open();
        let input = ToolResultInput {
            step,
            result: &result,
        };
        let decision = self
            .decide(Phase::AfterToolResult, &input, |l, cx, i| {
                l.after_tool_result(cx, i)
            })
            .await?;
        if let ToolResultDecision::ReplaceOutput(v) = &decision {
            result.output = v.clone();
        }
        self.emit(|| EventKind::AfterToolResult {
            step,
            call_id: result.call_id.clone(),
            decision,
        });
        Ok(result)
    }

    /// The registered tool `name`, if the route offers it (P3, P6).
    fn offered_tool(&self, route: &Route, name: &str) -> Option<&'a Arc<dyn Tool>> {
        if let Some(allowed) = &route.tools
            && !allowed.iter().any(|a| a == name)
        {
            return None;
        }
        self.sh.agent.tools.iter().find(|t| t.spec().name == name)
    }
}
