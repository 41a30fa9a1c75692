//! SPEC P8 (with P5): model-only overlays are episode-local. An
//! episode's overlay is what its own `prepare_run` hooks appended, never
//! one carried over from an earlier episode (a wait, a steer); a model
//! call sends no more model-only messages than that overlay and its own
//! step's `prepare_model_step` appends. Steps where a patch replaces the
//! model messages are left aside (everything sent is then model-only).

use std::collections::BTreeMap;

use pai_runtime::{
    Event,
    event::EventKind,
    hook::{HookNote, NoteDecision, Phase, RunDecision, StepDecision},
    model::Patch,
};

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

/// What a run's patches appended so far: in the episode (by its
/// `prepare_run` hooks) and in the current step.
#[derive(Debug, Default, Clone, Copy)]
struct Appended {
    /// Appended by the episode's run patches, as their notes tell it.
    run: usize,
    /// The episode's overlay, as its prepare_run event reports it.
    episode: Option<usize>,
    step: usize,
    /// A run or step patch replaced the model messages.
    run_replaces: bool,
    step_replaces: bool,
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    check_events(o.events)
}

/// The patch a prepare_run or prepare_model_step note carries.
fn patch_of(n: &HookNote) -> Option<&Patch> {
    match &n.decision {
        NoteDecision::Run(RunDecision::Continue(p))
        | NoteDecision::Step(StepDecision::Continue(p)) => Some(p),
        _ => None,
    }
}

fn check_events(events: &[Event]) -> Vec<Violation> {
    let mut runs: BTreeMap<&str, Appended> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let run = e.run_id.as_str();
        let a = runs.entry(run).or_default();
        match &e.kind {
            EventKind::LeaseAcquired { .. } => *a = Appended::default(),
            EventKind::ResolveModelContext { .. } => {
                a.step = 0;
                a.step_replaces = false;
            }
            EventKind::Hook(n) => {
                let Some(p) = patch_of(n) else { continue };
                let replaces = p.replace_model_messages.is_some();
                match n.phase {
                    Phase::PrepareRun => {
                        a.run += p.append_model_messages.len();
                        a.run_replaces |= replaces;
                    }
                    Phase::PrepareModelStep => {
                        a.step += p.append_model_messages.len();
                        a.step_replaces |= replaces;
                    }
                    _ => {}
                }
            }
            EventKind::PrepareRun { overlay, .. } => {
                a.episode = Some(*overlay);
                if !a.run_replaces && *overlay != a.run {
                    let message = format!(
                        "the episode's overlay has {overlay} messages; its prepare_run hooks appended {}",
                        a.run
                    );
                    out.push(Violation::new(OracleId::P8, Some(run), message));
                }
            }
            EventKind::ModelCall {
                step,
                attempt,
                overlay,
                ..
            } => {
                if a.run_replaces || a.step_replaces {
                    continue;
                }
                let allowed = a.episode.unwrap_or(0) + a.step;
                if *overlay > allowed {
                    let message = format!(
                        "step {step} attempt {attempt} sent {overlay} model-only messages; the episode's overlay and the step's patches add {allowed}"
                    );
                    out.push(Violation::new(OracleId::P8, Some(run), message));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pai_runtime::{message::ModelMessage, model::Route};

    use super::*;
    use crate::oracle::facts::ev;

    fn appending(phase: Phase, n: usize) -> Event {
        let patch = Patch {
            append_model_messages: vec![ModelMessage::system("x"); n],
            ..Patch::default()
        };
        let decision = match phase {
            Phase::PrepareRun => NoteDecision::Run(RunDecision::Continue(patch)),
            _ => NoteDecision::Step(StepDecision::Continue(patch)),
        };
        ev(EventKind::Hook(HookNote {
            phase,
            hook: "h".into(),
            decision,
        }))
    }

    fn episode(appended: usize, overlay: usize) -> Vec<Event> {
        vec![
            ev(EventKind::LeaseAcquired {
                version: 1,
                episode: 1,
                token: 1.into(),
            }),
            appending(Phase::PrepareRun, appended),
            ev(EventKind::PrepareRun {
                route: Route::new("m"),
                overlay,
                latest_user: None,
                resumed: false,
            }),
        ]
    }

    fn step(appended: usize, overlay: usize) -> Vec<Event> {
        vec![
            ev(EventKind::ResolveModelContext {
                step: 0,
                anchor: 1,
                messages: 1,
            }),
            appending(Phase::PrepareModelStep, appended),
            ev(EventKind::ModelCall {
                step: 0,
                attempt: 1,
                route: Route::new("m"),
                context: 1,
                overlay,
                messages: 1 + overlay,
                tools: vec![],
                timeout_ms: None,
            }),
        ]
    }

    /// SPEC M5, P8: an episode's overlay is its own prepare_run's; a model
    /// call sends that and its step's appends, nothing carried over.
    #[test]
    fn m5_overlays_do_not_outlive_their_episode() {
        let fine: Vec<Event> = [episode(2, 2), step(1, 3), episode(0, 0), step(0, 0)].concat();
        assert!(check_events(&fine).is_empty());
        let carried: Vec<Event> = [episode(2, 2), step(0, 2), episode(0, 0), step(0, 2)].concat();
        assert_eq!(check_events(&carried).len(), 1);
        let kept: Vec<Event> = [episode(2, 2), episode(0, 2)].concat();
        assert_eq!(check_events(&kept).len(), 1);
    }
}
