//! The client API: building a runtime, clients acting for an identity, and
//! thread handles that send, steer, cancel, answer waiting calls, watch and
//! read.

mod answer;
mod worker;

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::agent::Agent;
use crate::clock::{Clock, IdKind, IdSource};
use crate::event::{EventKind, EventSink};
use crate::id::{CallId, MessageId, RunId, ThreadId};
use crate::live::Watch;
use crate::message::Outcome;
use crate::message::{Message, NewMessage, PaiMeta, Part, Producer, Role, Visibility};
use crate::model::ModelProvider;
use crate::process::Process;
use crate::shared::Shared;
use crate::store::handle::Scope;
use crate::store::{
    CancelMiss, CancelTarget, RunEnd, RunRecord, RunStatus, Store, StoreError, StoreHandle,
    StoredThread, Submitted,
};
use crate::stream::StreamTransform;
use crate::worker::WorkerConfig;

/// A runtime that is missing a required part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A required part was not given; the text names it (`a model provider`, `a
    /// clock`, `an id source`).
    #[error("the runtime needs {0}")]
    Missing(&'static str),
    /// An agent must be allowed at least one step per run (SPEC A2).
    #[error("agent {agent}: max_steps must be at least 1")]
    MaxSteps {
        /// The agent's name.
        agent: String,
    },
    /// An `on_output` handler updates another metadata type than the agent's.
    #[error(
        "agent {agent}: on_output of tool {tool} updates {found}, but the run metadata is {expected}"
    )]
    MetadataType {
        /// The agent's name.
        agent: String,
        /// The tool whose handler is mistyped.
        tool: String,
        /// The run metadata type the agent declares
        /// ([`Agent::run_metadata`](crate::Agent::run_metadata)).
        expected: &'static str,
        /// The metadata type the handler updates.
        found: &'static str,
    },
}

/// What a client call can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The store refused or failed the request (for instance, the thread is
    /// another identity's, SPEC H4).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A cancel found no active or queued run on the thread (SPEC K6).
    #[error("thread {thread} has no active or queued run to cancel")]
    NoRun {
        /// The thread asked.
        thread: ThreadId,
    },
    /// A cancel named a run that is not a run of this thread.
    #[error("thread {thread} has no run {run}")]
    NoSuchRun {
        /// The thread asked.
        thread: ThreadId,
        /// The run named.
        run: RunId,
    },
    /// A cancel named a run that has already ended.
    #[error("run {run} has already ended")]
    RunEnded {
        /// The run named, which has ended.
        run: RunId,
    },
    /// No waiting call of the thread's current run has this id (SPEC T9).
    #[error("call {call} is not waiting for an answer")]
    NotWaiting {
        /// The call named.
        call: CallId,
    },
    /// The call has its answer already (SPEC T9).
    #[error("call {call} has been answered already")]
    AlreadyAnswered {
        /// The call named.
        call: CallId,
    },
    /// An approval or denial for a client tool's call, or an output for an
    /// approval tool's call.
    #[error("call {call} is a call of a {kind} tool and cannot be answered so")]
    WrongAnswer {
        /// The call named.
        call: CallId,
        /// The kind of its tool: `client` or `approval`.
        kind: &'static str,
    },
    /// A submitted output does not match the client tool's output type.
    #[error("output for call {call} does not match tool {tool}: {message}")]
    InvalidOutput {
        /// The call named.
        call: CallId,
        /// The client tool it calls.
        tool: String,
        /// What does not match, in words.
        message: String,
    },
}

/// Builds a [`Runtime`]; clock, ids and models are required.
pub struct RuntimeBuilder<C> {
    agent: Agent<C>,
    context: C,
    models: Option<Box<dyn ModelProvider>>,
    clock: Option<Arc<dyn Clock>>,
    ids: Option<Arc<dyn IdSource>>,
    sink: Option<Arc<dyn EventSink>>,
    store: Option<Arc<dyn Store>>,
    worker: WorkerConfig,
    rewrite_threads: usize,
}

impl<C: 'static> fmt::Debug for RuntimeBuilder<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl<C: Send + Sync + 'static> RuntimeBuilder<C> {
    /// The models the runtime calls, by the names routes give (required).
    pub fn models(mut self, models: impl ModelProvider) -> Self {
        self.models = Some(Box::new(models));
        self
    }

