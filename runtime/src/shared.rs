//! The parts of one runtime that its clients and driver tasks share: the
//! agent, the injected clock, ids and models, the event sink, the store and
//! this process's side of each thread.

use std::sync::Arc;

use crate::agent::Agent;
use crate::clock::{Clock, IdSource};
use crate::event::{Event, EventKind, EventSink};
use crate::live::LiveEvent;
use crate::message::Message;
use crate::model::ModelProvider;
use crate::process::{Attached, Process};
use crate::store::{Appended, RunEnd, Store, StoreError};
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
    pub(crate) store: Store,
    pub(crate) process: Process,
}

impl<C> Shared<C> {
    /// Records an event, built only when a sink listens.
    pub(crate) fn emit(&self, thread: &str, run: &str, kind: impl FnOnce() -> EventKind) {
        if let Some(sink) = &self.sink {
            sink.record(Event {
                at: self.clock.now(),
                thread_id: thread.to_string(),
                run_id: run.to_string(),
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
            run_id: run.to_string(),
            status: end.status,
            outcome: end.outcome,
            reason: end.reason.clone(),
        });
    }

    /// Tells a thread's watchers that `run` waits on `calls` (T7).
    pub(crate) fn run_waits(&self, thread: &str, run: &str, calls: Vec<crate::store::WaitingCall>) {
        let mut process = self.process.lock();
        let attached = process.entry(thread.to_string()).or_default();
        if attached.watchers.is_empty() {
            return;
        }
        let at = self.clock.now();
        crate::live::tell(&mut attached.watchers, || LiveEvent::RunWaiting {
            at,
            run_id: run.to_string(),
            calls: calls.clone(),
        });
    }

    /// Appends messages to a thread in one commit (under `token` for a run's
    /// writes, SPEC K2) and tells its watchers.
    pub(crate) fn commit(
        &self,
        thread: &str,
        token: Option<u64>,
        messages: impl IntoIterator<Item = Message>,
    ) -> Result<Appended, StoreError> {
        self.commit_in(thread, |store, _| {
            let appended = store.write(thread, |rec| rec.append(token, messages))??;
            Ok((appended, appended.version))
        })
    }

    /// Runs one store operation that commits once (it returns the new
    /// version) with the thread's process side at hand, then tells its
    /// watchers. The process side stays
    /// locked throughout, so watchers hear of commits in version order (H1).
    pub(crate) fn commit_in<T, E>(
        &self,
        thread: &str,
        op: impl FnOnce(&Store, &mut Attached) -> Result<(T, u64), E>,
    ) -> Result<T, E> {
        let mut process = self.process.lock();
        let attached = process.entry(thread.to_string()).or_default();
        let (out, version) = op(&self.store, attached)?;
        if !attached.watchers.is_empty() {
            let at = self.clock.now();
            crate::live::committed(&mut attached.watchers, at, version);
        }
        Ok(out)
    }
}
