//! One execution episode (SPEC §1): `prepare_run`, then steps until the run
//! ends or a steering message asks for a new episode (A4, P8).

use tracing::Instrument;

use super::exec::{Exec, Fail};
use crate::clock::IdKind;
use crate::event::{EventKind, RunStage, Transition};
use crate::lifecycle::{Phase, Response, RunDecision, RunInput, StreamKind};
use crate::message::{Message, Outcome, Producer, Role, Visibility};
use crate::patch::{Overlay, Route};
use crate::store::{RunEnd, RunStatus};

/// How an episode ended.
#[derive(Debug)]
pub(super) enum EpisodeEnd {
    /// The run is over.
    Run(RunEnd),
    /// A steering message is waiting: the run goes on in a new episode (SPEC A4, P8).
    Steer,
}

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// One episode; `next_step` is the run's next step number, carried from
    /// one episode to the next.
    pub(super) async fn episode(&self, next_step: &mut u32) -> Result<EpisodeEnd, Fail> {
        let mut route = Route::new(self.sh.agent.model.clone());
        let mut overlay = Overlay::default();
        let (messages, latest) = self.run_messages();
        match self.prepare_run(&route, &messages, latest).await? {
            RunDecision::Respond(r) => return self.respond(r).map(EpisodeEnd::Run),
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
        });
        loop {
            if self.stop.is_set() {
                return Err(Fail::new(RunStage::BetweenSteps, "stopped"));
            }
            let transition = self
                .step(*next_step, &route, &overlay)
                .instrument(tracing::info_span!("step", step = *next_step))
                .await?;
            *next_step += 1;
            if let Some(end) = episode_end(transition) {
                return Ok(end);
            }
        }
    }

    /// What `prepare_run` sees of the thread (L1): its stored messages at
    /// episode start without those of runs queued behind this one, and the
    /// index of this run's newest user message among them. Without a hook
    /// to read them, only that message is copied (for the event log).
    fn run_messages(&self) -> (Vec<Message>, Option<usize>) {
        let all = self.handles(Phase::PrepareRun);
        let read = self.sh.store.read(self.thread, |rec| {
            let latest = rec.latest_user_of(self.run);
            let messages: Vec<Message> = match (all, latest) {
                (true, _) => rec.visible_messages().cloned().collect(),
                (false, Some(m)) => vec![m.clone()],
                (false, None) => Vec::new(),
            };
            (messages, latest.map(|m| m.seq))
        });
        let (messages, latest) = read.unwrap_or_default();
        let index = latest.and_then(|seq| messages.iter().position(|m| m.seq == seq));
        (messages, index)
    }

    /// `prepare_run` (L1, L5): continue with a run patch, or respond.
    async fn prepare_run(
        &self,
        route: &Route,
        messages: &[Message],
        latest: Option<usize>,
    ) -> Result<RunDecision, Fail> {
        let input = RunInput {
            messages,
            latest_user_message: latest.map(|i| &messages[i]),
            route,
        };
        self.decide(Phase::PrepareRun, &input, |l, cx, i| l.prepare_run(cx, i))
            .await
    }

    /// Commits a `prepare_run` response and ends the run (SPEC L12).
    fn respond(&self, mut r: Response) -> Result<RunEnd, Fail> {
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
        let appended = self.commit(RunStage::Respond, vec![msg])?;
        self.emit(|| EventKind::Respond {
            outcome: r.outcome,
            reason: r.reason.clone(),
            message: id,
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
fn episode_end(transition: Transition) -> Option<EpisodeEnd> {
    match transition {
        Transition::NextStep => None,
        Transition::Steer => Some(EpisodeEnd::Steer),
        Transition::Aborted { outcome, reason } => Some(EpisodeEnd::Run(RunEnd {
            status: RunStatus::Completed,
            outcome,
            reason: Some(reason),
        })),
        Transition::Complete { reason } => Some(EpisodeEnd::Run(RunEnd {
            status: RunStatus::Completed,
            outcome: Outcome::Completed,
            reason,
        })),
    }
}