    /// The clock the runtime reads for every timestamp and timer (required):
    /// a wall clock in production, a virtual one in the simulator; the
    /// runtime never reads the OS clock itself.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Where run, thread, message and call ids come from (required): a seeded
    /// source makes runs reproducible.
    pub fn ids(mut self, ids: Arc<dyn IdSource>) -> Self {
        self.ids = Some(ids);
        self
    }

    /// Where events go; without a sink, none are built.
    pub fn events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Where threads are kept; without one, a [`crate::MemoryStore`] of
    /// this runtime's own, whose leases never expire.
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// How this runtime takes part among several workers sharing a store
    /// (SPEC K2, K3): its name, its lease time, whether its clients' sends
    /// are driven here or left to the workers.
    pub fn worker(mut self, worker: WorkerConfig) -> Self {
        self.worker = worker;
        self
    }

    /// How many threads' `history_rewritten` hooks may run at once
    /// (SPEC R3; default 4, at least 1).
    pub fn rewrite_concurrency(mut self, threads: usize) -> Self {
        self.rewrite_threads = threads;
        self
    }

    /// The runtime, checked: refused when a required part is missing, the
    /// agent's `max_steps` is 0 or an `on_output` handler updates another
    /// metadata type than the agent's.
    pub fn build(self) -> Result<Runtime<C>, BuildError> {
        if self.agent.max_steps == 0 {
            return Err(BuildError::MaxSteps {
                agent: self.agent.name.clone(),
            });
        }
        if let Some((tool, found)) = self.agent.on_output.mistyped(self.agent.metadata) {
            return Err(BuildError::MetadataType {
                agent: self.agent.name.clone(),
                tool: tool.to_string(),
                expected: self.agent.metadata.name(),
                found: found.name(),
            });
        }
        let models = self.models.ok_or(BuildError::Missing("a model provider"))?;
        let clock = self.clock.ok_or(BuildError::Missing("a clock"))?;
        let ids = self.ids.ok_or(BuildError::Missing("an id source"))?;
        let shared = Arc::new_cyclic(|me| Shared {
            tool_specs: self.agent.tools.iter().map(|t| t.spec().clone()).collect(),
            agent: self.agent,
            context: self.context,
            models,
            clock,
            ids,
            sink: self.sink,
            store: self.store.map(StoreHandle::new).unwrap_or_default(),
            worker: self.worker,
            process: Process::default(),
            rewrites: crate::pending_rewrites::Deliveries::new(self.rewrite_threads),
            me: me.clone(),
            start_driver: spawn_driver::<C>,
        });
        Ok(Runtime { shared })
    }
}

/// Starts a thread's driver task (what `Shared::start_driver` holds).
fn spawn_driver<C: Send + Sync + 'static>(sh: Arc<Shared<C>>, thread: String) {
    tokio::spawn(crate::step_loop::drive(sh, thread));
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

/// A thread as its client sees it: transcript-visible messages only.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadState {
    /// The thread's id.
    pub id: ThreadId,
    /// The thread's version: it grows with every committed change, and live
    /// events name the version they follow.
    pub version: u64,
    /// The transcript-visible messages, oldest first (context-only messages,
    /// such as hidden lifecycle messages, are left out).
    pub messages: Vec<Message>,
    /// The thread's client-readable metadata (trusted code's private metadata
    /// is not shown).
    pub metadata: Map<String, Value>,
    /// Every run of the thread, oldest first, with its status and outcome.
    pub runs: Vec<RunRecord>,
}

