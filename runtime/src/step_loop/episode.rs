//! One execution episode (SPEC §1): `prepare_run`, then (on a resume) the
//! waiting calls' results, then steps until the run ends, waits for a
//! client (T7), or a steering message asks for a new episode (A4, P8). A
//! worker that took the run over first settles its last committed step
//! (K3): only a run that goes on runs `prepare_run`.

use tracing::Instrument;

use super::exec::{Exec, Fail};
use super::resume::Resolution;
use super::tools::GivenUp;
use crate::clock::IdKind;
use crate::event::{EventKind, RunStage, Transition};
use crate::id::MessageId;
use crate::lifecycle::{Phase, Response, RunDecision, RunInput, StreamKind};
use crate::message::{Message, NewMessage, Outcome, Producer, Role, Visibility};
use crate::patch::{Overlay, Route};
use crate::store::{RunEnd, RunStatus, WaitingCall};

/// How an episode ended.
#[derive(Debug)]
pub(super) enum EpisodeEnd {
    /// The run is over.
    Run(RunEnd),
    /// A steering message is waiting: the run goes on in a new episode (SPEC A4, P8).
    Steer,
    /// The run waits for a client to answer these calls (SPEC T7); its lease
    /// was released already, in the commit that made the version given.
    Wait(Vec<WaitingCall>, u64),
    /// The run's lease is lost (K3): this process leaves the run.
    Lost(String),
}

/// How a taker found the run's last committed step, once it settled it
/// (K3, `takeover.rs`).
#[derive(Debug)]
pub(super) enum Settled {
    /// The step's transition ended the episode: the run ends, or waits.
    Ended(EpisodeEnd),
    /// The run goes on: `prepare_run`, then its next step.
    GoesOn,
    /// The step waited and the run was resumed since: the episode goes on
    /// as a resumed one does (its answered calls resolved after
    /// `prepare_run`).
    Resumes,
}

/// How an episode begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Start {
    /// A new run, or a new episode of a run this driver holds.
    Fresh,
    /// The run waited, and every waiting call has its answer or a cancel came.
    Resumed,
    /// The run's previous holder lost its lease (K3): the run continues
    /// from its last committed step, whose transition it decides first;
    /// calls of that step without a committed result run again (K5).
    TakenOver,
}

