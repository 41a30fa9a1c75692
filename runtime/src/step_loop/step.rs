//! One step (SPEC L2): take the anchor, resolve the context, prepare the
//! request, call the model, consume the stream, commit, run the tools, ask
//! `after_step`, decide the transition.

use std::sync::Mutex;
use std::sync::atomic::AtomicU32;

use super::exec::{Exec, Fail};
use super::stream::{Consumed, consume};
use super::tools::{Call, GivenUp, ToolsDone};
use super::transition::{StepEnd, transition};
use crate::attempt::{AttemptEvents, DefaultLeaf, ProviderAttempt, SentCounts};
use crate::clock::IdKind;
use crate::context::{ContextInput, ContextNext, History, ResolverThread};
use crate::error::FailureCell;
use crate::event::{EventKind, RunStage, Transition};
use crate::lifecycle::{AfterStepInput, Phase, StepDecision, StepInput, StreamKind, ToolResult};
use crate::message::{
    Message, ModelMessage, NewMessage, Outcome, Part, Producer, Role, Visibility,
};
use crate::model::{BoxStream, ModelRequest, Refusal, offered};
use crate::model_call::{AttemptPatch, ModelLink, ModelNext};
use crate::model_view::{carries_tools, pair_after, pair_tool_calls};
use crate::patch::{Overlay, Route};
use crate::store::WaitingCall;
use crate::stream::Abort;

/// How a step ended, for `after_step` and the transition.
pub(super) struct StepEnded<'m> {
    /// The committed message, kept only for a lifecycle that reads it in
    /// `after_step`.
    pub(super) message: Option<&'m Message>,
    /// A canonical transform aborted the step (S4): its outcome and reason.
    pub(super) abort: Option<(Outcome, &'m str)>,
    /// The provider refused the step (S6).
    pub(super) refusal: Option<&'m Refusal>,
    pub(super) tool_calls: bool,
    /// Calls wait for a client (T7).
    pub(super) waiting: bool,
}

/// Whether a steering message may hand a step over (A4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Steering {
    /// As it comes: a steer stored by the time the step ends hands it over.
    Heard,
    /// Stored below this sequence number: a worker that took the run over
    /// decides the last committed step's transition again (K3), counting
    /// the steers stored before that step's last commit, which its holder's
    /// `after_step` heard of. A later one may have come after the holder
    /// decided: it goes to the next step, or starts a run of its own when
    /// this one ends. One the step took is recorded as such.
    Before(u64),
    /// None: the taker found no user message of the run before the step's
    /// last commit but its trigger, so none can be waiting (no read).
    Ignored,
}

/// How a step's stream ended, for its commit: aborted by a canonical
/// stage (S4) or refused by the provider (S6), if either.
#[derive(Clone, Copy)]
struct Ended<'m> {
    abort: Option<&'m Abort>,
    refusal: Option<&'m Refusal>,
}

/// The context a step resolved. With `settled`, its first messages are the
/// run's cached settled prefix, lent to the step until its model call ends.
struct Resolved {
    messages: Vec<ModelMessage>,
    settled: Option<usize>,
}

