//! The runtime, its client API and the step loop.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::task::JoinSet;
use tracing::Instrument;

use std::sync::atomic::AtomicU32;

use std::future::Future as _;
use std::task::Poll;

use crate::agent::Agent;
use crate::attempt::{AttemptEvents, DefaultLeaf, ProviderAttempt, SentCounts};
use crate::clock::{Clock, IdKind, IdSource};
use crate::context::{ContextInput, ContextLink, ContextNext, History, ResolverThread};
use crate::event::{Event, EventKind, EventSink, RunStatus, Transition};
use crate::future::{HookFuture, catch_panic, guarded, panic_message};
use crate::lifecycle::FailureCell;
use crate::lifecycle::{
    AfterStepDecision, AfterStepInput, HookCx, HookNote, HookResult, Lifecycle, Phase, Response,
    RunDecision, RunInput, StepDecision, StepInput, ToolCallDecision, ToolCallInput, ToolResult,
    ToolResultDecision, ToolResultInput,
};
use crate::lifecycle::{StreamInput, StreamKind};
use crate::live::{LiveEvent, LiveStep, Watch};
use crate::message::{
    Message, Outcome, PaiMeta, Part, Producer, ResultSource, Role, THROWN_TOOL_ERROR, ToolStatus,
    Visibility,
};
use crate::message::{ModelMessage, pair_tool_calls};
use crate::model::BoxStream;
use crate::model::{ModelProvider, ModelRequest, StreamPart};
use crate::model_call::{AttemptPatch, ModelLink, ModelNext};
use crate::patch::{Overlay, Route};
use crate::stop::StopSignal;
use crate::store::{RunRecord, Store, StoreError};
use crate::tool::{Tool, ToolCx, ToolOutcome, ToolSpec};
use crate::transform::{Assembler, NoAbort, Pipeline, StreamTransform, transform_parts};

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
                tool_specs: self.agent.tools.iter().map(|t| t.spec().clone()).collect(),
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
        self.submit(text.into(), false)
    }

    /// Sends a steering message (SPEC A4): while a run is active, the message
    /// is stored at once and taken by that run's next step instead of starting
    /// a new run; with no active run it is an ordinary `send`.
    pub async fn steer(&self, text: impl Into<String>) -> Result<Sent, ClientError> {
        self.submit(text.into(), true)
    }

    /// The thread's record, if this client's identity and agent may reach it (H4).
    fn scoped<'m>(
        &self,
        map: &'m std::collections::BTreeMap<String, crate::store::ThreadRec>,
    ) -> Result<&'m crate::store::ThreadRec, ClientError> {
        let rec = map
            .get(&self.id)
            .ok_or_else(|| StoreError::NoThread(self.id.clone()))?;
        if rec.owner != self.identity || rec.agent != self.runtime.shared.agent.name {
            return Err(StoreError::Forbidden {
                thread: self.id.clone(),
            }
            .into());
        }
        Ok(rec)
    }

    /// Cancels the thread's active run, if any (SPEC T8): its model attempt
    /// stops, running tools get cancelled results, and the run ends with
    /// outcome cancelled. Returns the run id it cancelled.
    pub fn cancel(&self) -> Result<Option<String>, ClientError> {
        let map = self.runtime.shared.store.lock();
        let rec = self.scoped(&map)?;
        if let Some(stop) = &rec.active_stop {
            stop.trigger();
        }
        Ok(rec.active_run.clone())
    }

    /// Watches the thread live (SPEC S2): every step's canonical stream as it
    /// is released, shaped by `live` transforms for this watcher only, and
    /// one invalidation per commit (H1). Creates the thread if needed.
    pub fn watch(&self, live: Vec<Box<dyn StreamTransform>>) -> Result<Watch, ClientError> {
        let sh = &self.runtime.shared;
        let mut map = sh.store.lock();
        let rec = Store::open(&mut map, &self.id, &sh.agent.name, &self.identity)?;
        let (slot, watch) = crate::live::watcher(live);
        rec.watchers.push(slot);
        Ok(watch)
    }

    fn submit(&self, text: String, steer: bool) -> Result<Sent, ClientError> {
        let sh = &self.runtime.shared;
        let message_id = sh.ids.next_id(IdKind::Message);
        let now = sh.clock.now();
        let user_message = |run_id: &str| Message {
            id: message_id.clone(),
            seq: 0,
            role: Role::User,
            parts: vec![Part::text(text.clone())],
            visibility: Visibility::ALL,
            pai: PaiMeta {
                producer: Producer::User,
                run_id: Some(run_id.to_string()),
                step: None,
                updated_at: now,
                outcome: None,
                reason: None,
            },
        };
        let (run_id, start, steered) = {
            let mut map = sh.store.lock();
            let rec = Store::open(&mut map, &self.id, &sh.agent.name, &self.identity)?;
            match rec.active_run.clone() {
                Some(active) if steer => {
                    Store::commit(rec, None, now, [user_message(&active)])?;
                    rec.pending_steer = Some(message_id.clone());
                    (active, false, true)
                }
                _ => {
                    let run_id = sh.ids.next_id(IdKind::Run);
                    Store::commit(rec, None, now, [user_message(&run_id)])?;
                    rec.runs.push(RunRecord::queued(&run_id));
                    rec.queue.push_back(run_id.clone());
                    let start = !rec.driving;
                    if start {
                        Store::set_busy(rec, true);
                    }
                    (run_id, start, false)
                }
            }
        };
        if steered {
            sh.emit(&self.id, &run_id, || EventKind::Steered {
                message: message_id.clone(),
            });
        } else {
            sh.emit(&self.id, &run_id, || EventKind::Admitted {
                trigger: message_id.clone(),
            });
        }
        if start {
            tokio::spawn(drive(sh.clone(), self.id.clone()));
        }
        Ok(Sent { message_id, run_id })
    }

    /// The thread as this client may see it.
    pub fn state(&self) -> Result<ThreadState, ClientError> {
        let map = self.runtime.shared.store.lock();
        let rec = self.scoped(&map)?;
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
    /// Every registered tool's spec, built once.
    tool_specs: Arc<[ToolSpec]>,
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
                    rec.active_run = Some(run.clone());
                    rec.active_stop = Some(Arc::new(StopSignal::new()));
                    run
                }
                None => {
                    Store::set_busy(rec, false);
                    return;
                }
            }
        };
        let span = tracing::info_span!("run", run_id = %run, thread_id = %thread);
        if let Err(panic) = catch_panic(run_one(&sh, &thread, &run).instrument(span)).await {
            // A bug in the runtime itself (user code is guarded where it is
            // called): the run fails and the thread stays usable.
            tracing::error!(run_id = %run, panic = %panic, "the step loop panicked");
            recover(&sh, &thread, &run, panic);
        }
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

