//! When a faulted run has no twin to be judged against: nothing in the
//! world may differ between the two runs but the faults. Until the first
//! fault is carried out the two runs are the same run (same seed, same
//! schedule), so anything the timeline finished before it is shared;
//! after it, an entry placed at a time lands wherever the fault left the
//! runs, which no rule fixes (a steer taken by one step or the next, an
//! answer before or after its call waits). Entries placed after a moment
//! of a run (`after = { ... }`) land at the same point of that run in both,
//! up to what the rules allow (a cancel's or a delete's lateness, K6, H5).
//! Registered models, hooks and tools are the author's code: whether they
//! answer a repeated call alike is theirs to say, so the twin stands down.

use std::fmt;

use super::outcome::Outcome;
use crate::hooks::HookSpec;
use crate::oracle::Observations;
use crate::scenario::{Action, AfterEvent, Behaviour, Moment, Scenario};
use crate::world::{ActionRecord, ClusterEvent};

/// Why a faulted run was not judged against its twin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotJudged {
    /// No runtime fault was carried out (one placed at a store request
    /// never fired): the run is its own twin.
    NoFault,
    /// The run was stopped at its virtual-time limit.
    CutShort,
    /// The twin was stopped at its virtual-time limit.
    TwinCutShort,
    /// A model, hook or tool a harness registered takes part.
    Registered(String),
    /// A hook acts only in resumed episodes, and a takeover starts one.
    OnResume(String),
    /// A timeline entry lands after the first fault where no rule fixes.
    Races(String),
}

impl NotJudged {
    /// The reason's name in the fuzz report's counters.
    pub fn kind(&self) -> &'static str {
        match self {
            NotJudged::NoFault => "no_fault",
            NotJudged::CutShort => "cut_short",
            NotJudged::TwinCutShort => "twin_cut_short",
            NotJudged::Registered(_) => "registered",
            NotJudged::OnResume(_) => "on_resume",
            NotJudged::Races(_) => "races",
        }
    }
}

impl fmt::Display for NotJudged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotJudged::NoFault => f.write_str("no runtime fault was carried out"),
            NotJudged::CutShort => f.write_str("the run stopped at its time limit"),
            NotJudged::TwinCutShort => f.write_str("the twin stopped at its time limit"),
            NotJudged::Registered(what) => write!(
                f,
                "{what} is a harness's own code: whether it acts alike when a call or a phase is made again is not known"
            ),
            NotJudged::OnResume(hook) => write!(
                f,
                "{hook} acts only in resumed episodes, and a takeover starts one"
            ),
            NotJudged::Races(why) => f.write_str(why),
        }
    }
}

/// Why the faulted run `obs` of `s` cannot be judged against a twin, if
/// it cannot.
pub(super) fn not_judged(s: &Scenario, obs: &Observations) -> Option<NotJudged> {
    let Some((at, what)) = first_fault(obs) else {
        return Some(NotJudged::NoFault);
    };
    if obs.cut_short {
        return Some(NotJudged::CutShort);
    }
    if let Some(why) = registered(s) {
        return Some(why);
    }
    if taken_over(obs)
        && let Some(why) = on_resume(s)
    {
        return Some(why);
    }
    obs.actions
        .iter()
        .filter(|a| a.done_at >= at && runs_before(s, a.moment))
        .find_map(|a| races(&s.timeline[a.moment], a).or_else(|| current_cancel(s, a.moment)))
        .map(|why| NotJudged::Races(format!("{why}, after the first fault ({what})")))
}

/// When the two runs part, and the fault that parts them: the first
/// runtime fault carried out. One placed at a store request is carried
/// out the millisecond after the store received that request, which a
/// `lost` placement already dropped: they part a millisecond earlier.
fn first_fault(obs: &Observations) -> Option<(u64, String)> {
    let c = obs.cluster.as_ref()?;
    c.log.iter().find_map(|r| match &r.what {
        ClusterEvent::Fault {
            action,
            worker,
            placed,
        } => {
            let at = match placed {
                Some(_) => r.at.saturating_sub(1),
                None => r.at,
            };
            Some((at, format!("{} {worker} at {}ms", action.as_str(), r.at)))
        }
        _ => None,
    })
}

/// Whether a worker took a run over from another (a resumed episode the
/// fault-free twin does not have).
fn taken_over(obs: &Observations) -> bool {
    obs.cluster.as_ref().is_some_and(|c| {
        c.log.iter().any(|r| {
            matches!(
                &r.what,
                ClusterEvent::Claimed {
                    takeover: Some(_),
                    ..
                }
            )
        })
    })
}

