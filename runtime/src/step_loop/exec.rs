//! `Exec`: one execution episode of one run, and what every stage of it
//! shares: calling hooks (and skipping phases no hook handles), committing
//! under the episode's lease, and reporting events.

use crate::store::FencingToken;
use tracing::Instrument;

use super::batch::ResultBatch;
use super::lease::RunLease;
use crate::attempt::AttemptEvents;
use crate::context::cache::ContextCache;
use crate::error::{FailureCell, HookResult};
use crate::event::{EventKind, RunStage};
use crate::future::{HookFuture, guarded};
use crate::lifecycle::{HookCx, HookNote, HookTrace, Lifecycle, Phase, RunFacade};
use crate::message::{NewMessage, PaiMeta, Producer};
use crate::shared::Shared;
use crate::stop::StopSignal;
use crate::store::{Appended, StoreError};

/// Why an episode stopped early: where, and the message.
#[derive(Debug)]
pub(super) struct Fail {
    pub(super) stage: RunStage,
    pub(super) message: String,
}

impl Fail {
    pub(super) fn new(stage: RunStage, message: impl Into<String>) -> Fail {
        Fail {
            stage,
            message: message.into(),
        }
    }

    pub(super) fn phase(phase: Phase, message: impl Into<String>) -> Fail {
        Fail::new(RunStage::Phase(phase), message)
    }
}

/// One execution episode of one run.
pub(super) struct Exec<'a, C> {
    pub(super) sh: &'a Shared<C>,
    pub(super) thread: &'a str,
    pub(super) run: &'a str,
    pub(super) episode: u32,
    /// The episode resumes the run (after a wait, or a takeover), as its
    /// `prepare_run` says.
    pub(super) resumed: bool,
    /// The episode's fencing token: every write carries it (SPEC K2).
    pub(super) token: FencingToken,
    pub(super) stop: &'a StopSignal,
    /// The run's lease: once lost, the episode writes nothing more (K3).
    pub(super) lease: &'a RunLease,
    /// The default context as of the last step, extended step by step.
    pub(super) context: &'a ContextCache,
    /// What hooks write about the results being produced, staged for
    /// their commit (K5).
    pub(super) batch: ResultBatch,
}

impl<C: Send + Sync + 'static> HookTrace for Exec<'_, C> {
    fn note(&self, note: HookNote) {
        self.emit(|| EventKind::Hook(note));
    }
}

impl<C: Send + Sync + 'static> AttemptEvents for Exec<'_, C> {
    fn event(&self, kind: Box<dyn FnOnce() -> EventKind + '_>) {
        self.emit(kind);
    }
}

