//! SPEC A2: no run starts more steps than the agent's limit. A takeover
//! (K3) continues after the last committed step: a step whose commit was
//! lost with the old holder is started again, and counts once.

use std::collections::BTreeMap;

use pai_runtime::event::EventKind;

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let limit = o.scenario.agent.max_steps;
    let mut steps: BTreeMap<&str, u32> = BTreeMap::new();
    for e in o.events {
        match e.kind {
            EventKind::ResolveModelContext { .. } => {
                *steps.entry(e.run_id.as_str()).or_default() += 1;
            }
            EventKind::TakenOver { next_step, .. } => {
                steps.insert(e.run_id.as_str(), next_step);
            }
            _ => {}
        }
    }
    steps
        .into_iter()
        .filter(|(_, n)| *n > limit)
        .map(|(run, n)| {
            let message = format!("the run started {n} steps; its limit is {limit}");
            Violation::new(OracleId::A2, Some(run), message)
        })
        .collect()
}