impl Start {
    pub(super) fn of(claimed: &crate::store::Claimed) -> Start {
        match (claimed.resumed, &claimed.takeover) {
            (false, _) => Start::Fresh,
            (true, None) => Start::Resumed,
            (true, Some(_)) => Start::TakenOver,
        }
    }
}

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// One episode; `next_step` is the run's next step number, carried from
    /// one episode to the next.
    pub(super) async fn episode(
        &self,
        next_step: &mut u32,
        start: Start,
    ) -> Result<EpisodeEnd, Fail> {
        let resumed = start != Start::Fresh;
        if resumed && self.stop.is_set() {
            // A waiting run cancelled, or a run taken over after a cancel:
            // its open calls get cancelled results (T8, K3) and no phase
            // runs for a run that is over.
            return self.close_cancelled(start).await;
        }
        // A taker first decides how the last committed step ends (K3).
        let start = match start {
            Start::TakenOver => match self.settle_last().await? {
                Settled::Ended(end) => return Ok(end),
                Settled::Resumes => Start::Resumed,
                Settled::GoesOn => Start::TakenOver,
            },
            other => other,
        };
        if resumed && self.stop.is_set() {
            // A cancel heard while the taker settled the last step.
            return Err(Fail::new(RunStage::BetweenSteps, "stopped"));
        }
        let mut route = Route::new(self.sh.agent.model.clone());
        let mut overlay = Overlay::default();
        let (messages, latest) = match self.run_messages().await {
            // A cancel the store answered with (K6): a resumed run only
            // closes its open calls.
            Err(_) if resumed && self.stop.is_set() => return self.close_cancelled(start).await,
            read => read?,
        };
        match self.prepare_run(&route, &messages, latest, resumed).await? {
            RunDecision::Respond(r) => {
                if resumed {
                    self.resume(Resolution::GiveUp(GivenUp::Responded)).await?;
                }
                let judged = latest.map(|i| messages[i].id.clone());
                return self.respond(r, judged).await.map(EpisodeEnd::Run);
            }
            RunDecision::Continue(p) => {
                route.apply(&p.route);
                overlay.push(&p);
            }
        }
        let latest_user = latest.map(|i| messages[i].id.clone());
        self.emit(|| EventKind::PrepareRun {
            route: route.clone(),
            overlay: overlay.appended(),
            latest_user,
            resumed,
        });
        if resumed && self.stop.is_set() {
            // Cancelled while prepare_run ran: no approved call starts now.
            return self.close_cancelled(start).await;
        }
        if resumed && let Some(end) = self.pick_up(start, *next_step).await? {
            return Ok(end);
        }
        loop {
            if self.stop.is_set() {
                return Err(Fail::new(RunStage::BetweenSteps, "stopped"));
            }
            let transition = self
                .step(*next_step, &route, &overlay)
                .instrument(tracing::info_span!("step", step = *next_step))
                .await?;
            *next_step += 1;
            if transition == Transition::Wait {
                let (calls, version) = self.lease.take_waited();
                return Ok(EpisodeEnd::Wait(calls, version));
            }
            if let Some(end) = episode_end(transition) {
                return Ok(end);
            }
        }
    }

    /// A resumed run before its next step `next_step`: its answered calls
    /// get their results (T9); a run at its step limit ends there. A
    /// taker settled its last step before (K3).
    async fn pick_up(&self, start: Start, next_step: u32) -> Result<Option<EpisodeEnd>, Fail> {
        if start == Start::Resumed {
            self.resume(Resolution::Answered).await?;
        }
        if next_step >= self.sh.agent.max_steps {
            return Ok(Some(EpisodeEnd::Run(RunEnd {
                status: RunStatus::Completed,
                outcome: Outcome::Completed,
                reason: Some("max_steps".to_string()),
            })));
        }
        Ok(None)
    }

    /// A resumed or taken-over run that was cancelled (T8, K3): every call
    /// without a committed result gets a cancelled result that
    /// `after_tool_result` sees, committed under this episode's token; no
    /// call runs (again). The run then ends cancelled.
    async fn close_cancelled(&self, start: Start) -> Result<EpisodeEnd, Fail> {
        let how = Resolution::GiveUp(GivenUp::Cancelled);
        let given_up = self.resolve_waiting(how).await?;
        let (step, finals) = given_up.unwrap_or_default();
        // One commit closes every open call (SPEC §1 `cancel_close`).
        match start {
            Start::TakenOver => self.close_orphans(step, finals).await?,
            _ if !finals.is_empty() => self.commit_answered(step, &finals).await?,
            _ => {}
        }
        Err(Fail::new(RunStage::Resume, "stopped"))
    }

    /// What `prepare_run` sees of the thread (L1): its stored messages at
    /// episode start without those of runs queued behind this one, and the
    /// index of this run's newest user message among them. Without a hook
    /// to read them, only that message is copied (for the event log).
    async fn run_messages(&self) -> Result<(Vec<Message>, Option<usize>), Fail> {
        let all = self.handles(Phase::PrepareRun);
        let fence = (self.thread, self.run, self.token);
        let read = self.sh.store.run_messages(fence, all).await;
        let (messages, latest) =
            read.map_err(|e| self.store_fail(RunStage::Phase(Phase::PrepareRun), e))?;
        let index = latest.and_then(|seq| messages.iter().position(|m| m.seq == seq));
        Ok((messages, index))
    }

    /// `prepare_run` (L1, L5): continue with a run patch, or respond.
    async fn prepare_run(
        &self,
        route: &Route,
        messages: &[Message],
        latest: Option<usize>,
        resumed: bool,
    ) -> Result<RunDecision, Fail> {
        let input = RunInput {
            messages,
            latest_user_message: latest.map(|i| &messages[i]),
            route,
            resumed,
        };
        self.decide(Phase::PrepareRun, &input, |l, cx, i| l.prepare_run(cx, i))
            .await
    }

    /// Commits a `prepare_run` response to the run's newest user message
    /// `latest_user` and ends the run (SPEC L12, L1).
    async fn respond(
        &self,
        mut r: Response,
        latest_user: Option<MessageId>,
    ) -> Result<RunEnd, Fail> {
        // The response is output like any other: canonical transforms apply (L12).
        r.parts = self.finished(StreamKind::Respond, None, std::mem::take(&mut r.parts))?;
        let id = self.sh.ids.next_id(IdKind::Message);
        let mut pai = self.meta(Producer::Lifecycle, None);
        pai.outcome = Some(r.outcome);
        pai.reason.clone_from(&r.reason);
        let msg = NewMessage {
            id: id.clone().into(),
            role: Role::Assistant,
            parts: r.parts,
            visibility: Visibility::ALL,
            pai,
        };
        let appended = self.commit(RunStage::Respond, vec![msg], None).await?;
        self.emit(|| EventKind::Respond {
            latest_user,
            outcome: r.outcome,
            reason: r.reason.clone(),
            message: id.into(),
            version: appended.version,
        });
        Ok(RunEnd {
            status: RunStatus::Completed,
            outcome: r.outcome,
            reason: r.reason,
        })
    }
}

/// Where a step's transition leaves the episode: `None` to go on.
pub(super) fn episode_end(transition: Transition) -> Option<EpisodeEnd> {
    match transition {
        Transition::NextStep | Transition::Wait => None,
        Transition::Steer => Some(EpisodeEnd::Steer),
        Transition::Aborted { outcome, reason } => Some(EpisodeEnd::Run(RunEnd {
            status: RunStatus::Completed,
            outcome,
            reason: Some(reason),
        })),
        Transition::Refused { kind, explanation } => Some(EpisodeEnd::Run(RunEnd {
            status: RunStatus::Completed,
            outcome: Outcome::Blocked,
            reason: Some(crate::model::Refusal { kind, explanation }.reason()),
        })),
        Transition::Complete { reason } => Some(EpisodeEnd::Run(RunEnd {
            status: RunStatus::Completed,
            outcome: Outcome::Completed,
            reason,
        })),
    }
}