/// After a panic in the step loop: the run fails, its lease and active state
/// are cleared, and the log says so.
fn recover<C>(sh: &Shared<C>, thread: &str, run: &str, panic: String) {
    let reason = format!("runtime panicked: {panic}");
    {
        let mut map = sh.store.lock();
        if let Some(rec) = map.get_mut(thread) {
            if rec.lease_holder.as_deref() == Some(run) {
                rec.lease_holder = None;
            }
            rec.active_run = None;
            rec.active_stop = None;
            if let Some(r) = rec.run_mut(run) {
                r.status = RunStatus::Failed;
                r.outcome = Some(Outcome::Failed);
                r.reason = Some(reason.clone());
            }
        }
    }
    sh.emit(thread, run, || EventKind::Failed {
        phase: "runtime",
        message: reason.clone(),
    });
    sh.emit(thread, run, || EventKind::LeaseReleased { episode: 0 });
    sh.emit(thread, run, || EventKind::Ended {
        status: RunStatus::Failed,
        outcome: Outcome::Failed,
        reason: Some(reason.clone()),
    });
}

/// How an episode ended.
enum EpisodeEnd {
    /// The run is over.
    Run(End),
    /// A steering message is waiting: the run goes on in a new episode (SPEC A4, P8).
    Steer,
}

