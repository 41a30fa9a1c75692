//! The runtime, its client API and the step loop.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::agent::Agent;
use crate::clock::{Clock, IdKind, IdSource};
use crate::event::{Event, EventKind, EventSink, RunStatus, Transition};
use crate::future::{HookFuture, guarded, panic_message};
use crate::lifecycle::{
    AfterStepDecision, AfterStepInput, HookCx, HookNote, HookResult, Lifecycle, Phase, Response,
    RunDecision, RunInput, StepDecision, StepInput, ToolCallDecision, ToolCallInput, ToolResult,
    ToolResultDecision, ToolResultInput,
};
use crate::message::{
    Message, Outcome, PaiMeta, Part, Producer, ResultSource, Role, THROWN_TOOL_ERROR, ToolStatus,
    Visibility, to_model_messages,
};
use crate::model::{ModelError, ModelProvider, ModelRequest, StreamPart};
use crate::patch::{Overlay, Route};
use crate::store::{RunRecord, Store, StoreError};
use crate::tool::{Tool, ToolCx, ToolOutcome, ToolSpec};

/// A runtime that is missing a required part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("the runtime needs {0}")]
    Missing(&'static str),
}

/// What a client call can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Builds a [`Runtime`]; clock, ids and models are required.
pub struct RuntimeBuilder<C> {
    agent: Agent<C>,
    context: C,
    models: Option<Box<dyn ModelProvider>>,
    clock: Option<Arc<dyn Clock>>,
    ids: Option<Arc<dyn IdSource>>,
    sink: Option<Arc<dyn EventSink>>,
}

impl<C: 'static> fmt::Debug for RuntimeBuilder<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl<C: Send + Sync + 'static> RuntimeBuilder<C> {
    pub fn models(mut self, models: impl ModelProvider) -> Self {
        self.models = Some(Box::new(models));
        self
    }

    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    pub fn ids(mut self, ids: Arc<dyn IdSource>) -> Self {
        self.ids = Some(ids);
        self
    }

    /// Where events go; without a sink, none are built.
    pub fn events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    pub fn build(self) -> Result<Runtime<C>, BuildError> {
        Ok(Runtime {
            shared: Arc::new(Shared {
                agent: self.agent,
                context: self.context,
                models: self.models.ok_or(BuildError::Missing("a model provider"))?,
                clock: self.clock.ok_or(BuildError::Missing("a clock"))?,
                ids: self.ids.ok_or(BuildError::Missing("an id source"))?,
                sink: self.sink,
                store: Store::default(),
            }),
        })
    }
}

/// An in-process runtime for one agent. Cheap to clone.
pub struct Runtime<C> {
    shared: Arc<Shared<C>>,
}

impl<C> Clone for Runtime<C> {
    fn clone(&self) -> Self {
        Runtime {
            shared: self.shared.clone(),
        }
    }
}

impl<C: 'static> fmt::Debug for Runtime<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("agent", &self.shared.agent)
            .finish_non_exhaustive()
    }
}

/// A thread as trusted server code sees it: every message, whatever its visibility.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredThread {
    pub id: String,
    pub agent: String,
    pub owner: String,
    pub incarnation: u64,
    pub version: u64,
    pub messages: Vec<Message>,
    pub metadata: Map<String, Value>,
    pub runs: Vec<RunRecord>,
}

/// A thread as its client sees it: transcript-visible messages only.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadState {
    pub id: String,
    pub version: u64,
    pub messages: Vec<Message>,
    pub metadata: Map<String, Value>,
    pub runs: Vec<RunRecord>,
}

/// What `send` created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub message_id: String,
    pub run_id: String,
}

