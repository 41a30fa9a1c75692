//! SPEC A2, A3: every step's transition is the one the precedence gives:
//! an abort ends the run, then a provider's refusal (S6); then complete >
//! waiting > steering > next_step > natural; naturally, tool results go on
//! and a text-only step completes; a step that would go on at the limit
//! completes with reason `max_steps`; a step with waiting calls waits even
//! at the limit. A worker that took the run over decides its last
//! committed step again with the steers stored before that step's last
//! commit (K3).

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    event::{EventKind, Transition},
    hook::AfterStepDecision,
    model::RefusalKind,
};

use super::facts::{anchors, stored};
use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

/// What the oracle knows of a step when its `after_step` is logged.
struct Seen<'a> {
    aborted: Option<&'a str>,
    /// The provider refused the step (S6).
    refused: Option<RefusalKind>,
    tool_calls: bool,
    /// Calls `before_tool_call` let through or not, and those that got a
    /// result (`tool_end`, or `after_tool_result` for one that never ran).
    called: BTreeSet<&'a str>,
    resulted: BTreeSet<&'a str>,
}

impl Seen<'_> {
    /// Calls of the step with no result yet: they wait for a client (T7).
    fn waiting(&self) -> bool {
        self.called.difference(&self.resulted).next().is_some()
    }
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let anchor = anchors(o.events);
    let seq_of = seqs(o);
    let mut streams: BTreeMap<(&str, u32), Seen<'_>> = BTreeMap::new();
    let mut steers: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    // Runs with a steer no longer stored (a rewrite or a deletion took it,
    // R1, H5): whether a step of theirs was steering is not known.
    let mut unknown: BTreeSet<&str> = BTreeSet::new();
    // Runs a cancel reached: a step's look for a steer the store answers
    // with the cancel takes no steer (K6), so steering may read false.
    let mut cancelled: BTreeSet<&str> = BTreeSet::new();
    // Each step's last stored message (its own or its results'), by seq.
    let mut last_commit: BTreeMap<(&str, u32), u64> = BTreeMap::new();
    // Runs taken over (K3), the last committed step the taker decides
    // again, and that step's last commit then: the holder's `after_step`
    // heard of the steers stored before it, so the taker counts those, and
    // no later one (a steer the step took is on record, and then no
    // `after_step` is asked).
    let mut taken: BTreeMap<&str, (u32, u64)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in o.events {
        let run = e.run_id.as_str();
        match &e.kind {
            EventKind::TakenOver { next_step, .. } => {
                taken.remove(run);
                if let Some(last) = next_step.checked_sub(1) {
                    let bound = last_commit.get(&(run, last)).copied().unwrap_or(0);
                    taken.insert(run, (last, bound));
                }
            }
            EventKind::CommitStep { step, message, .. }
            | EventKind::CommitToolResults { step, message, .. } => {
                if let Some(seq) = seq_of.get(message.as_str()) {
                    let at = last_commit.entry((run, *step)).or_default();
                    *at = (*at).max(*seq);
                }
            }
            EventKind::ResolveModelContext { .. } => {
                taken.remove(run);
            }
            EventKind::CancelRequested { .. } | EventKind::CancelLearned { .. } => {
                cancelled.insert(run);
            }
            EventKind::Steered { message } => {
                let seq = seq_of.get(message.as_str());
                if seq.is_none() {
                    unknown.insert(run);
                }
                steers.entry(run).or_default().extend(seq);
            }
            EventKind::Stream {
                step,
                tool_calls,
                aborted,
                finish,
                ..
            } => {
                let seen = Seen {
                    aborted: aborted.as_deref(),
                    refused: finish.and_then(|f| f.refusal()),
                    tool_calls: *tool_calls > 0,
                    called: BTreeSet::new(),
                    resulted: BTreeSet::new(),
                };
                streams.insert((run, *step), seen);
            }
            EventKind::BeforeToolCall { .. }
            | EventKind::ToolEnd { .. }
            | EventKind::AfterToolResult { .. } => calls(&mut streams, run, &e.kind),
            EventKind::AfterStep {
                step,
                decision,
                transition,
            } => {
                let Some(seen) = streams.get(&(run, *step)) else {
                    continue;
                };
                let a = anchor.get(&(run, *step)).copied().unwrap_or(0);
                let bound = match taken.remove(run) {
                    Some((last, bound)) if last == *step => bound,
                    _ => u64::MAX,
                };
                let steering = steers
                    .get(run)
                    .is_some_and(|s| s.iter().any(|seq| *seq > a && *seq < bound));
                let want = expected(o, *step, *decision, seen, steering);
                let unsure = (unknown.contains(run)
                    && same(transition, &expected(o, *step, *decision, seen, true)))
                    || (cancelled.contains(run)
                        && same(transition, &expected(o, *step, *decision, seen, false)));
                if !same(transition, &want) && !unsure {
                    let message = format!(
                        "step {step} took {transition:?}; decision {decision:?}, tool calls {}{}, steering {steering}, limit {} give {want:?}",
                        seen.tool_calls,
                        if seen.waiting() {
                            ", waiting calls"
                        } else {
                            ""
                        },
                        o.scenario.agent.max_steps
                    );
                    out.push(Violation::new(OracleId::A3, Some(run), message));
                }
            }
            _ => {}
        }
    }
    out
}