async fn run_one<C: Send + Sync + 'static>(sh: &Shared<C>, thread: &str, run: &str) {
    let stop = {
        let map = sh.store.lock();
        map.get(thread)
            .and_then(|rec| rec.active_stop.clone())
            .unwrap_or_else(|| Arc::new(StopSignal::new()))
    };
    let mut episode = 0;
    let mut next_step = 0;
    let end = loop {
        episode += 1;
        let token = {
            let mut map = sh.store.lock();
            // Threads are never removed while a run is queued on them; if one
            // were, its runs would have nothing to act on.
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
            stop: &stop,
        };
        let ended = match exec
            .body(&mut next_step)
            .instrument(tracing::info_span!("episode", episode))
            .await
        {
            Ok(e) => e,
            // Whatever stopped the episode, a stopped run ends cancelled (T8).
            Err(fail) if stop.is_set() => {
                sh.emit(thread, run, || EventKind::Cancelled { phase: fail.phase });
                EpisodeEnd::Run(End {
                    status: RunStatus::Cancelled,
                    outcome: Outcome::Cancelled,
                    reason: Some("cancelled by the client".to_string()),
                })
            }
            Err(fail) => {
                tracing::warn!(phase = fail.phase, message = %fail.message, "run failed");
                sh.emit(thread, run, || EventKind::Failed {
                    phase: fail.phase,
                    message: fail.message.clone(),
                });
                EpisodeEnd::Run(End {
                    status: RunStatus::Failed,
                    outcome: Outcome::Failed,
                    reason: Some(fail.message),
                })
            }
        };
        {
            let mut map = sh.store.lock();
            if let Some(rec) = map.get_mut(thread)
                && rec.lease_holder.as_deref() == Some(run)
            {
                rec.lease_holder = None;
            }
        }
        sh.emit(thread, run, || EventKind::LeaseReleased { episode });
        match ended {
            EpisodeEnd::Run(end) => break end,
            EpisodeEnd::Steer => {}
        }
    };
    let leftover = {
        let mut map = sh.store.lock();
        map.get_mut(thread).and_then(|rec| {
            if let Some(r) = rec.run_mut(run) {
                r.status = end.status;
                r.outcome = Some(end.outcome);
                r.reason.clone_from(&end.reason);
            }
            rec.active_run = None;
            rec.active_stop = None;
            let at = sh.clock.now();
            crate::live::tell(&mut rec.watchers, || LiveEvent::RunEnded {
                at,
                run_id: run.to_string(),
                status: end.status,
                outcome: end.outcome,
                reason: end.reason.clone(),
            });
            // A steering message that arrived too late for this run starts the next one.
            let steer = rec.pending_steer.take()?;
            let id = sh.ids.next_id(IdKind::Run);
            rec.runs.push(RunRecord::queued(&id));
            rec.queue.push_back(id.clone());
            Some((id, steer))
        })
    };
    sh.emit(thread, run, || EventKind::Ended {
        status: end.status,
        outcome: end.outcome,
        reason: end.reason.clone(),
    });
    if let Some((id, trigger)) = leftover {
        sh.emit(thread, &id, || EventKind::Admitted { trigger });
    }
}

/// The registered tools a route offers (all of them unless it names some).
pub(crate) fn offered(registered: &[ToolSpec], route: &Route) -> Vec<ToolSpec> {
    registered
        .iter()
        .filter(|t| {
            route
                .tools
                .as_ref()
                .is_none_or(|names| names.contains(&t.name))
        })
        .cloned()
        .collect()
}

