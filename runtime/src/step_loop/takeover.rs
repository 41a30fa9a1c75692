//! A run taken over from a holder whose lease expired (SPEC K3, K5): it
//! continues from its last committed step, whose transition it decides
//! first (A1–A3), as the holder would have: calls of that step whose
//! results were never committed run again (same idempotency key: run id +
//! call id, so a tool can deduplicate its side effect; a call whose result
//! is committed never does), calls whose approval or client result is
//! committed take it without being put to `before_tool_call` again, then
//! the step's `after_step` hooks are asked again (their decision is never
//! committed) unless the store recorded the transition (a steer taken, a
//! wait), with the steers stored before the step's last commit, which its
//! holder heard of (A3). Only a run that goes on runs `prepare_run` and its next step.

use std::collections::BTreeSet;

use super::episode::{EpisodeEnd, Settled};
use super::exec::{Exec, Fail};
use super::step::{Steering, StepEnded, tool_calls};
use super::tools::{CANCELLED_UNSTORED, Call, GivenUp, ToolsDone};
use crate::event::{EventKind, RunStage, Transition};
use crate::id::CallId;
use crate::lifecycle::ToolResult;
use crate::message::{Message, Outcome, Part, Producer, ResultSource, Role};
use crate::patch::Route;
use crate::store::{HandOver, RunEnd, RunStatus, StoredThread, WaitingCall};

/// The run's last committed step as the store holds it.
struct LastStep<'t> {
    step: u32,
    message: &'t Message,
    /// The step's calls, in order (none after an abort, S4).
    calls: Vec<Call>,
    /// Committed results of those calls, in call order.
    committed: Vec<ToolResult>,
    /// What the store recorded of the step's transition.
    handed_over: Option<HandOver>,
    /// Calls of the step the store records as let through by the policy,
    /// with their answers (T9), that have no committed result.
    recorded: Vec<WaitingCall>,
    /// The sequence number of the step's last stored message (its own, or
    /// its results'), if a user message of the run other than its trigger
    /// was stored before it: a steer stored before it was heard by the
    /// holder's `after_step` (A3).
    steer_bound: Option<u64>,
}

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// Decides how the run's last committed step ends (K3): its calls
    /// without a committed result first, then its transition.
    pub(super) async fn settle_last(&self) -> Result<Settled, Fail> {
        let read = self.sh.store.inspect(self.thread).await;
        let thread = read.map_err(|e| self.store_fail(RunStage::Resume, e))?;
        let Some(thread) = thread else {
            return Ok(Settled::GoesOn);
        };
        let Some(last) = last_step(&thread, self.run) else {
            return Ok(Settled::GoesOn);
        };
        if last.pai.step.is_none() {
            // A response (L12) committed before the holder stored the end.
            return Ok(Settled::Ended(EpisodeEnd::Run(responded(last))));
        }
        let last = LastStep::of(&thread, self.run, last);
        match last.handed_over {
            Some(HandOver::Wait) => Ok(Settled::Resumes),
            Some(HandOver::Steer) => {
                // Calls left pending by a step that handed over to a steer
                // are given up (A3), as its holder was about to.
                let pending = last.recorded;
                self.give_up(last.step, &pending, GivenUp::Completed)
                    .await?;
                Ok(Settled::GoesOn)
            }
            None => self.decide_last(&last).await,
        }
    }

    /// The last step's open calls, `after_step` asked again, the
    /// transition applied (A2, A3).
    async fn decide_last(&self, last: &LastStep<'_>) -> Result<Settled, Fail> {
        let orphans = last.open_calls();
        // The open calls reach the tools the holder's answering attempt
        // offered, as its step stored them (P6).
        let mut route = Route::new(self.sh.agent.model.clone());
        route.tools = last.message.pai.offered.clone();
        let done = match orphans.is_empty() {
            true => ToolsDone::default(),
            false => {
                let step = last.step;
                self.tools_of(step, &route, &orphans, &last.recorded)
                    .await?
            }
        };
        let results = in_call_order(&last.calls, &last.committed, &done.finals);
        let refusal = last.refusal();
        let ended = StepEnded {
            message: Some(last.message),
            // A refused step (S6) is stored blocked, with the refusal as
            // its reason: the taker decides it refused, as its holder did.
            abort: last.abort().filter(|_| refusal.is_none()),
            refusal: refusal.as_ref(),
            tool_calls: !last.calls.is_empty(),
            waiting: !done.pending.is_empty(),
        };
        let steers = match last.steer_bound {
            Some(seq) => Steering::Before(seq),
            None => Steering::Ignored,
        };
        let transition = self.after_step(last.step, &results, ended, steers).await?;
        self.settle_pending(last.step, &transition, done).await?;
        Ok(match transition {
            Transition::Wait => {
                let (calls, version) = self.lease.take_waited();
                Settled::Ended(EpisodeEnd::Wait(calls, version))
            }
            Transition::NextStep | Transition::Steer => Settled::GoesOn,
            // The run ends as the step's holder would have ended it.
            ended => match super::episode::episode_end(ended) {
                Some(end) => Settled::Ended(end),
                None => Settled::GoesOn,
            },
        })
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
        let Some((last, calls)) = thread.as_ref().and_then(|t| orphans(t, self.run)) else {
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

impl<'t> LastStep<'t> {
    fn of(thread: &'t StoredThread, run: &str, message: &'t Message) -> LastStep<'t> {
        let step = message.pai.step.unwrap_or_default();
        let aborted = message.pai.outcome.is_some();
        let calls = match aborted {
            true => Vec::new(),
            false => tool_calls(&message.parts),
        };
        let committed: Vec<ToolResult> = results(&thread.messages)
            .filter(|r| calls.iter().any(|c| c.call_id == r.call_id))
            .collect();
        let record = thread.runs.iter().find(|r| r.id == run);
        let handed_over = record
            .and_then(|r| r.handed_over)
            .filter(|h| h.step == step)
            .map(|h| h.how);
        let open = |id: &CallId| {
            calls.iter().any(|c| c.call_id == *id) && !committed.iter().any(|r| r.call_id == *id)
        };
        let recorded = record
            .map(|r| r.waiting.iter().filter(|w| open(&w.call_id)).cloned())
            .into_iter()
            .flatten()
            .collect();
        let answers = |m: &&Message| {
            m.parts.iter().any(|p| {
                matches!(p, Part::ToolResult { call_id, .. } if calls.iter().any(|c| c.call_id == *call_id))
            })
        };
        let results_seq = thread.messages.iter().filter(answers).map(|m| m.seq).max();
        let last_seq = results_seq.unwrap_or(0).max(message.seq);
        let trigger = record.map(|r| r.trigger.as_str());
        let steer_bound = thread
            .messages
            .iter()
            .any(|m| {
                m.role == Role::User
                    && m.seq < last_seq
                    && m.pai.run_id.as_deref() == Some(run)
                    && Some(m.id.as_str()) != trigger
            })
            .then_some(last_seq);
        LastStep {
            step,
            message,
            calls,
            committed,
            handed_over,
            recorded,
            steer_bound,
        }
    }

    /// The step's calls without a committed result, in order.
    fn open_calls(&self) -> Vec<Call> {
        let done = |c: &&Call| self.committed.iter().any(|r| r.call_id == c.call_id);
        self.calls.iter().filter(|c| !done(c)).cloned().collect()
    }

    /// The step's abort (S4): its outcome and reason, stored on its
    /// replacement message.
    /// The provider's refusal the step was stored with (S6), if any.
    fn refusal(&self) -> Option<crate::model::Refusal> {
        let pai = &self.message.pai;
        match pai.outcome {
            Some(Outcome::Blocked) => crate::model::Refusal::from_reason(pai.reason.as_deref()?),
            _ => None,
        }
    }

    fn abort(&self) -> Option<(Outcome, &'t str)> {
        let pai = &self.message.pai;
        pai.outcome
            .map(|o| (o, pai.reason.as_deref().unwrap_or_default()))
    }
}

/// The run's last committed model step or response: its newest assistant
/// message written by the model, or by the lifecycle with an outcome (an
/// abort's replacement, S4, or a response, L12). Messages a hook stored
/// through the facade are neither.
fn last_step<'t>(thread: &'t StoredThread, run: &str) -> Option<&'t Message> {
    thread.messages.iter().rev().find(|m| {
        m.role == Role::Assistant
            && m.pai.run_id.as_deref() == Some(run)
            && (m.pai.producer == Producer::Model || m.pai.outcome.is_some())
    })
}

