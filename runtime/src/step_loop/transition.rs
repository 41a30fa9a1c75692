//! SPEC A2, A3: how a step hands over, as one pure function of what the step
//! loop knows when the step ends.

use crate::event::Transition;
use crate::lifecycle::AfterStepDecision;
use crate::message::Outcome;
use crate::model::Refusal;

/// What decides a step's transition.
#[derive(Debug, Clone, Copy)]
pub(super) struct StepEnd<'a> {
    /// The joined `after_step` decision (L10).
    pub(super) decision: AfterStepDecision,
    /// A canonical transform aborted the step (S4): its outcome and reason.
    pub(super) abort: Option<(Outcome, &'a str)>,
    /// The provider refused the step (S6).
    pub(super) refusal: Option<&'a Refusal>,
    /// Calls of the step wait for a client (T7).
    pub(super) waiting: bool,
    /// A steering message waits for the next step (A4).
    pub(super) steering: bool,
    /// The model asked for tools, so tool results were produced.
    pub(super) tool_calls: bool,
    /// This step's number (from 0) and the run's step limit (at least 1).
    pub(super) step: u32,
    pub(super) max_steps: u32,
}

/// The transition: an abort ends the run, then a provider's refusal (S6);
/// then complete > waiting >
/// steering > next_step > natural (A3); naturally, tool results go on and
/// no tool calls complete (A2); a step that would go on past the limit
/// completes with reason `max_steps` (A2). A step with waiting calls waits
/// even at the limit: the answers are honoured, and the run completes with
/// `max_steps` once they are committed.
pub(super) fn transition(end: &StepEnd<'_>) -> Transition {
    let chosen = match (end.abort, end.decision) {
        (Some((outcome, reason)), _) => {
            return Transition::Aborted {
                outcome,
                reason: reason.to_string(),
            };
        }
        (None, _) if let Some(r) = end.refusal => {
            return Transition::Refused {
                kind: r.kind,
                explanation: r.explanation.clone(),
            };
        }
        (None, AfterStepDecision::Complete) => Transition::Complete { reason: None },
        (None, _) if end.waiting => return Transition::Wait,
        (None, _) if end.steering => Transition::Steer,
        (None, AfterStepDecision::NextStep) => Transition::NextStep,
        (None, AfterStepDecision::Natural) if end.tool_calls => Transition::NextStep,
        (None, AfterStepDecision::Natural) => Transition::Complete { reason: None },
    };
    let goes_on = matches!(chosen, Transition::NextStep | Transition::Steer);
    if goes_on && end.step + 1 >= end.max_steps {
        return Transition::Complete {
            reason: Some("max_steps".to_string()),
        };
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use AfterStepDecision::{Complete as C, Natural as N, NextStep as X};

    const ABORT: Option<(Outcome, &str)> = Some((Outcome::Blocked, "unsafe"));

    /// decision, abort, steering, tool calls, at the last allowed step, expected.
    type Row = (
        AfterStepDecision,
        Option<(Outcome, &'static str)>,
        bool,
        bool,
        bool,
        Transition,
    );

    fn aborted() -> Transition {
        Transition::Aborted {
            outcome: Outcome::Blocked,
            reason: "unsafe".into(),
        }
    }
    fn complete() -> Transition {
        Transition::Complete { reason: None }
    }
    fn max_steps() -> Transition {
        Transition::Complete {
            reason: Some("max_steps".into()),
        }
    }

    /// SPEC A2 and A3: every precedence pair, and the step limit against
    /// each transition that would go on. Columns: decision, abort, steering,
    /// tool calls, at the last allowed step, expected transition.
    #[test]
    fn a2_a3_transition_table() {
        #[rustfmt::skip]
        let rows: Vec<Row> = vec![
            // A2 natural transitions.
            (N, None,  false, true,  false, Transition::NextStep),
            (N, None,  false, false, false, complete()),
            // An abort beats every decision, steering and tool results.
            (C, ABORT, false, false, false, aborted()),
            (X, ABORT, true,  true,  false, aborted()),
            (N, ABORT, true,  true,  false, aborted()),
            // complete > steering, complete > tool results (natural next step).
            (C, None,  true,  false, false, complete()),
            (C, None,  false, true,  false, complete()),
            (C, None,  true,  true,  false, complete()),
            // steering > next_step, steering > natural (with and without calls).
            (X, None,  true,  false, false, Transition::Steer),
            (N, None,  true,  true,  false, Transition::Steer),
            (N, None,  true,  false, false, Transition::Steer),
            // next_step > natural completion (no tool calls).
            (X, None,  false, false, false, Transition::NextStep),
            (X, None,  false, true,  false, Transition::NextStep),
            // A2 step limit: whatever would go on completes with max_steps.
            (X, None,  false, false, true,  max_steps()),
            (N, None,  false, true,  true,  max_steps()),
            (N, None,  true,  false, true,  max_steps()),
            // ... and what ends anyway keeps its own reason.
            (C, None,  false, true,  true,  complete()),
            (N, None,  false, false, true,  complete()),
            (N, ABORT, false, true,  true,  aborted()),
        ];
        for (i, (decision, abort, steering, tool_calls, at_limit, expected)) in
            rows.into_iter().enumerate()
        {
            let end = StepEnd {
                decision,
                abort,
                refusal: None,
                waiting: false,
                steering,
                tool_calls,
                step: if at_limit { 3 } else { 1 },
                max_steps: 4,
            };
            assert_eq!(transition(&end), expected, "row {i}: {end:?}");
        }
    }

    /// SPEC S6: a provider's refusal ends the run whatever `after_step`
    /// decides, steering, waiting or tool calls; only an abort comes first.
    #[test]
    fn s6_a_refusal_beats_all_but_an_abort() {
        let refusal = Refusal {
            kind: crate::model::RefusalKind::ContentFilter,
            explanation: "hate (high)".into(),
        };
        let refused = Transition::Refused {
            kind: refusal.kind,
            explanation: "hate (high)".into(),
        };
        for decision in [C, N, X] {
            for (waiting, steering, tool_calls) in [(false, false, false), (true, true, true)] {
                let mut end = StepEnd {
                    decision,
                    abort: None,
                    refusal: Some(&refusal),
                    waiting,
                    steering,
                    tool_calls,
                    step: 3,
                    max_steps: 4,
                };
                assert_eq!(transition(&end), refused, "{end:?}");
                end.abort = ABORT;
                assert_eq!(transition(&end), aborted(), "{end:?}");
            }
        }
    }

    /// SPEC A2: a limit of one step completes after the first step.
    #[test]
    fn a2_limit_of_one_step() {
        let end = StepEnd {
            decision: N,
            abort: None,
            refusal: None,
            waiting: false,
            steering: false,
            tool_calls: true,
            step: 0,
            max_steps: 1,
        };
        assert_eq!(transition(&end), max_steps());
    }

    /// SPEC A3: complete > waiting > steering > next_step > natural; a step
    /// with waiting calls waits even at the step limit (the answers are
    /// honoured first, then the run completes with max_steps).
    #[test]
    fn a3_waiting_beats_all_but_complete() {
        let at = |decision, steering, at_limit| StepEnd {
            decision,
            abort: None,
            refusal: None,
            waiting: true,
            steering,
            tool_calls: true,
            step: if at_limit { 3 } else { 1 },
            max_steps: 4,
        };
        assert_eq!(transition(&at(C, true, false)), complete());
        assert_eq!(transition(&at(C, false, true)), complete());
        for decision in [X, N] {
            for steering in [false, true] {
                for at_limit in [false, true] {
                    let end = at(decision, steering, at_limit);
                    assert_eq!(transition(&end), Transition::Wait, "{end:?}");
                }
            }
        }
    }
}