/// The outcome of an onion phase: a hook failure recorded anywhere inside it
/// wins over whatever the outermost hook returned (SPEC L4).
fn settle<T>(phase: Phase, failure: &FailureCell, out: Result<T, Fail>) -> Result<T, Fail> {
    match failure.take() {
        Some(e) => Err(Fail {
            phase: phase.as_str(),
            message: e.message,
        }),
        None => out,
    }
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
    stop: &'a StopSignal,
}

impl<C: Send + Sync + 'static> crate::lifecycle::HookTrace for Exec<'_, C> {
    fn note(&self, note: HookNote) {
        self.sh
            .emit(self.thread, self.run, || EventKind::Hook(note));
    }
}

impl<C: Send + Sync + 'static> AttemptEvents for Exec<'_, C> {
    fn event(&self, kind: Box<dyn FnOnce() -> EventKind + '_>) {
        self.sh.emit(self.thread, self.run, kind);
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
        let version =
            Store::commit(rec, Some(self.token), self.sh.clock.now(), messages).map_err(|e| {
                Fail {
                    phase,
                    message: e.to_string(),
                }
            })?;
        Ok((version, first))
    }

    /// One episode: `prepare_run`, then steps from `*step` on until the run
    /// ends or a steering message asks for a new episode.
    async fn body(&self, step: &mut u32) -> Result<EpisodeEnd, Fail> {
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
                RunDecision::Respond(r) => return self.respond(r).map(EpisodeEnd::Run),
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
        loop {
            if self.stop.is_set() {
                return Err(Fail {
                    phase: "between steps",
                    message: "stopped".into(),
                });
            }
            let transition = self
                .step(*step, &route, &overlay)
                .instrument(tracing::info_span!("step", step = *step))
                .await?;
            *step += 1;
            match transition {
                Transition::NextStep => {}
                Transition::Steer => return Ok(EpisodeEnd::Steer),
                Transition::Aborted { outcome, reason } => {
                    return Ok(EpisodeEnd::Run(End {
                        status: RunStatus::Completed,
                        outcome,
                        reason: Some(reason),
                    }));
                }
                Transition::Complete { reason } => {
                    return Ok(EpisodeEnd::Run(End {
                        status: RunStatus::Completed,
                        outcome: Outcome::Completed,
                        reason,
                    }));
                }
            }
        }
    }

    /// Commits a `prepare_run` response and ends the run (SPEC L12).
    fn respond(&self, mut r: Response) -> Result<End, Fail> {
        // The response is output like any other: canonical transforms apply (L12).
        r.parts = self.finished(StreamKind::Respond, None, std::mem::take(&mut r.parts))?;
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

    /// `resolve_model_context`: the composed resolver onion over the default
    /// leaf (L6, M1–M4). A hook failure anywhere in the onion fails the run.
    async fn resolve_context(
        &self,
        step: u32,
        history: &History<'_>,
    ) -> Result<Vec<ModelMessage>, Fail> {
        let phase = Phase::ResolveModelContext;
        let traced = self.handles(phase) && self.sh.sink.is_some();
        let leaf = DefaultLeaf {
            step,
            history,
            events: traced.then_some(self as &dyn AttemptEvents),
        };
        if !self.handles(phase) {
            return leaf.resolve(None).await.map_err(|e| Fail {
                phase: phase.as_str(),
                message: e.message,
            });
        }
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
        settle(phase, &failure, out)
    }

    /// `around_model_call`: the composed onion over provider attempts (L6,
    /// P6, P7). Returns the stream the step consumes.
    async fn call_model(
        &self,
        step: u32,
        request: &ModelRequest,
        counts: SentCounts,
    ) -> Result<(BoxStream, Route), Fail> {
        let phase = Phase::AroundModelCall;
        let leaf = ProviderAttempt {
            step,
            counts,
            models: &*self.sh.models,
            clock: &*self.sh.clock,
            events: self,
            stop: self.stop,
            attempts: AtomicU32::new(0),
            answered: std::sync::Mutex::new(None),
        };
        let route_of = |leaf: &ProviderAttempt<'_>| {
            leaf.answered
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .unwrap_or_else(|| request.route.clone())
        };
        if !self.handles(phase) {
            let stream = leaf
                .attempt(request, AttemptPatch::default())
                .await
                .map_err(|e| Fail {
                    phase: phase.as_str(),
                    message: e.to_string(),
                })?;
            return Ok((stream, route_of(&leaf)));
        }
        let failure = FailureCell::default();
        let cx = self.cx();
        let next = ModelNext::new(&leaf, request, &failure);
        let out = self
            .hook(phase, || {
                self.lifecycle().around_model_call(&cx, request, next)
            })
            .await;
        let stream = settle(phase, &failure, out)?;
        Ok((stream, route_of(&leaf)))
    }

