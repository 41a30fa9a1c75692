//! The run-lifecycle model (a leaf: `lifecycle.rs` feeds it): a small
//! reference state machine of one run, written from SPEC §1, A1–A3, K3,
//! K6 and H5 and sharing nothing with the runtime's step loop.
//!
//! The run, as the store knows it: its last committed step, whether that
//! step's transition is committed (a wait, or a taken steer), and the
//! version at which a cancel reached it. Each holder's episode, as the
//! holder knows it: the step it began, the transition it decided, whether
//! that transition ended the run, and whether it heard of a cancel or a
//! delete (and which phase was then still in flight).
//!
//! What the model refuses:
//! - a step that begins before its predecessor's transition was decided
//!   in the same episode (`after_step` said next step, or steer), unless a
//!   wait or a taken steer committed it before the episode began (A1–A3);
//! - a taker that acts on the last committed step's transition before it
//!   decided it again: `prepare_run`, a respond, the next step, a wait, or
//!   a completed end before its own `after_step` of that step (K3);
//! - anything new after the episode's own transition ended the run
//!   (complete, the step limit, an abort, a respond): only the given-up
//!   calls' results and the end follow (A2, A3, L12);
//! - after the holder heard of a delete, anything new: the phase in flight
//!   then may finish, closing results and the end follow; no model call,
//!   tool or compaction starts, no further phase or hook of the step (H5);
//! - after the holder heard of a cancel, a model call, tool or compaction
//!   (a summary model call) that starts, or a `prepare_run` (or respond)
//!   not already in flight: K6 forbids new model calls and tools, and a
//!   cancelled run's next episode runs no phase (SPEC §1 `cancel_close`,
//!   K3); hooks of the step in flight are not forbidden by K6;
//! - a step committed, or a wait recorded, after the cancel reached the
//!   store (K6).

use std::collections::BTreeMap;

/// Who acts: a worker's name, `None` in one process.
pub(super) type Who<'a> = Option<&'a str>;

/// How a step's `after_step` handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Decision {
    Next,
    Steer,
    Wait,
    /// The run ends here: why (`complete`, `the step limit`, `an abort`).
    Ends(&'static str),
}

/// What a holder does, as the model tells actions apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Act {
    PrepareRun,
    /// Step `step`'s context resolution: a resolver's leaf or compaction's
    /// outcome (`done` false), or `resolve_model_context` (`done`).
    Resolve {
        step: u32,
        done: bool,
    },
    PrepareStep,
    ModelCall,
    /// A compaction began for step `step` (a summary model call).
    Compaction {
        step: u32,
    },
    /// A provider stream ended, or an attempt failed.
    Streamed,
    CommitStep {
        step: u32,
        version: u64,
    },
    Policy {
        step: u32,
    },
    Awaiting,
    ToolStart,
    /// A tool's end, `after_tool_result` or `on_output`: a result on its way.
    ToolResult,
    CommitResults,
    AfterStep {
        step: u32,
        decision: Decision,
    },
    Wait {
        version: u64,
    },
    Respond,
    /// `cancelled`, `failed`, `lease_released`, `lease_lost`.
    Close,
    /// The run's end; `completed` when its status is completed.
    End {
        completed: bool,
    },
}