/// How a run whose response is committed ends (L12).
fn responded(message: &Message) -> RunEnd {
    RunEnd {
        status: RunStatus::Completed,
        outcome: message.pai.outcome.unwrap_or(Outcome::Completed),
        reason: message.pai.reason.clone(),
    }
}

/// Every stored tool result, as the hooks saw it last.
fn results(messages: &[Message]) -> impl Iterator<Item = ToolResult> + '_ {
    messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult {
                call_id,
                tool,
                status,
                source,
                output,
            } => Some(ToolResult {
                call_id: call_id.clone(),
                tool: tool.clone(),
                status: *status,
                source: *source,
                output: output.clone(),
            }),
            _ => None,
        })
}

/// The step's results, committed before and made now, in call order.
fn in_call_order(calls: &[Call], committed: &[ToolResult], made: &[ToolResult]) -> Vec<ToolResult> {
    calls
        .iter()
        .filter_map(|c| {
            let same = |r: &&ToolResult| r.call_id == c.call_id;
            committed
                .iter()
                .find(same)
                .or_else(|| made.iter().find(same))
        })
        .cloned()
        .collect()
}

/// The step number and the calls without a committed result of `run`'s
/// last committed step.
fn orphans(thread: &StoredThread, run: &str) -> Option<(u32, Vec<Call>)> {
    let message = last_step(thread, run)?;
    message.pai.step?;
    let last = LastStep::of(thread, run, message);
    let calls = last.open_calls();
    (!calls.is_empty()).then_some((last.step, calls))
}