/// A model, hook or tool a harness registered, if one takes part.
fn registered(s: &Scenario) -> Option<NotJudged> {
    let model = s.registered.keys().next().map(|name| match name {
        Some(n) => format!("model {n}"),
        None => "the default model".to_string(),
    });
    let hook = || {
        let h = s.hooks.iter().find(|h| h.is_user())?;
        Some(format!("hook {}", h.name))
    };
    let tool = || {
        let t = s
            .agent
            .tools
            .iter()
            .find(|t| matches!(t.behaviour, Behaviour::Registered(_)))?;
        Some(format!("tool {}", t.name))
    };
    model.or_else(hook).or_else(tool).map(NotJudged::Registered)
}

/// A `fail` hook limited to resumed episodes, if one takes part.
fn on_resume(s: &Scenario) -> Option<NotJudged> {
    s.hooks.iter().find_map(|h| match h.library()? {
        HookSpec::Fail(f) if f.on_resume => Some(NotJudged::OnResume(h.name.clone())),
        _ => None,
    })
}

/// Why a run whose outcome differs from its twin's past a run the rules
/// let be cut (a cancel's lateness, K6, H5) cannot be judged: an entry
/// placed after a moment came in one of the two runs and not in the
/// other, and a cancel or delete of its thread could have decided it (a
/// moment after the cut never comes). Without that, the difference is a
/// violation.
pub(super) fn came_in_one(s: &Scenario, mine: &Outcome, theirs: &Outcome) -> Option<NotJudged> {
    let (mine, theirs) = (&mine.missed, &theirs.missed);
    let i = *mine
        .iter()
        .chain(theirs.iter())
        .find(|i| mine.contains(i) != theirs.contains(i))?;
    let m = &s.timeline[i];
    let cut = s.timeline.iter().any(|c| {
        c.thread == m.thread && matches!(c.action, Action::Cancel(_) | Action::DeleteThread)
    });
    let after = m.after.map(|a| a.to_string()).unwrap_or_default();
    cut.then(|| {
        NotJudged::Races(format!(
            "timeline {} on {} {after} came in one of the two runs only, as a cancel or delete of its thread reached a run at another point",
            m.action.name(),
            m.thread
        ))
    })
}

/// Why the `i`th entry, a cancel that names no run placed after a moment,
/// races the runs: it reaches whichever run of its thread is current when
/// it acts (K6), and with two or more sends of the thread before it, which
/// one that is depends on how far each got, which the faults change.
fn current_cancel(s: &Scenario, i: usize) -> Option<String> {
    let m = &s.timeline[i];
    let (Action::Cancel(None), Some(after)) = (&m.action, &m.after) else {
        return None;
    };
    let sends = s.timeline[..i]
        .iter()
        .filter(|e| e.thread == m.thread && matches!(e.action, Action::Send(_)))
        .count();
    (sends >= 2).then(|| {
        format!(
            "timeline cancel on {} {after} reaches whichever of its runs is current",
            m.thread
        )
    })
}

/// Whether an entry before the `i`th (in play order) could have started a
/// run on its thread: otherwise no run of that thread is there for it to
/// race (a steer is then a send, a cancel or an answer finds nothing).
fn runs_before(s: &Scenario, i: usize) -> bool {
    let thread = &s.timeline[i].thread;
    s.timeline[..i].iter().any(|m| {
        &m.thread == thread
            && matches!(
                m.action,
                Action::Send(_) | Action::Steer(_) | Action::Regenerate(_)
            )
    })
}

/// Why entry `m`, finished after the first fault, races the runs, if it
/// does: placed at a time, only a send, a watch or a check lands alike
/// wherever the runs are; placed after a moment, an answer, a steer and a
/// trusted writer's action are alike only after a wait (the timeline acts
/// only while the run still waits for an answer, so it holds still), a
/// cancel and a delete anywhere (their lateness is allowed). An entry
/// whose moment never came did not act, in this run as in its twin (the
/// moment is the store's: whether it came is part of the outcome).
fn races(m: &Moment, a: &ActionRecord) -> Option<String> {
    let name = m.action.name();
    let anywhere = matches!(
        m.action,
        Action::Send(_) | Action::Watch { .. } | Action::ExpectWaiting(_)
    );
    if anywhere {
        return None;
    }
    match &m.after {
        None => Some(format!(
            "timeline {name} at {}ms on {} lands wherever the runs are",
            a.at, m.thread
        )),
        Some(after) => {
            let late = matches!(m.action, Action::Cancel(_) | Action::DeleteThread);
            let still = after.event == AfterEvent::Wait;
            (!late && !still).then(|| {
                format!(
                    "timeline {name} on {} {after} lands wherever the run's next step is",
                    m.thread
                )
            })
        }
    }
}