/// A step's calls as its tool events tell them: asked for, or given a
/// result (`tool_end`, or `after_tool_result` for one that never ran).
fn calls<'a>(streams: &mut BTreeMap<(&'a str, u32), Seen<'a>>, run: &'a str, kind: &'a EventKind) {
    let (step, id, resulted) = match kind {
        EventKind::BeforeToolCall { step, call_id, .. } => (step, call_id, false),
        EventKind::ToolEnd { step, result, .. } => (step, &result.call_id, true),
        EventKind::AfterToolResult { step, call_id, .. } => (step, call_id, true),
        _ => return,
    };
    if let Some(seen) = streams.get_mut(&(run, *step)) {
        match resulted {
            true => seen.resulted.insert(id),
            false => seen.called.insert(id),
        };
    }
}

/// Sequence numbers of stored messages, by id.
fn seqs<'a>(o: &Observed<'a>) -> BTreeMap<&'a str, u64> {
    stored(o.threads)
        .into_iter()
        .map(|((_, id), m)| (id, m.seq))
        .collect()
}

/// The reference precedence: abort, then complete > waiting > steering >
/// next_step > natural, then the limit for what would go on.
fn expected(
    o: &Observed<'_>,
    step: u32,
    d: AfterStepDecision,
    seen: &Seen<'_>,
    steering: bool,
) -> Transition {
    if let Some(reason) = seen.aborted {
        return Transition::Aborted {
            outcome: pai_runtime::message::Outcome::Blocked,
            reason: reason.to_string(),
        };
    }
    // A provider's refusal ends the run, whatever was decided (S6).
    if let Some(kind) = seen.refused {
        return Transition::Refused {
            kind,
            explanation: String::new(),
        };
    }
    let goes_on = match d {
        AfterStepDecision::Complete => return Transition::Complete { reason: None },
        // Waiting calls are honoured even at the limit (A3, T7).
        _ if seen.waiting() => return Transition::Wait,
        _ if steering => Transition::Steer,
        AfterStepDecision::NextStep => Transition::NextStep,
        AfterStepDecision::Natural if seen.tool_calls => Transition::NextStep,
        AfterStepDecision::Natural => return Transition::Complete { reason: None },
    };
    if step + 1 >= o.scenario.agent.max_steps {
        return Transition::Complete {
            reason: Some("max_steps".into()),
        };
    }
    goes_on
}

/// Transitions compared; an abort's outcome is the abort's own, and a
/// refusal's words are the provider's (through the canonical stages).
fn same(got: &Transition, want: &Transition) -> bool {
    match (got, want) {
        (Transition::Aborted { reason: a, .. }, Transition::Aborted { reason: b, .. }) => a == b,
        (Transition::Refused { kind: a, .. }, Transition::Refused { kind: b, .. }) => a == b,
        _ => got == want,
    }
}