    /// The next tool to finish: `None` when none is left, `Some(None)` when
    /// the run was stopped first.
    async fn next_tool<T: 'static>(
        &self,
        running: &mut JoinSet<T>,
    ) -> Option<Option<Result<T, tokio::task::JoinError>>> {
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

    /// The canonical stages for one stream (L7): the lifecycle's stage, if any.
    fn canonical(
        &self,
        kind: StreamKind,
        step: Option<u32>,
    ) -> Result<Vec<Box<dyn StreamTransform>>, Fail> {
        if !self.handles(Phase::TransformStepStream) {
            return Ok(Vec::new());
        }
        let cx = self.cx();
        let input = StreamInput { step, kind };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.lifecycle().transform_step_stream(&cx, &input)
        })) {
            Ok(stage) => Ok(stage
                .map(|t| match kind {
                    StreamKind::Model => t,
                    StreamKind::Respond | StreamKind::Replacement => NoAbort::wrap(t),
                })
                .into_iter()
                .collect()),
            Err(p) => Err(Fail {
                phase: Phase::TransformStepStream.as_str(),
                message: format!("hook panicked: {}", panic_message(&*p)),
            }),
        }
    }

    /// Finished parts (a response or a replacement) through fresh canonical
    /// stages; a panic there fails the run (X2).
    fn finished(
        &self,
        kind: StreamKind,
        step: Option<u32>,
        parts: Vec<Part>,
    ) -> Result<Vec<Part>, Fail> {
        let stages = self.canonical(kind, step)?;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            transform_parts(stages, parts)
        }))
        .map_err(|p| Fail {
            phase: Phase::TransformStepStream.as_str(),
            message: format!("stream transform panicked: {}", panic_message(&*p)),
        })
    }

    /// The thread's watchers for one step; empty when nobody watches.
    fn live_step(&self, step: u32) -> LiveStep<'_> {
        let map = self.sh.store.lock();
        LiveStep {
            watchers: map
                .get(self.thread)
                .map(|rec| rec.watchers.clone())
                .unwrap_or_default(),
            run_id: self.run,
            step,
        }
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
        let (anchor, incarnation) = {
            let mut map = self.sh.store.lock();
            let rec = map.get_mut(self.thread).ok_or_else(|| Fail {
                phase: "resolve_model_context",
                message: StoreError::NoThread(self.thread.to_string()).to_string(),
            })?;
            // A steering message stored before this anchor is taken by this
            // step; only one that arrives later makes the step hand over (A4).
            rec.pending_steer = None;
            (rec.last_seq(), rec.incarnation)
        };
        let history = History::new(
            &self.sh.store,
            self.thread,
            &agent.name,
            incarnation,
            anchor,
        );
        let mut messages = self.resolve_context(step, &history).await?;
        self.emit(|| EventKind::ResolveModelContext {
            step,
            anchor,
            messages: messages.len(),
        });
        // Episode overlay after the resolver (M5); it lives for this episode only (P8).
        let context_len = messages.len();
        let mut replaced = overlay.replaces();
        // Hooks may have reshaped the context; such a context is paired again
        // before it is sent (H6). The runtime's own derivation already is.
        let mut reshaped = self.handles(Phase::ResolveModelContext) || !overlay.is_empty();
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
            replaced |= p.replace_model_messages.is_some();
            reshaped |= p.replace_model_messages.is_some() || !p.append_model_messages.is_empty();
            step_route.apply(&p.route);
            p.apply_messages(&mut messages);
        }
        if reshaped {
            messages = pair_tool_calls(messages);
        }
        self.emit(|| EventKind::PrepareModelStep {
            step,
            route: step_route.clone(),
            messages: messages.len(),
        });

        let tools = offered(&self.sh.tool_specs, &step_route);
        let request = ModelRequest {
            run_id: self.run.to_string(),
            step,
            route: step_route,
            instructions: agent.instructions.clone(),
            tools,
            messages,
            timeout_ms: None,
            registered: self.sh.tool_specs.clone(),
        };
        let counts = SentCounts {
            context: if replaced { 0 } else { context_len },
        };
        let (mut stream, attempt_route) = self.call_model(step, &request, counts).await?;

        // The provider stream through the canonical transforms (S1, L7):
        // their output alone is stored, released live and reused as context.
        let mut pipeline = Pipeline::new(self.canonical(StreamKind::Model, Some(step))?);
        let live = self.live_step(step);
        let mut assembled = Assembler::default();
        let (mut deltas, mut chars) = (0usize, 0usize);
        let mut finish = None;
        let mut error = None;
        let mut abort = None;
        let mut transform_panic = None;
        // Parts are handled synchronously inside the poll, as many as are
        // ready (at most BATCH, then the task yields), so a ready stream costs
        // one poll and one panic guard per batch, not per part.
        const BATCH: usize = 1024;
        let mut in_transform = false;
        let clock = &*self.sh.clock;
        std::future::poll_fn(|cx| {
            let batch = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                for _ in 0..BATCH {
                    let part = match stream.poll_next(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(None) => return Poll::Ready(()),
                        Poll::Ready(Some(StreamPart::Finish(r))) => {
                            finish = Some(r);
                            continue;
                        }
                        Poll::Ready(Some(StreamPart::Error(e))) => {
                            error = Some(e);
                            return Poll::Ready(());
                        }
                        Poll::Ready(Some(part)) => part,
                    };
                    if let StreamPart::TextDelta(d) = &part {
                        deltas += 1;
                        chars += d.chars().count();
                    }
                    let at = if live.watchers.is_empty() {
                        0
                    } else {
                        clock.now()
                    };
                    in_transform = true;
                    let aborted = pipeline.push(part, &mut |p| {
                        live.send(at, &p);
                        assembled.push(p);
                    });
                    in_transform = false;
                    if let Some(a) = aborted {
                        abort = Some(a);
                        return Poll::Ready(());
                    }
                }
                cx.waker().wake_by_ref();
                Poll::Pending
            }));
            match batch {
                Ok(p) => p,
                Err(p) => {
                    let msg = panic_message(&*p);
                    if in_transform {
                        transform_panic = Some(msg);
                    } else {
                        error = Some(format!("model stream panicked: {msg}"));
                    }
                    Poll::Ready(())
                }
            }
        })
        .await;
        drop(stream);
        if error.is_none() && abort.is_none() && transform_panic.is_none() {
            let at = self.sh.clock.now();
            let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pipeline.finish(&mut |p| {
                    live.send(at, &p);
                    assembled.push(p);
                })
            }));
            match finished {
                Ok(a) => abort = a,
                Err(p) => transform_panic = Some(panic_message(&*p)),
            }
        }
        live.end(
            self.sh.clock.now(),
            abort.as_ref().map(|a| a.reason.as_str()),
        );
        let parts = assembled.into_parts();
        let calls: Vec<Call> = if abort.is_some() {
            Vec::new()
        } else {
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
        };
        self.emit(|| EventKind::Stream {
            step,
            deltas,
            chars,
            tool_calls: calls.len(),
            finish,
            error: error.clone(),
            aborted: abort.as_ref().map(|a| a.reason.clone()),
        });
        if let Some(panic) = transform_panic {
            return Err(Fail {
                phase: "transform_step_stream",
                message: format!("stream transform panicked: {panic}"),
            });
        }
        if let Some(e) = error {
            return Err(Fail {
                phase: "stream",
                message: format!("provider error: {e}"),
            });
        }

        // commit_step: the canonical parts, or an abort's replacement (S4),
        // itself passed through fresh canonical transforms.
        let (parts, pai) = match &abort {
            None => (parts, self.meta(Producer::Model, Some(step))),
            Some(a) => {
                let mut pai = self.meta(Producer::Lifecycle, Some(step));
                pai.outcome = Some(a.outcome);
                pai.reason = Some(a.reason.clone());
                let parts =
                    self.finished(StreamKind::Replacement, Some(step), a.replacement.clone())?;
                (parts, pai)
            }
        };
        let mut message = Message {
            id: self.sh.ids.next_id(IdKind::Message),
            seq: 0,
            role: Role::Assistant,
            parts,
            visibility: Visibility::ALL,
            pai,
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
            // Calls are checked against the route of the attempt that answered (P6).
            self.tools(step, &attempt_route, &calls).await?
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
        // SPEC A2, A3: complete > (waiting) > steering > next_step > natural.
        let steering = {
            let map = self.sh.store.lock();
            map.get(self.thread)
                .is_some_and(|rec| rec.pending_steer.is_some())
        };
        let mut transition = match decision {
            _ if abort.is_some() => {
                let a = abort.as_ref().expect("checked");
                Transition::Aborted {
                    outcome: a.outcome,
                    reason: a.reason.clone(),
                }
            }
            AfterStepDecision::Complete => Transition::Complete { reason: None },
            _ if steering => Transition::Steer,
            AfterStepDecision::NextStep => Transition::NextStep,
            AfterStepDecision::Natural if calls.is_empty() => Transition::Complete { reason: None },
            AfterStepDecision::Natural => Transition::NextStep,
        };
        if matches!(transition, Transition::NextStep | Transition::Steer)
            && step + 1 >= agent.max_steps
        {
            transition = Transition::Complete {
                reason: Some("max_steps".to_string()),
            };
        }
        if transition == Transition::Steer {
            // The steering message is taken by the next step (A4).
            let mut map = self.sh.store.lock();
            if let Some(rec) = map.get_mut(self.thread) {
                rec.pending_steer = None;
            }
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
        loop {
            let Some(joined) = self.next_tool(&mut running).await else {
                break;
            };
            let Some(joined) = joined else {
                // Stopped: running tools are cancelled and their cancelled
                // results reach after_tool_result and the store (T8, T4, H6).
                running.abort_all();
                for (i, c) in calls.iter().enumerate() {
                    if finals[i].is_some() {
                        continue;
                    }
                    let result = ToolResult {
                        call_id: c.call_id.clone(),
                        tool: c.tool.clone(),
                        status: ToolStatus::Error,
                        source: ResultSource::Cancelled,
                        output: Value::String(
                            "The run was cancelled before the tool finished.".into(),
                        ),
                    };
                    self.emit(|| EventKind::ToolEnd {
                        step,
                        result: result.clone(),
                        detail: None,
                    });
                    finals[i] = Some(self.after_tool_result(step, result).await?);
                }
                break;
            };
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
        if self.stop.is_set() {
            return Err(Fail {
                phase: "tools",
                message: "stopped".into(),
            });
        }
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