/// One thing the model hears, in store-commit order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Input<'a> {
    /// The store: a step of the run was committed.
    StepCommitted(u32),
    /// The store: a wait or a taken steer committed the last committed
    /// step's transition.
    TransitionCommitted,
    /// The store: a cancel reached the run, at this version.
    CancelReached(u64),
    /// A holder took the run over; `next_step` follows its last committed step.
    TakenOver { by: Who<'a>, next_step: u32 },
    /// A holder's claim: its episode begins.
    Claimed { by: Who<'a> },
    /// A holder's act; `what` names it for the report.
    Act { by: Who<'a>, act: Act, what: String },
    /// A store answer the holder heard, with the thread's version after
    /// it; `aside`: heard by a task beside the phase (a renewal, a hook's
    /// own write), so the phase then in flight may finish.
    Answer {
        by: Who<'a>,
        version: u64,
        aside: bool,
    },
    /// The holder learned at once of a cancel (one process) or of a
    /// delete; `how` says how, for the report.
    Heard {
        by: Who<'a>,
        news: News,
        how: &'static str,
    },
}

/// What a holder heard of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum News {
    Cancel,
    Delete,
}

/// What a holder heard, and how.
#[derive(Debug, Clone)]
struct Heard {
    news: News,
    how: String,
}

/// What may still finish once a holder heard: the phase in flight then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Flight {
    #[default]
    Nothing,
    /// The claim's episode: `prepare_run` (or its respond); with
    /// `true`, a taker's first policy or `after_step` too.
    Opening(bool),
    /// The context resolution of a step (any, when `None`).
    Resolve(Option<u32>),
    PrepareStep,
    CommitStep,
    PolicyOrAfterStep,
    Policy(u32),
    AfterStep,
    Wait,
}

/// Where a holder was last, for what was in flight when it heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Pos {
    #[default]
    Claim,
    PrepareRun,
    Resolving(u32),
    Resolved,
    PrepareStep,
    Model,
    CommitStep,
    Policy(u32),
    CommitResults,
    AfterStep,
    Elsewhere,
}

/// One holder's episode, as the holder knows it.
#[derive(Debug, Clone, Default)]
struct Episode {
    /// A taker whose claim's `lease_acquired` has not come yet.
    opening_takeover: bool,
    takeover: bool,
    /// The step whose transition was committed when the episode began.
    inherited: Option<u32>,
    /// A taker must decide this step's transition before acting on it (K3).
    must_decide: Option<u32>,
    /// The step this episode began last.
    step: Option<u32>,
    /// The step whose `after_step` said next step (or steer) in this episode.
    next_from: Option<u32>,
    /// The episode's own transition ended the run: why.
    ended: Option<&'static str>,
    /// The holder heard of a cancel or delete, and what was then in flight.
    heard: Option<Heard>,
    flight: Flight,
    pos: Pos,
}

/// One run's model.
#[derive(Debug, Default)]
pub(super) struct RunModel<'a> {
    episodes: BTreeMap<Who<'a>, Episode>,
    last_step: Option<u32>,
    /// The step whose transition the store has committed.
    settled: Option<u32>,
    /// The version at which a cancel reached the store.
    cancel: Option<u64>,
}

impl<'a> RunModel<'a> {
    /// Moves the model past one input, or says what broke the rules.
    pub(super) fn feed(&mut self, input: Input<'a>) -> Result<(), String> {
        match input {
            Input::StepCommitted(step) => {
                self.last_step = Some(step);
                self.settled = None;
            }
            Input::TransitionCommitted => self.settled = self.last_step,
            Input::CancelReached(v) => {
                self.cancel.get_or_insert(v);
            }
            Input::TakenOver { by, next_step } => self.taken_over(by, next_step),
            Input::Claimed { by } => self.claimed(by),
            Input::Act { by, act, what } => return self.act(by, act, &what),
            Input::Answer { by, version, aside } => self.answer(by, version, aside),
            Input::Heard { by, news, how } => {
                if let Some(e) = self.episodes.get_mut(&by) {
                    e.hear(news, how.to_string(), true);
                }
            }
        }
        Ok(())
    }

    fn taken_over(&mut self, by: Who<'a>, next_step: u32) {
        let last = next_step.checked_sub(1);
        let inherited = last.filter(|k| self.settled == Some(*k));
        let e = Episode {
            opening_takeover: true,
            takeover: true,
            inherited,
            must_decide: last.filter(|_| inherited.is_none()),
            ..Episode::default()
        };
        self.episodes.insert(by, e);
    }

    fn claimed(&mut self, by: Who<'a>) {
        if let Some(e) = self.episodes.get_mut(&by)
            && e.opening_takeover
        {
            e.opening_takeover = false;
            return;
        }
        let inherited = self.settled.filter(|s| Some(*s) == self.last_step);
        let e = Episode {
            inherited,
            ..Episode::default()
        };
        self.episodes.insert(by, e);
    }