/// What `send` created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The stored user message.
    pub message_id: MessageId,
    /// The run that answers it: queued, or started at once when the thread is
    /// idle; for a steer taken by the active run, that run.
    pub run_id: RunId,
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
            store: None,
            worker: WorkerConfig::default(),
            rewrite_threads: 4,
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
    pub async fn inspect(&self, thread_id: &str) -> Result<Option<StoredThread>, StoreError> {
        self.shared.store.inspect(thread_id).await
    }

    /// The trusted admin API (SPEC H7): mutations, rewrites and deletion
    /// of any thread, outside any run and any client's scope.
    pub fn admin(&self) -> crate::facade::Admin<C> {
        crate::facade::Admin {
            shared: self.shared.clone(),
        }
    }

    /// Resolves once every committed rewrite's facts were delivered to
    /// `history_rewritten` hooks (SPEC R3): for tests and orderly shutdown.
    pub async fn rewrites_delivered(&self) {
        self.shared.rewrites.idle().await;
    }

    /// Ids of every stored thread, in order.
    pub async fn thread_ids(&self) -> Result<Vec<ThreadId>, StoreError> {
        self.shared.store.ids().await
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
    /// The thread `id` as this client reaches it. The first send or watch
    /// creates it, owned by this identity and the runtime's agent; a thread
    /// of another owner or agent is refused (SPEC H4).
    pub fn thread(&self, id: impl Into<String>) -> ThreadHandle<C> {
        ThreadHandle {
            runtime: self.runtime.clone(),
            identity: self.identity.clone(),
            id: id.into(),
        }
    }

    /// A fresh thread id from the runtime's id source.
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
    /// The thread's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn shared(&self) -> &Arc<Shared<C>> {
        &self.runtime.shared
    }

    fn scope(&self) -> Scope<'_> {
        Scope {
            thread: &self.id,
            agent: &self.shared().agent.name,
            owner: &self.identity,
        }
    }

    /// Reads the thread if this client's identity and agent may reach it (H4).
    async fn read_scoped(&self) -> Result<StoredThread, ClientError> {
        let Some(t) = self.shared().store.inspect(&self.id).await? else {
            return Err(StoreError::NoThread(self.id.clone().into()).into());
        };
        if t.owner != self.identity || t.agent != self.shared().agent.name {
            return Err(StoreError::Forbidden {
                thread: self.id.clone().into(),
            }
            .into());
        }
        Ok(t)
    }

    /// Appends a user message and queues a run for it (SPEC K1: one active
    /// run per thread, later runs wait in arrival order). Must be called inside
    /// a Tokio runtime: the thread's runs are driven by a spawned task.
    pub async fn send(&self, text: impl Into<String>) -> Result<Sent, ClientError> {
        self.submit(text.into(), false).await
    }

    /// Sends a steering message (SPEC A4): while a run is active, the message
    /// is stored at once and taken by that run's next step instead of starting
    /// a new run; with no active run it is an ordinary `send`.
    pub async fn steer(&self, text: impl Into<String>) -> Result<Sent, ClientError> {
        self.submit(text.into(), true).await
    }

    /// Cancels the thread's current run (SPEC K6, T8): the active run (its
    /// model attempt stops, running tools get cancelled results, and it ends
    /// with outcome cancelled), or else the oldest queued run, which then
    /// never starts. Returns the run it reached; a thread with no run to
    /// cancel is an error, so a cancel is never silently lost.
    pub async fn cancel(&self) -> Result<RunId, ClientError> {
        self.cancel_target(None).await
    }

    /// Cancels the run `run_id` of this thread (SPEC K6), active or queued.
    /// A run that has ended, or is not this thread's, is an error.
    pub async fn cancel_run(&self, run_id: &str) -> Result<RunId, ClientError> {
        self.cancel_target(Some(run_id)).await
    }

    async fn cancel_target(&self, run: Option<&str>) -> Result<RunId, ClientError> {
        let sh = self.shared();
        let mut attached = sh.process.attach(&self.id).await;
        let reached = sh.store.cancel(&self.scope(), run).await?;
        let miss = |m| match m {
            CancelMiss::NoRun => ClientError::NoRun {
                thread: self.id.as_str().into(),
            },
            CancelMiss::Unknown(run) => ClientError::NoSuchRun {
                thread: self.id.as_str().into(),
                run,
            },
            CancelMiss::Ended(run) => ClientError::RunEnded { run },
        };
        let reached = reached.map_err(miss)?;
        let version = reached.version;
        sh.told(&mut attached, version);
        let asked = |run: &str| sh.emit(&self.id, run, || EventKind::CancelRequested { version });
        match reached.target {
            CancelTarget::Active(run) => {
                attached.stop(&run);
                drop(attached);
                asked(&run);
                Ok(run)
            }
            CancelTarget::Waiting(run) => {
                // The waiting run resumes only to give its calls cancelled
                // results (T8) and end cancelled.
                let start = sh.worker.drives_sends() && attached.claim_driver();
                drop(attached);
                asked(&run);
                if start {
                    tokio::spawn(crate::step_loop::drive(sh.clone(), self.id.clone()));
                }
                Ok(run)
            }
            CancelTarget::Queued(run) => {
                let end = RunEnd {
                    status: RunStatus::Cancelled,
                    outcome: Outcome::Cancelled,
                    reason: Some("cancelled while queued".to_string()),
                };
                sh.run_ended(&mut attached, &run, &end);
                drop(attached);
                sh.emit(&self.id, &run, || EventKind::ended(&end, Some(version)));
                Ok(run)
            }
        }
    }

    /// Watches the thread live (SPEC S2): every step's canonical stream as it
    /// is released, shaped by `live` transforms for this watcher only, and
    /// one invalidation per commit (H1). Creates the thread if needed.
    pub async fn watch(&self, live: Vec<Box<dyn StreamTransform>>) -> Result<Watch, ClientError> {
        let sh = self.shared();
        let mut attached = sh.process.attach(&self.id).await;
        sh.store.open(&self.scope()).await?;
        let (slot, watch) = crate::live::watcher(live);
        attached.watchers.push(slot);
        Ok(watch)
    }

    async fn submit(&self, text: String, steer: bool) -> Result<Sent, ClientError> {
        let sh = self.shared();
        let message_id = MessageId::new(sh.ids.next_id(IdKind::Message));
        let message = NewMessage {
            id: message_id.clone(),
            role: Role::User,
            parts: vec![Part::text(text)],
            visibility: Visibility::ALL,
            pai: PaiMeta::new(Producer::User, None, None, sh.clock.now()),
        };
        // One critical section: a run admitted here is seen by the driver, or
        // the driver has stopped and this call starts a new one.
        let mut attached = sh.process.attach(&self.id).await;
        // A steer asks for a run id only when there is no run to steer.
        let mut new_run = (!steer).then(|| RunId::new(sh.ids.next_id(IdKind::Run)));
        let submitted = loop {
            let scope = self.scope();
            let m = message.clone();
            match sh.store.submit(&scope, m, steer, new_run.clone()).await? {
                Some(s) => break s,
                None if new_run.is_none() => {
                    new_run = Some(RunId::new(sh.ids.next_id(IdKind::Run)))
                }
                None => return Err(StoreError::Protocol("a run id was refused".into()).into()),
            }
        };
        let (run_id, version) = match &submitted {
            Submitted::Run { run, version } | Submitted::Steer { run, version } => {
                (run.clone(), *version)
            }
        };
        let start = matches!(submitted, Submitted::Run { .. })
            && sh.worker.drives_sends()
            && attached.claim_driver();
        sh.told(&mut attached, version);
        drop(attached);
        match submitted {
            Submitted::Steer { .. } => sh.emit(&self.id, &run_id, || EventKind::Steered {
                message: message_id.clone(),
            }),
            Submitted::Run { .. } => {
                sh.emit(&self.id, &run_id, || EventKind::Admitted {
                    trigger: message_id.clone(),
                });
                if start {
                    tokio::spawn(crate::step_loop::drive(sh.clone(), self.id.clone()));
                }
            }
        }
        Ok(Sent { message_id, run_id })
    }

    /// The thread as this client may see it.
    pub async fn state(&self) -> Result<ThreadState, ClientError> {
        let t = self.read_scoped().await?;
        Ok(ThreadState {
            id: self.id.clone().into(),
            version: t.version,
            messages: t
                .messages
                .into_iter()
                .filter(|m| m.visibility.transcript)
                .collect(),
            metadata: t.metadata,
            runs: t.runs,
        })
    }

    /// Waits until no run of the thread is being driven (none is active or
    /// queued, or the current run waits for a client, T7), then returns its
    /// state.
    pub async fn wait_until_idle(&self) -> Result<ThreadState, ClientError> {
        self.wait_idle().await?;
        self.state().await
    }

    /// Waits as [`wait_until_idle`](Self::wait_until_idle) does, without
    /// reading the state afterwards.
    pub async fn wait_idle(&self) -> Result<(), ClientError> {
        let sh = self.shared();
        // A thread deleted meanwhile (H5) may still have a run winding down
        // in this process: wait for it all the same (`wait_until_idle` then
        // says it is gone).
        match self.read_scoped().await {
            Err(ClientError::Store(StoreError::NoThread(_))) | Ok(_) => {}
            Err(e) => return Err(e),
        }
        let mut driving = sh.process.attach(&self.id).await.driving();
        // The sender lives as long as the runtime.
        let _ = driving.wait_for(|d| !*d).await;
        Ok(())
    }
}