impl<C: Send + Sync + 'static> Runtime<C> {
    /// Starts building a runtime for `agent` with the application's runtime context.
    pub fn builder(agent: Agent<C>, context: C) -> RuntimeBuilder<C> {
        RuntimeBuilder {
            agent,
            context,
            models: None,
            clock: None,
            ids: None,
            sink: None,
        }
    }

    /// A client acting for `identity`.
    pub fn client(&self, identity: impl Into<String>) -> Client<C> {
        Client {
            runtime: self.clone(),
            identity: identity.into(),
        }
    }

    /// Trusted read of a whole stored thread (not scoped to an identity).
    pub fn inspect(&self, thread_id: &str) -> Option<StoredThread> {
        let map = self.shared.store.lock();
        map.get(thread_id).map(|rec| StoredThread {
            id: thread_id.to_string(),
            agent: rec.agent.clone(),
            owner: rec.owner.clone(),
            incarnation: rec.incarnation,
            version: rec.version,
            messages: rec.messages.clone(),
            metadata: rec.metadata.clone(),
            runs: rec.runs.clone(),
        })
    }

    /// Ids of every stored thread, in order.
    pub fn thread_ids(&self) -> Vec<String> {
        self.shared.store.lock().keys().cloned().collect()
    }
}

/// A client for one identity.
pub struct Client<C> {
    runtime: Runtime<C>,
    identity: String,
}

impl<C> fmt::Debug for Client<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("identity", &self.identity)
            .finish()
    }
}

impl<C: Send + Sync + 'static> Client<C> {
    pub fn thread(&self, id: impl Into<String>) -> ThreadHandle<C> {
        ThreadHandle {
            runtime: self.runtime.clone(),
            identity: self.identity.clone(),
            id: id.into(),
        }
    }

    pub fn new_thread_id(&self) -> String {
        self.runtime.shared.ids.next_id(IdKind::Thread)
    }
}

/// One thread, reached through a client's identity (SPEC H4).
pub struct ThreadHandle<C> {
    runtime: Runtime<C>,
    identity: String,
    id: String,
}

impl<C> fmt::Debug for ThreadHandle<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadHandle")
            .field("identity", &self.identity)
            .field("id", &self.id)
            .finish()
    }
}

impl<C: Send + Sync + 'static> ThreadHandle<C> {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Appends a user message and queues a run for it (SPEC K1: one active
    /// run per thread, later runs wait in arrival order). Must be called inside
    /// a Tokio runtime: the thread's runs are driven by a spawned task.
    pub async fn send(&self, text: impl Into<String>) -> Result<Sent, ClientError> {
        let sh = &self.runtime.shared;
        let message_id = sh.ids.next_id(IdKind::Message);
        let run_id = sh.ids.next_id(IdKind::Run);
        let now = sh.clock.now();
        let start = {
            let mut map = sh.store.lock();
            let rec = Store::open(&mut map, &self.id, &sh.agent.name, &self.identity)?;
            let msg = Message {
                id: message_id.clone(),
                seq: 0,
                role: Role::User,
                parts: vec![Part::text(text)],
                visibility: Visibility::ALL,
                pai: PaiMeta {
                    producer: Producer::User,
                    run_id: Some(run_id.clone()),
                    step: None,
                    updated_at: now,
                    outcome: None,
                    reason: None,
                },
            };
            Store::commit(rec, None, [msg])?;
            rec.runs.push(RunRecord {
                id: run_id.clone(),
                status: RunStatus::Queued,
                outcome: None,
                reason: None,
                steps: 0,
            });
            rec.queue.push_back(run_id.clone());
            let start = !rec.driving;
            if start {
                Store::set_busy(rec, true);
            }
            start
        };
        sh.emit(&self.id, &run_id, || EventKind::Admitted {
            trigger: message_id.clone(),
        });
        if start {
            tokio::spawn(drive(sh.clone(), self.id.clone()));
        }
        Ok(Sent { message_id, run_id })
    }

    /// The thread as this client may see it.
    pub fn state(&self) -> Result<ThreadState, ClientError> {
        let sh = &self.runtime.shared;
        let map = sh.store.lock();
        let rec = map
            .get(&self.id)
            .ok_or_else(|| StoreError::NoThread(self.id.clone()))?;
        if rec.owner != self.identity || rec.agent != sh.agent.name {
            return Err(StoreError::Forbidden {
                thread: self.id.clone(),
            }
            .into());
        }
        Ok(ThreadState {
            id: self.id.clone(),
            version: rec.version,
            messages: rec
                .messages
                .iter()
                .filter(|m| m.visibility.transcript)
                .cloned()
                .collect(),
            metadata: rec.metadata.clone(),
            runs: rec.runs.clone(),
        })
    }

    /// Waits until no run is active or queued on the thread, then returns its state.
    pub async fn wait_until_idle(&self) -> Result<ThreadState, ClientError> {
        let mut rx = {
            let map = self.runtime.shared.store.lock();
            let rec = map
                .get(&self.id)
                .ok_or_else(|| StoreError::NoThread(self.id.clone()))?;
            rec.signal.subscribe()
        };
        // The sender lives as long as the thread record, which is never removed here.
        let _ = rx.wait_for(|s| !s.busy).await;
        self.state()
    }
}