    fn answer(&mut self, by: Who<'a>, version: u64, aside: bool) {
        let Some(cancel) = self.cancel.filter(|c| version > *c) else {
            return;
        };
        if let Some(e) = self.episodes.get_mut(&by) {
            let how = format!(
                "the cancel that reached the store at v{cancel} (at its answer of v{version}; K6)"
            );
            e.hear(News::Cancel, how, aside);
        }
    }

    fn act(&mut self, by: Who<'a>, act: Act, what: &str) -> Result<(), String> {
        let cancel = self.cancel;
        let Some(e) = self.episodes.get_mut(&by) else {
            return Ok(());
        };
        let landed = match act {
            Act::CommitStep { version, .. } | Act::Wait { version } => Some(version),
            _ => None,
        };
        if let (Some(c), Some(v)) = (cancel, landed)
            && v > c
        {
            return Err(format!(
                "{what} landed (v{v}) after the cancel reached the store (v{c}) (K6)"
            ));
        }
        e.judge(act, what)?;
        e.moved(act);
        Ok(())
    }
}

impl Episode {
    /// The holder heard of a cancel or a delete; `aside`: beside the
    /// phase in flight, which may finish.
    fn hear(&mut self, news: News, how: String, aside: bool) {
        if self.heard.is_some() {
            return;
        }
        self.heard = Some(Heard { news, how });
        self.flight = match aside {
            true => in_flight(self.pos, self.takeover),
            false => Flight::Nothing,
        };
    }

    /// Whether `act` is allowed here, in the order the rules are judged.
    fn judge(&mut self, act: Act, what: &str) -> Result<(), String> {
        if let Some(why) = self.ended
            && starts(act)
        {
            return Err(format!(
                "{what} after the episode's transition ended the run ({why})"
            ));
        }
        if let Some(h) = &self.heard
            && forbidden_once_heard(h.news, act)
        {
            match still_in_flight(self.flight, act) {
                Some(next) => self.flight = next,
                None => return Err(format!("{what} after the holder heard of {}", h.how)),
            }
        }
        if let Some(k) = self.must_decide
            && acts_on_transition(act)
        {
            return Err(format!(
                "{what} in a takeover episode before it decided step {k}'s transition \
                 (no after_step step={k} of its own; K3)"
            ));
        }
        if let Act::Resolve { step, .. } | Act::Compaction { step } = act
            && self.step != Some(step)
            && let Some(p) = step.checked_sub(1)
            && self.next_from != Some(p)
            && self.inherited != Some(p)
        {
            return Err(format!(
                "step {step} began ({what}) before step {p}'s transition was decided \
                 in this episode (no after_step step={p} -> next step or steer here, and no \
                 wait or taken steer committed it before; A1-A3)"
            ));
        }
        Ok(())
    }

    /// Moves the episode past an allowed act.
    fn moved(&mut self, act: Act) {
        match act {
            Act::Resolve { step, .. } | Act::Compaction { step } => self.step = Some(step),
            Act::AfterStep { step, decision } => {
                if self.must_decide == Some(step) {
                    self.must_decide = None;
                }
                // A steer goes on too: whether its step comes in a new
                // episode is the phase grammar's business (L14).
                match decision {
                    Decision::Next | Decision::Steer => self.next_from = Some(step),
                    Decision::Ends(why) => self.ended = Some(why),
                    Decision::Wait => {}
                }
            }
            Act::Respond => self.ended = Some("a respond"),
            _ => {}
        }
        if self.heard.is_none() {
            self.pos = position(act).unwrap_or(self.pos);
        }
    }
}

/// Whether `act` starts something (a phase, a model call, a tool, a step's
/// commit, a wait or a respond), as opposed to closing what is open.
fn starts(act: Act) -> bool {
    !matches!(
        act,
        Act::Streamed
            | Act::Awaiting
            | Act::ToolResult
            | Act::CommitResults
            | Act::Close
            | Act::End { .. }
    )
}