impl<'a, C: Send + Sync + 'static> Exec<'a, C> {
    pub(super) fn lifecycle(&self) -> &'a dyn Lifecycle<C> {
        &*self.sh.agent.lifecycle
    }

    /// Whether some hook handles `phase`; if none does, the runtime's default
    /// applies and no hook is called (nor anything built for it).
    pub(super) fn handles(&self, phase: Phase) -> bool {
        self.sh.agent.lifecycle.phases().contains(phase)
    }

    pub(super) fn emit(&self, kind: impl FnOnce() -> EventKind) {
        self.sh.emit(self.thread, self.run, kind);
    }

    pub(super) fn cx(&self) -> HookCx<'_, C> {
        HookCx {
            context: &self.sh.context,
            run_id: self.run,
            thread_id: self.thread,
            episode: self.episode,
            resumed: self.resumed,
            now: self.sh.clock.now(),
            trace: self.sh.sink.as_ref().map(|_| self as &dyn HookTrace),
            run: Some(self as &dyn RunFacade),
        }
    }

    /// The one way a decision phase is asked: the composed hook if it handles
    /// `phase`, else the phase's default decision. An error or a panic in
    /// the hook fails the run (SPEC L4, X2).
    pub(super) async fn decide<I, T: Default>(
        &self,
        phase: Phase,
        input: &I,
        call: impl for<'c> FnOnce(
            &'c dyn Lifecycle<C>,
            &'c HookCx<'c, C>,
            &'c I,
        ) -> HookFuture<'c, HookResult<T>>,
    ) -> Result<T, Fail> {
        if !self.handles(phase) {
            return Ok(T::default());
        }
        let cx = self.cx();
        let lifecycle = self.lifecycle();
        self.hook(phase, || call(lifecycle, &cx, input)).await
    }

    /// Runs a hook call; an error or a panic fails the run (SPEC L4, X2).
    pub(super) async fn hook<'f, T>(
        &self,
        phase: Phase,
        make: impl FnOnce() -> HookFuture<'f, HookResult<T>>,
    ) -> Result<T, Fail> {
        let span = tracing::debug_span!("phase", name = phase.as_str());
        match guarded(make).instrument(span).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Fail::phase(phase, e.message)),
            Err(panic) => Err(Fail::phase(phase, format!("hook panicked: {panic}"))),
        }
    }

    /// The outcome of an onion phase: a hook failure recorded anywhere inside
    /// it wins over whatever the outermost hook returned (SPEC L4).
    pub(super) fn settle<T>(
        phase: Phase,
        failure: &FailureCell,
        out: Result<T, Fail>,
    ) -> Result<T, Fail> {
        match failure.take() {
            Some(e) => Err(Fail::phase(phase, e.message)),
            None => out,
        }
    }

    /// Provenance for a message this run writes now.
    pub(super) fn meta(&self, producer: Producer, step: Option<u32>) -> PaiMeta {
        PaiMeta::new(producer, Some(self.run), step, self.sh.clock.now())
    }

    /// Commits messages under the episode's lease (SPEC K2); with `step`,
    /// the commit of that model step. A refused write fails the episode in
    /// `stage` (and loses the lease if it was stale, K3).
    pub(super) async fn commit(
        &self,
        stage: RunStage,
        messages: Vec<NewMessage>,
        step: Option<u32>,
    ) -> Result<Appended, Fail> {
        self.commit_carrying(stage, messages, step, None).await
    }

    /// [`Exec::commit`], replacing the run's metadata in the same commit
    /// when `metadata` is given: what hooks wrote about the results the
    /// messages hold (K5).
    pub(super) async fn commit_carrying(
        &self,
        stage: RunStage,
        messages: Vec<NewMessage>,
        step: Option<u32>,
        metadata: Option<serde_json::Value>,
    ) -> Result<Appended, Fail> {
        self.writable(stage)?;
        let (thread, run) = (self.thread, self.run);
        self.sh
            .commit(thread, run, self.token, messages, step, metadata)
            .await
            .map_err(|e| self.store_fail(stage, e))
    }

    /// A run whose lease is lost stops at its next write (K3).
    pub(super) fn writable(&self, stage: RunStage) -> Result<(), Fail> {
        match self.lease.lost() {
            Some(why) => Err(Fail::new(stage, why)),
            None => Ok(()),
        }
    }

    /// Among workers, before tools with side effects start: one renewal, so
    /// a holder that lost its lease (taken over while it paused) does not
    /// run a call whose result the new holder may have committed (K5). A
    /// pause longer than the lease between this check and the start can
    /// still run a call twice; its idempotency key is the last guard.
    pub(super) async fn confirm_lease(&self) -> Result<(), Fail> {
        let stage = RunStage::Tools;
        self.writable(stage)?;
        let Some(ttl) = self.sh.worker.lease_ttl else {
            return Ok(());
        };
        let sent = self.sh.clock.now();
        let renewed = super::lease::renew_once(self.sh, self.thread, self.run, self.token).await;
        if renewed.map_err(|e| self.refused(stage, "renew", e))? {
            self.hear_cancel("renew");
        }
        // An answer that took a whole lease to come proves nothing: the
        // lease may have expired, and been taken, in between.
        if self.sh.clock.now() >= sent + ttl {
            self.lease
                .lose("the lease's renewal was answered too late".to_string());
            return Err(Fail::new(stage, "lease renewal answered too late"));
        }
        Ok(())
    }

    /// A store error in `stage`; one that loses the lease is recorded. A
    /// worker that learns its thread's incarnation was deleted stops the
    /// run: its running tools are cancelled (H5, T8).
    pub(super) fn store_fail(&self, stage: RunStage, e: StoreError) -> Fail {
        self.refused(stage, stage.as_str(), e)
    }

    /// As `store_fail`, naming the `request` the store refused. A
    /// refusal that says the run was cancelled stops it (K6, T8).
    pub(super) fn refused(&self, stage: RunStage, request: &str, e: StoreError) -> Fail {
        self.hear_refusal(request, &e);
        Fail::new(stage, e.to_string())
    }

    /// What a refusal of the run's `request` tells its driver, whoever
    /// made the request (a step, a hook's read or mutation): a cancel
    /// stops the run (K6); an answer that loses the lease, or leaves it
    /// unknown whether the request landed (no answer in time), stops its
    /// writes, and the run is left for a taker (K3), not ended; a delete
    /// stops it (H5).
    pub(super) fn hear_refusal(&self, request: &str, e: &StoreError) {
        <Self as crate::context::StoreErrors>::heard(self, request, e);
    }
}

impl<C: Send + Sync + 'static> crate::context::StoreErrors for Exec<'_, C> {
    fn heard(&self, request: &str, e: &StoreError) {
        let at = (self.thread, self.run);
        let deleted = !self.cancelled(request, e)
            && super::lease::heard(self.sh, at, self.lease, request, e)
            && self.lease.deleted();
        if deleted {
            self.stop.trigger();
        }
    }
}

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// The store told this episode, answering `request`, that a client
    /// asked to cancel the run (K6): it stops.
    pub(super) fn hear_cancel(&self, request: &str) {
        let at = (self.thread, self.run);
        super::lease::hear_cancel(self.sh, at, self.lease, self.stop, request);
    }

    /// Whether `e` is the store's word that the run was cancelled (K6);
    /// if so, the episode heard it and stops.
    pub(super) fn cancelled(&self, request: &str, e: &StoreError) -> bool {
        let cancelled = matches!(e, StoreError::Cancelled { .. });
        if cancelled {
            self.hear_cancel(request);
        }
        cancelled
    }
}