struct Shared<C> {
    agent: Agent<C>,
    context: C,
    models: Box<dyn ModelProvider>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdSource>,
    sink: Option<Arc<dyn EventSink>>,
    store: Store,
}

impl<C> Shared<C> {
    fn emit(&self, thread: &str, run: &str, kind: impl FnOnce() -> EventKind) {
        if let Some(sink) = &self.sink {
            sink.record(Event {
                at: self.clock.now(),
                thread_id: thread.to_string(),
                run_id: run.to_string(),
                kind: kind(),
            });
        }
    }
}

/// Drains a thread's run queue, one run at a time.
async fn drive<C: Send + Sync + 'static>(sh: Arc<Shared<C>>, thread: String) {
    loop {
        let run = {
            let mut map = sh.store.lock();
            let Some(rec) = map.get_mut(&thread) else {
                return;
            };
            match rec.queue.pop_front() {
                Some(run) => {
                    if let Some(r) = rec.run_mut(&run) {
                        r.status = RunStatus::Running;
                    }
                    run
                }
                None => {
                    Store::set_busy(rec, false);
                    return;
                }
            }
        };
        let span = tracing::info_span!("run", run_id = %run, thread_id = %thread);
        run_one(&sh, &thread, &run).instrument(span).await;
    }
}

/// How a run ended.
struct End {
    status: RunStatus,
    outcome: Outcome,
    reason: Option<String>,
}

/// Why an episode stopped early: the phase and the message.
struct Fail {
    phase: &'static str,
    message: String,
}

async fn run_one<C: Send + Sync + 'static>(sh: &Shared<C>, thread: &str, run: &str) {
    let episode = 1;
    let token = {
        let mut map = sh.store.lock();
        // Threads are never removed while a run is queued on them; if one were,
        // its runs would have nothing to act on.
        let Some(rec) = map.get_mut(thread) else {
            return;
        };
        rec.fence += 1;
        rec.lease_holder = Some(run.to_string());
        rec.fence
    };
    sh.emit(thread, run, || EventKind::LeaseAcquired { episode, token });
    let exec = Exec {
        sh,
        thread,
        run,
        episode,
        token,
    };
    let end = match exec
        .body()
        .instrument(tracing::info_span!("episode", episode))
        .await
    {
        Ok(end) => end,
        Err(fail) => {
            tracing::warn!(phase = fail.phase, message = %fail.message, "run failed");
            sh.emit(thread, run, || EventKind::Failed {
                phase: fail.phase,
                message: fail.message.clone(),
            });
            End {
                status: RunStatus::Failed,
                outcome: Outcome::Failed,
                reason: Some(fail.message),
            }
        }
    };
    {
        let mut map = sh.store.lock();
        if let Some(rec) = map.get_mut(thread) {
            if rec.lease_holder.as_deref() == Some(run) {
                rec.lease_holder = None;
            }
            if let Some(r) = rec.run_mut(run) {
                r.status = end.status;
                r.outcome = Some(end.outcome);
                r.reason.clone_from(&end.reason);
            }
        }
    }
    sh.emit(thread, run, || EventKind::LeaseReleased { episode });
    sh.emit(thread, run, || EventKind::Ended {
        status: end.status,
        outcome: end.outcome,
        reason: end.reason.clone(),
    });
}

/// One tool call the model asked for.
struct Call {
    call_id: String,
    tool: String,
    input: Value,
}

/// One execution episode of one run.
struct Exec<'a, C> {
    sh: &'a Shared<C>,
    thread: &'a str,
    run: &'a str,
    episode: u32,
    token: u64,
}

impl<C: Send + Sync + 'static> crate::lifecycle::HookTrace for Exec<'_, C> {
    fn note(&self, note: HookNote) {
        self.sh
            .emit(self.thread, self.run, || EventKind::Hook(note));
    }
}

