//! The parts of one runtime that its clients and driver tasks share: the
//! agent, the injected clock, ids and models, the event sink, the store and
//! this process's side of each thread.

use std::sync::Arc;

use crate::agent::Agent;
use crate::clock::{Clock, IdSource};
use crate::event::{Event, EventKind, EventSink};
use crate::live::LiveEvent;
use crate::message::NewMessage;
use crate::model::ModelProvider;
use crate::process::{Attached, Process};
use crate::store::FencingToken;
use crate::store::{Appended, RunEnd, StoreError, StoreHandle, WaitingCall};
use crate::tool::ToolSpec;

pub(crate) struct Shared<C> {
    pub(crate) agent: Agent<C>,
    /// Every registered tool's spec, built once.
    pub(crate) tool_specs: Arc<[ToolSpec]>,
    pub(crate) context: C,
    pub(crate) models: Box<dyn ModelProvider>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ids: Arc<dyn IdSource>,
    pub(crate) sink: Option<Arc<dyn EventSink>>,
    pub(crate) store: StoreHandle,
    /// This process's name as a lease holder, and how long its leases last.
    pub(crate) worker: crate::worker::WorkerConfig,
    pub(crate) process: Process,
    /// Rewrite facts on their way to `history_rewritten` (SPEC R3).
    pub(crate) rewrites: crate::pending_rewrites::Deliveries,
    /// This value itself, for tasks it starts.
    pub(crate) me: std::sync::Weak<Shared<C>>,
    /// Starts a thread's driver task (`step_loop::drive`), for the facade,
    /// which the step loop itself depends on.
    pub(crate) start_driver: fn(Arc<Shared<C>>, String),
}

impl<C> Shared<C> {
    /// Records an event, built only when a sink listens.
    pub(crate) fn emit(&self, thread: &str, run: &str, kind: impl FnOnce() -> EventKind) {
        if let Some(sink) = &self.sink {
            sink.record(Event {
                at: self.clock.now(),
                thread_id: thread.into(),
                run_id: run.into(),
                worker: self.worker.name.clone(),
                kind: kind(),
            });
        }
    }

    /// Tells a thread's watchers that `run` ended (a run's status is not a
    /// commit, so they hear it here).
    pub(crate) fn run_ended(&self, attached: &mut Attached, run: &str, end: &RunEnd) {
        attached.end_run(run);
        let at = self.clock.now();
        crate::live::tell(&mut attached.watchers, || LiveEvent::RunEnded {
            at,
            run_id: run.into(),
            status: end.status,
            outcome: end.outcome,
            reason: end.reason.clone(),
        });
    }

    /// Tells a thread's watchers that `run` waits on `calls` (T7).
    pub(crate) async fn run_waits(&self, thread: &str, run: &str, calls: Vec<WaitingCall>) {
        let mut attached = self.process.attach(thread).await;
        if attached.watchers.is_empty() {
            return;
        }
        let at = self.clock.now();
        crate::live::tell(&mut attached.watchers, || LiveEvent::RunWaiting {
            at,
            run_id: run.into(),
            calls: calls.clone(),
        });
    }

    /// Tells a thread's watchers of a commit that made `version` (H1); the
    /// caller holds the thread's process side since before the commit, so
    /// they hear of commits in version order.
    pub(crate) fn told(&self, attached: &mut Attached, version: u64) {
        if !attached.watchers.is_empty() {
            let at = self.clock.now();
            crate::live::committed(&mut attached.watchers, at, version);
        }
    }

    /// Appends a run's messages in one commit under its lease token (SPEC
    /// K2; with `step`, the commit of that model step; with `metadata`,
    /// the run's metadata its hooks wrote about them, K5) and tells the
    /// thread's watchers.
    pub(crate) async fn commit(
        &self,
        thread: &str,
        run: &str,
        token: FencingToken,
        messages: Vec<NewMessage>,
        step: Option<u32>,
        metadata: Option<serde_json::Value>,
    ) -> Result<Appended, StoreError> {
        let mut attached = self.process.attach(thread).await;
        let appended = self
            .store
            .append(thread, run, token, messages, step, metadata)
            .await?;
        self.told(&mut attached, appended.version);
        Ok(appended)
    }
}