/// Whether `act` starts what a holder that heard `news` must not start,
/// unless it is the phase then in flight: after a delete anything (H5);
/// after a cancel a model call, a tool, a compaction's summary call, an
/// episode's `prepare_run` or respond, a step's commit or a wait (K6,
/// SPEC §1 `cancel_close`).
fn forbidden_once_heard(news: News, act: Act) -> bool {
    match news {
        News::Delete => starts(act),
        News::Cancel => matches!(
            act,
            Act::ModelCall
                | Act::ToolStart
                | Act::Compaction { .. }
                | Act::PrepareRun
                | Act::Respond
                | Act::CommitStep { .. }
                | Act::Wait { .. }
        ),
    }
}

/// Whether `act` acts on the last committed step's transition: what a
/// taker may do only after deciding it (K3).
fn acts_on_transition(act: Act) -> bool {
    matches!(
        act,
        Act::PrepareRun
            | Act::Respond
            | Act::Resolve { .. }
            | Act::Compaction { .. }
            | Act::Wait { .. }
            | Act::End { completed: true }
    )
}

/// Where `act` leaves a holder, if it moves it.
fn position(act: Act) -> Option<Pos> {
    Some(match act {
        Act::PrepareRun => Pos::PrepareRun,
        Act::Resolve { step, done: false } | Act::Compaction { step } => Pos::Resolving(step),
        Act::Resolve { done: true, .. } => Pos::Resolved,
        Act::PrepareStep => Pos::PrepareStep,
        Act::ModelCall | Act::Streamed => Pos::Model,
        Act::CommitStep { .. } => Pos::CommitStep,
        Act::Policy { step } => Pos::Policy(step),
        Act::CommitResults => Pos::CommitResults,
        Act::AfterStep { .. } => Pos::AfterStep,
        Act::Awaiting | Act::ToolStart | Act::ToolResult => Pos::Elsewhere,
        Act::Wait { .. } | Act::Respond | Act::Close | Act::End { .. } => Pos::Elsewhere,
    })
}

/// The phase that may be in flight after `pos` (what follows it in the
/// step loop without another word with the store).
fn in_flight(pos: Pos, takeover: bool) -> Flight {
    match pos {
        Pos::Claim => Flight::Opening(takeover),
        Pos::PrepareRun => Flight::Resolve(None),
        Pos::Resolving(step) => Flight::Resolve(Some(step)),
        Pos::Resolved => Flight::PrepareStep,
        Pos::Model => Flight::CommitStep,
        Pos::CommitStep => Flight::PolicyOrAfterStep,
        Pos::Policy(step) => Flight::Policy(step),
        Pos::CommitResults => Flight::AfterStep,
        Pos::AfterStep => Flight::Wait,
        Pos::PrepareStep | Pos::Elsewhere => Flight::Nothing,
    }
}

/// Whether `act` finishes the phase in `flight`; if so, what may still
/// finish after it.
fn still_in_flight(flight: Flight, act: Act) -> Option<Flight> {
    use Flight as F;
    Some(match (flight, act) {
        (F::Opening(_), Act::PrepareRun | Act::Respond) => F::Nothing,
        (F::Opening(true) | F::PolicyOrAfterStep, Act::Policy { step }) => F::Policy(step),
        (F::Policy(s), Act::Policy { step }) if s == step => F::Policy(step),
        (F::Opening(true) | F::PolicyOrAfterStep | F::AfterStep, Act::AfterStep { .. }) => F::Wait,
        (F::Resolve(s), Act::Resolve { step, done }) if s.is_none_or(|s| s == step) => match done {
            true => F::Nothing,
            false => F::Resolve(Some(step)),
        },
        (F::PrepareStep, Act::PrepareStep) => F::Nothing,
        (F::CommitStep, Act::CommitStep { .. }) => F::Nothing,
        (F::Wait, Act::Wait { .. }) => F::Nothing,
        _ => return None,
    })
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