impl<'a, C: Send + Sync + 'static> Exec<'a, C> {
    fn lifecycle(&self) -> &'a dyn Lifecycle<C> {
        &*self.sh.agent.lifecycle
    }

    fn handles(&self, phase: Phase) -> bool {
        self.sh.agent.lifecycle.phases().contains(phase)
    }

    fn emit(&self, kind: impl FnOnce() -> EventKind) {
        self.sh.emit(self.thread, self.run, kind);
    }

    fn cx(&self) -> HookCx<'_, C> {
        HookCx {
            context: &self.sh.context,
            run_id: self.run,
            thread_id: self.thread,
            episode: self.episode,
            now: self.sh.clock.now(),
            trace: self
                .sh
                .sink
                .as_ref()
                .map(|_| self as &dyn crate::lifecycle::HookTrace),
        }
    }

    /// Runs a hook call; an error or a panic fails the run (SPEC L4, X2).
    async fn hook<'f, T>(
        &self,
        phase: Phase,
        make: impl FnOnce() -> HookFuture<'f, HookResult<T>>,
    ) -> Result<T, Fail> {
        let span = tracing::debug_span!("phase", name = phase.as_str());
        match guarded(make).instrument(span).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Fail {
                phase: phase.as_str(),
                message: e.message,
            }),
            Err(panic) => Err(Fail {
                phase: phase.as_str(),
                message: format!("hook panicked: {panic}"),
            }),
        }
    }

    fn meta(&self, producer: Producer, step: Option<u32>) -> PaiMeta {
        PaiMeta {
            producer,
            run_id: Some(self.run.to_string()),
            step,
            updated_at: self.sh.clock.now(),
            outcome: None,
            reason: None,
        }
    }

    /// Commits messages under the run's lease; returns the new version and the
    /// first assigned sequence number.
    fn commit(&self, phase: &'static str, messages: Vec<Message>) -> Result<(u64, u64), Fail> {
        let mut map = self.sh.store.lock();
        let rec = map.get_mut(self.thread).ok_or_else(|| Fail {
            phase,
            message: StoreError::NoThread(self.thread.to_string()).to_string(),
        })?;
        let first = rec.next_seq;
        let version = Store::commit(rec, Some(self.token), messages).map_err(|e| Fail {
            phase,
            message: e.to_string(),
        })?;
        Ok((version, first))
    }

    async fn body(&self) -> Result<End, Fail> {
        let agent = &self.sh.agent;
        let mut route = Route::new(agent.model.clone());
        let mut overlay = Overlay::default();
        if self.handles(Phase::PrepareRun) {
            let messages = {
                let map = self.sh.store.lock();
                map.get(self.thread)
                    .map(|r| r.messages.clone())
                    .unwrap_or_default()
            };
            let input = RunInput {
                messages: &messages,
                latest_user_message: messages.iter().rev().find(|m| m.role == Role::User),
                route: &route,
            };
            let cx = self.cx();
            let decision = self
                .hook(Phase::PrepareRun, || {
                    self.lifecycle().prepare_run(&cx, &input)
                })
                .await?;
            match decision {
                RunDecision::Respond(r) => return self.respond(r),
                RunDecision::Continue(p) => {
                    route.apply(&p.route);
                    overlay.push(&p);
                }
            }
        }
        self.emit(|| EventKind::PrepareRun {
            route: route.clone(),
            overlay: overlay.appended(),
        });
        let mut step = 0;
        loop {
            let transition = self
                .step(step, &route, &overlay)
                .instrument(tracing::info_span!("step", step))
                .await?;
            match transition {
                Transition::NextStep => step += 1,
                Transition::Complete { reason } => {
                    return Ok(End {
                        status: RunStatus::Completed,
                        outcome: Outcome::Completed,
                        reason,
                    });
                }
            }
        }
    }

    /// Commits a `prepare_run` response and ends the run (SPEC L12).
    fn respond(&self, r: Response) -> Result<End, Fail> {
        let id = self.sh.ids.next_id(IdKind::Message);
        let mut pai = self.meta(Producer::Lifecycle, None);
        pai.outcome = Some(r.outcome);
        pai.reason.clone_from(&r.reason);
        let msg = Message {
            id: id.clone(),
            seq: 0,
            role: Role::Assistant,
            parts: r.parts,
            visibility: Visibility::ALL,
            pai,
        };
        let (version, _) = self.commit("respond", vec![msg])?;
        self.emit(|| EventKind::Respond {
            outcome: r.outcome,
            reason: r.reason.clone(),
            message: id,
            version,
        });
        Ok(End {
            status: RunStatus::Completed,
            outcome: r.outcome,
            reason: r.reason,
        })
    }

    fn offered_tool(&self, route: &Route, name: &str) -> Option<&'a Arc<dyn Tool>> {
        if let Some(allowed) = &route.tools
            && !allowed.iter().any(|a| a == name)
        {
            return None;
        }
        self.sh.agent.tools.iter().find(|t| t.spec().name == name)
    }

    async fn step(&self, step: u32, route: &Route, overlay: &Overlay) -> Result<Transition, Fail> {
        let agent = &self.sh.agent;
        // resolve_model_context: the default leaf, bounded by the newest message now (M1).
        let (anchor, mut messages) = {
            let map = self.sh.store.lock();
            let rec = map.get(self.thread).ok_or_else(|| Fail {
                phase: "resolve_model_context",
                message: StoreError::NoThread(self.thread.to_string()).to_string(),
            })?;
            (rec.last_seq(), to_model_messages(&rec.messages))
        };
        self.emit(|| EventKind::ResolveModelContext {
            step,
            anchor,
            messages: messages.len(),
        });
        let context_len = messages.len();
        overlay.apply(&mut messages);

        let mut step_route = route.clone();
        if self.handles(Phase::PrepareModelStep) {
            let cx = self.cx();
            let input = StepInput {
                step,
                route: &step_route,
                messages: &messages,
            };
            let decision = self
                .hook(Phase::PrepareModelStep, || {
                    self.lifecycle().prepare_model_step(&cx, &input)
                })
                .await?;
            let StepDecision::Continue(p) = decision;
            step_route.apply(&p.route);
            p.apply_messages(&mut messages);
        }
        self.emit(|| EventKind::PrepareModelStep {
            step,
            route: step_route.clone(),
            messages: messages.len(),
        });

        let tools: Vec<ToolSpec> = agent
            .tools
            .iter()
            .filter(|t| self.offered_tool(&step_route, &t.spec().name).is_some())
            .map(|t| t.spec().clone())
            .collect();
        let request = ModelRequest {
            run_id: self.run.to_string(),
            step,
            route: step_route,
            instructions: agent.instructions.clone(),
            tools,
            messages,
        };
        self.emit(|| EventKind::ModelCall {
            step,
            attempt: 1,
            route: request.route.clone(),
            context: context_len,
            messages: request.messages.len(),
            tools: request.tools.iter().map(|t| t.name.clone()).collect(),
        });
        let model_fail = |message: String| Fail {
            phase: "around_model_call",
            message,
        };
        let model = self.sh.models.model(&request.route.model).ok_or_else(|| {
            model_fail(ModelError::UnknownModel(request.route.model.clone()).to_string())
        })?;
        let mut stream = match guarded(|| model.stream(&request)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(model_fail(e.to_string())),
            Err(panic) => return Err(model_fail(format!("model panicked: {panic}"))),
        };

        // The provider stream, assembled in order: text runs and tool calls.
        let mut parts = Vec::new();
        let mut calls = Vec::new();
        let mut text = String::new();
        let (mut deltas, mut chars) = (0usize, 0usize);
        let mut finish = None;
        let mut error = None;
        loop {
            let next = std::future::poll_fn(|cx| {
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    stream.poll_next(cx)
                })) {
                    Ok(p) => p.map(Ok),
                    Err(p) => std::task::Poll::Ready(Err(panic_message(&*p))),
                }
            })
            .await;
            match next {
                Ok(Some(StreamPart::TextDelta(d))) => {
                    deltas += 1;
                    chars += d.chars().count();
                    text.push_str(&d);
                }
                Ok(Some(StreamPart::ToolCall {
                    call_id,
                    tool,
                    input,
                })) => {
                    if !text.is_empty() {
                        parts.push(Part::Text {
                            text: std::mem::take(&mut text),
                        });
                    }
                    parts.push(Part::ToolCall {
                        call_id: call_id.clone(),
                        tool: tool.clone(),
                        input: input.clone(),
                    });
                    calls.push(Call {
                        call_id,
                        tool,
                        input,
                    });
                }
                Ok(Some(StreamPart::Finish(r))) => finish = Some(r),
                Ok(Some(StreamPart::Error(e))) => {
                    error = Some(e);
                    break;
                }
                Ok(None) => break,
                Err(panic) => {
                    error = Some(format!("model stream panicked: {panic}"));
                    break;
                }
            }
        }
        drop(stream);
        if !text.is_empty() {
            parts.push(Part::Text { text });
        }
        self.emit(|| EventKind::Stream {
            step,
            deltas,
            chars,
            tool_calls: calls.len(),
            finish,
            error: error.clone(),
        });
        if let Some(e) = error {
            return Err(Fail {
                phase: "stream",
                message: format!("provider error: {e}"),
            });
        }

        // commit_step
        let mut message = Message {
            id: self.sh.ids.next_id(IdKind::Message),
            seq: 0,
            role: Role::Assistant,
            parts,
            visibility: Visibility::ALL,
            pai: self.meta(Producer::Model, Some(step)),
        };
        let (version, seq) = self.commit("commit_step", vec![message.clone()])?;
        message.seq = seq;
        {
            let mut map = self.sh.store.lock();
            if let Some(r) = map.get_mut(self.thread).and_then(|t| t.run_mut(self.run)) {
                r.steps += 1;
            }
        }
        self.emit(|| EventKind::CommitStep {
            step,
            message: message.id.clone(),
            version,
        });

        let results = if calls.is_empty() {
            Vec::new()
        } else {
            self.tools(step, &request.route, &calls).await?
        };

        let decision = if self.handles(Phase::AfterStep) {
            let cx = self.cx();
            let input = AfterStepInput {
                step,
                message: &message,
                tool_results: &results,
            };
            self.hook(Phase::AfterStep, || {
                self.lifecycle().after_step(&cx, &input)
            })
            .await?
        } else {
            AfterStepDecision::Natural
        };
        // SPEC A2, A3 (the complete / next_step part).
        let mut transition = match decision {
            AfterStepDecision::Complete => Transition::Complete { reason: None },
            AfterStepDecision::NextStep => Transition::NextStep,
            AfterStepDecision::Natural if calls.is_empty() => Transition::Complete { reason: None },
            AfterStepDecision::Natural => Transition::NextStep,
        };
        if transition == Transition::NextStep && step + 1 >= agent.max_steps {
            transition = Transition::Complete {
                reason: Some("max_steps".to_string()),
            };
        }
        self.emit(|| EventKind::AfterStep {
            step,
            decision,
            transition: transition.clone(),
        });
        Ok(transition)
    }

    /// Runs one step's tool calls (SPEC T1–T3): every `before_tool_call` first,
    /// then ready tools in parallel, results committed in call order.
    async fn tools(
        &self,
        step: u32,
        route: &Route,
        calls: &[Call],
    ) -> Result<Vec<ToolResult>, Fail> {
        let done = |c: &Call, source: ResultSource, output: Value| ToolResult {
            call_id: c.call_id.clone(),
            tool: c.tool.clone(),
            status: ToolStatus::Error,
            source,
            output,
        };
        let mut ready = Vec::new();
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        for (i, c) in calls.iter().enumerate() {
            let decision = if self.handles(Phase::BeforeToolCall) {
                let cx = self.cx();
                let input = ToolCallInput {
                    step,
                    call_id: &c.call_id,
                    tool: &c.tool,
                    input: &c.input,
                };
                self.hook(Phase::BeforeToolCall, || {
                    self.lifecycle().before_tool_call(&cx, &input)
                })
                .await?
            } else {
                ToolCallDecision::Continue
            };
            self.emit(|| EventKind::BeforeToolCall {
                step,
                call_id: c.call_id.clone(),
                tool: c.tool.clone(),
                decision: decision.clone(),
            });
            let input = match decision {
                ToolCallDecision::Reject { message } => {
                    results[i] = Some(done(c, ResultSource::Rejected, Value::String(message)));
                    continue;
                }
                ToolCallDecision::ReplaceInput(v) => v,
                ToolCallDecision::Continue => c.input.clone(),
            };
            match self.offered_tool(route, &c.tool) {
                Some(tool) => ready.push((i, tool.clone(), input)),
                None => {
                    let msg = format!("tool {} is not available in this step", c.tool);
                    results[i] = Some(done(c, ResultSource::UnknownTool, Value::String(msg)));
                }
            }
        }

        let mut running = JoinSet::new();
        for (i, tool, input) in ready {
            let c = &calls[i];
            self.emit(|| EventKind::ToolStart {
                step,
                call_id: c.call_id.clone(),
                tool: c.tool.clone(),
                input: input.clone(),
            });
            let cx = ToolCx {
                run_id: self.run.to_string(),
                call_id: c.call_id.clone(),
                idempotency_key: format!("{}/{}", self.run, c.call_id),
            };
            let span = tracing::info_span!("tool", call_id = %c.call_id, tool = %c.tool);
            running.spawn(
                async move {
                    let out = guarded(|| tool.call(cx, input)).await;
                    (i, out)
                }
                .instrument(span),
            );
        }

        // Calls that never ran are final already: they reach after_tool_result first (T4).
        let mut finals: Vec<Option<ToolResult>> = vec![None; calls.len()];
        for i in 0..calls.len() {
            if let Some(r) = results[i].take() {
                finals[i] = Some(self.after_tool_result(step, r).await?);
            }
        }
        while let Some(joined) = running.join_next().await {
            let (i, out) = joined.map_err(|e| Fail {
                phase: "tool",
                message: format!("tool task failed: {e}"),
            })?;
            let c = &calls[i];
            let (status, source, output, detail) = match out {
                Ok(ToolOutcome::Output(v)) => (ToolStatus::Output, ResultSource::Tool, v, None),
                Ok(ToolOutcome::Fail(v)) => (ToolStatus::Error, ResultSource::Fail, v, None),
                Ok(ToolOutcome::Throw(m)) => (
                    ToolStatus::Error,
                    ResultSource::Throw,
                    Value::String(THROWN_TOOL_ERROR.into()),
                    Some(m),
                ),
                Ok(ToolOutcome::InvalidInput(m)) => (
                    ToolStatus::Error,
                    ResultSource::InvalidInput,
                    Value::String(format!("invalid input: {m}")),
                    None,
                ),
                Err(panic) => (
                    ToolStatus::Error,
                    ResultSource::Throw,
                    Value::String(THROWN_TOOL_ERROR.into()),
                    Some(format!("panicked: {panic}")),
                ),
            };
            if let Some(d) = &detail {
                tracing::warn!(call_id = %c.call_id, tool = %c.tool, detail = %d, "tool threw");
            }
            let result = ToolResult {
                call_id: c.call_id.clone(),
                tool: c.tool.clone(),
                status,
                source,
                output,
            };
            self.emit(|| EventKind::ToolEnd {
                step,
                result: result.clone(),
                detail,
            });
            finals[i] = Some(self.after_tool_result(step, result).await?);
        }

        let finals: Vec<ToolResult> = finals.into_iter().flatten().collect();
        let id = self.sh.ids.next_id(IdKind::Message);
        let message = Message {
            id: id.clone(),
            seq: 0,
            role: Role::Tool,
            parts: finals
                .iter()
                .map(|r| Part::ToolResult {
                    call_id: r.call_id.clone(),
                    tool: r.tool.clone(),
                    status: r.status,
                    source: r.source,
                    output: r.output.clone(),
                })
                .collect(),
            visibility: Visibility::ALL,
            pai: self.meta(Producer::Tool, Some(step)),
        };
        let (version, _) = self.commit("commit_tool_results", vec![message])?;
        self.emit(|| EventKind::CommitToolResults {
            step,
            message: id,
            version,
        });
        Ok(finals)
    }

    async fn after_tool_result(
        &self,
        step: u32,
        mut result: ToolResult,
    ) -> Result<ToolResult, Fail> {
        let decision = if self.handles(Phase::AfterToolResult) {
            let cx = self.cx();
            let input = ToolResultInput {
                step,
                result: &result,
            };
            self.hook(Phase::AfterToolResult, || {
                self.lifecycle().after_tool_result(&cx, &input)
            })
            .await?
        } else {
            ToolResultDecision::Continue
        };
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
}
