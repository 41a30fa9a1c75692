//! SPEC L12: a `prepare_run` respond commits one lifecycle message with its
//! outcome and reason, through the canonical transforms (S1).

use pai_runtime::{
    Part,
    event::EventKind,
    hook::{NoteDecision, RunDecision},
    message::Producer,
};

use super::facts::stored;
use super::observed::{Observed, Violation};
use super::reference::canonical;
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let messages = stored(o.threads);
    let mut out = Vec::new();
    let mut responded = None;
    for e in o.events {
        match &e.kind {
            EventKind::Hook(n) => {
                if let NoteDecision::Run(RunDecision::Respond(r)) = &n.decision {
                    responded = Some(r);
                }
            }
            EventKind::Respond {
                message,
                outcome,
                reason,
                ..
            } => {
                let Some(m) = messages.get(&(e.thread_id.as_str(), message.as_str())) else {
                    continue;
                };
                let mut problems = Vec::new();
                if m.pai.producer != Producer::Lifecycle
                    || m.pai.outcome != Some(*outcome)
                    || m.pai.reason != *reason
                {
                    problems.push(
                        "is not a lifecycle message with the response's outcome and reason"
                            .to_string(),
                    );
                }
                if let Some(r) = responded.take() {
                    let text: String = r
                        .parts
                        .iter()
                        .filter_map(|p| match p {
                            Part::Text { text } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect();
                    let want = canonical(o.scenario, &text);
                    if let Some(want) = want.filter(|w| m.text() != *w) {
                        problems.push(format!(
                            "holds {:?}, not the transformed response {want:?}",
                            m.text()
                        ));
                    }
                }
                for p in problems {
                    let message = format!("the response #{} {p}", m.seq);
                    out.push(Violation::new(OracleId::L12, Some(&e.run_id), message));
                }
            }
            _ => {}
        }
    }
    out
}