/// The request a step sends, and how many of its messages the resolver gave.
struct Prepared {
    request: ModelRequest,
    counts: SentCounts,
    /// The lent prefix's length, if the context was lent.
    settled: Option<usize>,
    /// The lent context itself when a replacement took its place.
    spare: Option<Vec<ModelMessage>>,
}

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// One step of the episode with `route` and `overlay` as its defaults (P5).
    pub(super) async fn step(
        &self,
        step: u32,
        route: &Route,
        overlay: &Overlay,
    ) -> Result<Transition, Fail> {
        let history = self.take_anchor().await?;
        let context = self.resolve_context(step, &history).await?;
        if self.stop.is_set() {
            // The run knew of a cancel or a delete by the time its context
            // was resolved (a compaction or resolver refused by it, among
            // workers; at once in one process): no later hook of the step
            // runs (H5, K6).
            return Err(Fail::phase(Phase::ResolveModelContext, "stopped"));
        }
        let prepared = self.prepare(step, route, overlay, context).await?;
        let called = self.call_model(step, &prepared).await;
        self.give_back(prepared);
        let (stream, answered) = called?;
        let (mut consumed, calls) = self.consume(step, stream).await?;
        let refusal = self.refusal(step, &mut consumed)?;
        let abort = consumed.abort;
        let keep = self.handles(Phase::AfterStep);
        let ended_as = Ended {
            abort: abort.as_ref(),
            refusal: refusal.as_ref(),
        };
        let message = self
            .commit_step(step, consumed.parts, (ended_as, &answered), keep)
            .await?;
        let done = if calls.is_empty() {
            ToolsDone::default()
        } else {
            // Calls are checked against the route of the attempt that answered (P6).
            self.tools(step, &answered, &calls).await?
        };
        let ended = StepEnded {
            message: message.as_ref(),
            abort: abort.as_ref().map(|a| (a.outcome, a.reason.as_str())),
            refusal: refusal.as_ref(),
            tool_calls: !calls.is_empty(),
            waiting: !done.pending.is_empty(),
        };
        let transition = self
            .after_step(step, &done.finals, ended, Steering::Heard)
            .await?;
        self.settle_pending(step, &transition, done).await?;
        Ok(transition)
    }

    /// Where a step's pending calls go (A3, T7): with `wait`, the store
    /// records them and the run waits (refused when a cancel came first:
    /// then they are cancelled, T8); with any other transition they can
    /// never be answered, so each gets a cancelled result.
    pub(super) async fn settle_pending(
        &self,
        step: u32,
        transition: &Transition,
        done: ToolsDone,
    ) -> Result<(), Fail> {
        if done.pending.is_empty() {
            return Ok(());
        }
        if *transition != Transition::Wait {
            return self.give_up(step, &done.pending, GivenUp::Completed).await;
        }
        let waits = match self.stop.is_set() {
            true => false,
            false => {
                self.writable(RunStage::Tools)?;
                let mut attached = self.sh.process.attach(self.thread).await;
                let waited =
                    self.sh
                        .store
                        .wait(self.thread, self.run, self.token, done.pending.clone());
                let waited = waited
                    .await
                    .map_err(|e| self.store_fail(RunStage::Tools, e))?;
                let Some((calls, version)) = waited else {
                    // Refused: a cancel came first (K6).
                    drop(attached);
                    self.hear_cancel("wait");
                    return self.give_up_cancelled(step, &done.pending).await;
                };
                self.sh.told(&mut attached, version);
                self.lease.release(calls, version);
                true
            }
        };
        if waits {
            return Ok(());
        }
        self.give_up_cancelled(step, &done.pending).await
    }

    /// A cancelled run's pending calls get cancelled results (T8); the
    /// step stops there.
    async fn give_up_cancelled(&self, step: u32, pending: &[WaitingCall]) -> Result<(), Fail> {
        self.give_up(step, pending, GivenUp::Cancelled).await?;
        Err(Fail::new(RunStage::Tools, "stopped"))
    }

    /// The step's anchor (M1): history reads never go past the newest message
    /// stored now. A steering message stored before the anchor is taken by
    /// this step; only one that arrives later makes the step hand over (A4).
    async fn take_anchor(&self) -> Result<History<'_>, Fail> {
        let stage = RunStage::Phase(Phase::ResolveModelContext);
        self.writable(stage)?;
        let (anchor, incarnation) = self
            .sh
            .store
            .take_anchor(self.thread, self.run, self.token)
            .await
            .map_err(|e| self.store_fail(stage, e))?;
        let history = History::new(
            &self.sh.store,
            self.thread,
            &self.sh.agent.name,
            incarnation,
            anchor,
        );
        Ok(history.told(self))
    }

    /// `resolve_model_context`: the composed resolver onion over the default
    /// leaf (L6, M1–M4). A hook failure anywhere in the onion fails the run.
    async fn resolve_context(&self, step: u32, history: &History<'_>) -> Result<Resolved, Fail> {
        let phase = Phase::ResolveModelContext;
        let traced = self.handles(phase) && self.sh.sink.is_some();
        let leaf = DefaultLeaf {
            step,
            history,
            cache: self.context,
            events: traced.then_some(self as &dyn AttemptEvents),
        };
        let resolved = if self.handles(phase) {
            let thread = ResolverThread { history };
            let input = ContextInput {
                step,
                history,
                thread: &thread,
            };
            let failure = FailureCell::default();
            let cx = self.cx();
            let next = ContextNext::new(&leaf, None, &failure);
            let out = self
                .hook(phase, || {
                    self.lifecycle().resolve_model_context(&cx, &input, next)
                })
                .await;
            Resolved {
                messages: Self::settle(phase, &failure, out)?,
                settled: None,
            }
        } else {
            let read = self.context.refresh(history).await;
            read.map_err(|e| Fail::phase(phase, e.to_string()))?;
            let lent = self.context.lend();
            Resolved {
                messages: lent.messages,
                settled: Some(lent.settled),
            }
        };
        self.emit(|| EventKind::ResolveModelContext {
            step,
            anchor: history.anchor(),
            messages: resolved.messages.len(),
        });
        Ok(resolved)
    }

    /// Returns a lent context to the run's cache once the model call is
    /// over: the request's messages, or the context a replacement displaced.
    fn give_back(&self, prepared: Prepared) {
        let Some(settled) = prepared.settled else {
            return;
        };
        let messages = prepared.spare.unwrap_or(prepared.request.messages);
        self.context.give_back(messages, settled);
    }

    /// The episode overlay after the resolver (M5, P8), then
    /// `prepare_model_step` (L5, P5): the request this step sends.
    async fn prepare(
        &self,
        step: u32,
        route: &Route,
        overlay: &Overlay,
        context: Resolved,
    ) -> Result<Prepared, Fail> {
        let Resolved {
            mut messages,
            settled,
        } = context;
        let context_len = messages.len();
        let mut replaced = overlay.replaces();
        // A replacement takes the lent context's place: keep it to give back.
        let mut spare = None;
        if replaced && settled.is_some() {
            spare = Some(std::mem::take(&mut messages));
        }
        // Hooks may have reshaped the context; such a context is paired again
        // before it is sent (H6). The runtime's own derivation already is,
        // and appending messages without tool parts keeps it so.
        let mut reshaped = self.handles(Phase::ResolveModelContext) || overlay.may_unpair();
        overlay.apply(&mut messages);
        let mut step_route = route.clone();
        let input = StepInput {
            step,
            route: &step_route,
            messages: &messages,
        };
        let StepDecision::Continue(p) = self
            .decide(Phase::PrepareModelStep, &input, |l, cx, i| {
                l.prepare_model_step(cx, i)
            })
            .await?;
        if p.replace_model_messages.is_some() && settled.is_some() && spare.is_none() {
            spare = Some(std::mem::take(&mut messages));
        }
        replaced |= p.replace_model_messages.is_some();
        reshaped |= p.replace_model_messages.is_some() || carries_tools(&p.append_model_messages);
        step_route.apply(&p.route);
        p.apply_messages_owned(&mut messages);
        if reshaped {
            // The lent prefix, when still in place, is paired already.
            messages = match settled.filter(|_| !replaced) {
                Some(n) => pair_after(messages, n),
                None => pair_tool_calls(messages),
            };
        }
        self.emit(|| EventKind::PrepareModelStep {
            step,
            route: step_route.clone(),
            messages: messages.len(),
        });
        let request = self.request(step, step_route, messages);
        let counts = SentCounts {
            context: if replaced { 0 } else { context_len },
        };
        Ok(Prepared {
            request,
            counts,
            settled,
            spare,
        })
    }

    /// The request step `step` sends on `route`: the tools the route
    /// offers, the agent's instructions, `messages`.
    fn request(&self, step: u32, route: Route, messages: Vec<ModelMessage>) -> ModelRequest {
        ModelRequest {
            run_id: self.run.into(),
            step,
            attempt: 1,
            tools: offered(&self.sh.tool_specs, &route),
            route,
            instructions: self.sh.agent.instructions.clone(),
            messages,
            timeout_ms: None,
            registered: self.sh.tool_specs.clone(),
        }
    }

    /// `around_model_call`: the composed onion over provider attempts (L6,
    /// P6, P7). Returns the stream the step consumes and the route of the
    /// attempt that answered.
    async fn call_model(&self, step: u32, prepared: &Prepared) -> Result<(BoxStream, Route), Fail> {
        let phase = Phase::AroundModelCall;
        let request = &prepared.request;
        let leaf = ProviderAttempt {
            step,
            counts: prepared.counts,
            models: &*self.sh.models,
            clock: &*self.sh.clock,
            events: self,
            stop: self.stop,
            attempts: AtomicU32::new(0),
            answered: Mutex::new(None),
        };
        let stream = if self.handles(phase) {
            let failure = FailureCell::default();
            let cx = self.cx();
            let next = ModelNext::new(&leaf, request, &failure);
            let out = self
                .hook(phase, || {
                    self.lifecycle().around_model_call(&cx, request, next)
                })
                .await;
            Self::settle(phase, &failure, out)?
        } else {
            let attempt = ModelLink::attempt(&leaf, request, AttemptPatch::default());
            attempt
                .await
                .map_err(|e| Fail::phase(phase, e.to_string()))?
        };
        let answered = leaf
            .answered
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        Ok((stream, answered.unwrap_or_else(|| request.route.clone())))
    }

    /// The provider stream through the canonical transforms (S1, L7): their
    /// output alone is stored, released live and reused as context. Returns
    /// it with the tool calls it asked for (none after an abort, S4).
    async fn consume(&self, step: u32, stream: BoxStream) -> Result<(Consumed, Vec<Call>), Fail> {
        let stages = self.canonical(StreamKind::Model, Some(step))?;
        let live = self.live_step(step).await;
        let events = self.sh.sink.is_some();
        let consumed = consume(stream, stages, &live, &*self.sh.clock, events).await;
        // An aborted or refused step runs no tool (S4, S6).
        let refused = consumed.finish.is_some_and(|f| f.refusal().is_some());
        let calls = match consumed.abort.is_some() || refused {
            true => Vec::new(),
            false => tool_calls(&consumed.parts),
        };
        self.emit(|| EventKind::Stream {
            step,
            deltas: consumed.deltas,
            chars: consumed.chars,
            tool_calls: calls.len(),
            finish: consumed.finish,
            error: consumed.error.clone(),
            aborted: consumed.abort.as_ref().map(|a| a.reason.clone()),
        });
        if let Some(panic) = &consumed.stage_panic {
            return Err(Fail::phase(
                Phase::TransformStepStream,
                format!("stream transform panicked: {panic}"),
            ));
        }
        if let Some(e) = &consumed.error {
            return Err(Fail::new(RunStage::Stream, format!("provider error: {e}")));
        }
        Ok((consumed, calls))
    }

    /// A refused step's refusal (S6): its kind, and the provider's words
    /// through fresh canonical transforms, since they are stored as the
    /// run's reason (S1). The step keeps its text but no tool call: none
    /// runs, so none is stored without its result (H6).
    fn refusal(&self, step: u32, consumed: &mut Consumed) -> Result<Option<Refusal>, Fail> {
        let kind = match consumed.finish.and_then(|f| f.refusal()) {
            Some(kind) if consumed.abort.is_none() => kind,
            _ => return Ok(None),
        };
        consumed
            .parts
            .retain(|p| !matches!(p, Part::ToolCall { .. }));
        let words = consumed.refusal.take().unwrap_or_default();
        let words = match words.is_empty() {
            true => Vec::new(),
            false => vec![Part::Text { text: words }],
        };
        let said = self.finished(StreamKind::Refusal, Some(step), words)?;
        let explanation = said
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        Ok(Some(Refusal { kind, explanation }))
    }

    /// Commits the step's canonical parts, or an abort's replacement (S4),
    /// itself passed through fresh canonical transforms (L12); a refused
    /// step's message carries its outcome and reason (S6). With `keep`,
    /// returns a copy of the committed message; without, the message moves
    /// into the store whole (a long answer is not copied).
    async fn commit_step(
        &self,
        step: u32,
        parts: Vec<Part>,
        (ended, answered): (Ended<'_>, &Route),
        keep: bool,
    ) -> Result<Option<Message>, Fail> {
        let (parts, mut pai) = match (ended.abort, ended.refusal) {
            (None, None) => (parts, self.meta(Producer::Model, Some(step))),
            (None, Some(r)) => {
                let mut pai = self.meta(Producer::Model, Some(step));
                pai.outcome = Some(Outcome::Blocked);
                pai.reason = Some(r.reason());
                (parts, pai)
            }
            (Some(a), _) => {
                let mut pai = self.meta(Producer::Lifecycle, Some(step));
                pai.outcome = Some(a.outcome);
                pai.reason = Some(a.reason.clone());
                let parts =
                    self.finished(StreamKind::Replacement, Some(step), a.replacement.clone())?;
                (parts, pai)
            }
        };
        if pai.producer == Producer::Model {
            pai.offered = answered.tools.clone();
        }
        let message = NewMessage {
            id: self.sh.ids.next_id(IdKind::Message).into(),
            role: Role::Assistant,
            parts,
            visibility: Visibility::ALL,
            pai,
        };
        let id = message.id.clone();
        let kept = keep.then(|| message.clone());
        let appended = self
            .commit(RunStage::CommitStep, vec![message], Some(step))
            .await?;
        let kept = kept.map(|m| m.stored(appended.first_seq));
        self.emit(|| EventKind::CommitStep {
            step,
            message: id,
            version: appended.version,
        });
        Ok(kept)
    }

    /// `after_step` (A1, L10), then the transition (A2, A3). A steering
    /// message the transition hands over to is taken now (A4).
    pub(super) async fn after_step(
        &self,
        step: u32,
        tool_results: &[ToolResult],
        ended: StepEnded<'_>,
        steers: Steering,
    ) -> Result<Transition, Fail> {
        let decision = match ended.message {
            Some(message) => {
                let input = AfterStepInput {
                    step,
                    message,
                    tool_results,
                    refusal: ended.refusal,
                };
                self.decide(Phase::AfterStep, &input, |l, cx, i| l.after_step(cx, i))
                    .await?
            }
            None => Default::default(),
        };
        let steering = match steers {
            Steering::Heard => self.has_steer(None).await?,
            Steering::Before(seq) => self.has_steer(Some(seq)).await?,
            Steering::Ignored => false,
        };
        let transition = transition(&StepEnd {
            decision,
            abort: ended.abort,
            refusal: ended.refusal,
            waiting: ended.waiting,
            steering,
            tool_calls: ended.tool_calls,
            step,
            max_steps: self.sh.agent.max_steps,
        });
        if transition == Transition::Steer {
            let taken = self
                .sh
                .store
                .take_steer(self.thread, self.run, self.token)
                .await;
            taken.map_err(|e| self.store_fail(RunStage::Phase(Phase::AfterStep), e))?;
        }
        self.emit(|| EventKind::AfterStep {
            step,
            decision,
            transition: transition.clone(),
        });
        Ok(transition)
    }

    /// Whether a steer (stored below `before`) waits for the next step. A
    /// store this worker cannot reach is a lost lease, not "no steer"; a
    /// cancel it answers with stops the run, which takes no steer (K6):
    /// its pending calls are given up as the transition says.
    async fn has_steer(&self, before: Option<u64>) -> Result<bool, Fail> {
        match self.sh.store.has_steer(self.thread, self.run, before).await {
            Ok(steering) => Ok(steering),
            Err(e) if self.cancelled("has_steer", &e) => Ok(false),
            Err(e) => Err(self.store_fail(RunStage::Phase(Phase::AfterStep), e)),
        }
    }
}

/// The tool calls among a step's assembled parts, in order.
pub(super) fn tool_calls(parts: &[Part]) -> Vec<Call> {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall {
                call_id,
                tool,
                input,
            } => Some(Call {
                call_id: call_id.clone(),
                tool: tool.clone(),
                input: input.clone(),
            }),
            _ => None,
        })
        .collect()
}
