//! SPEC P1–P6: the route of every provider attempt equals an independent
//! fold (reference.rs) of the patches the log reports: the episode's run
//! patches (P5) over the agent's model, that step's patches (lasting one
//! step), then the attempt patches of the `around_model_call` hooks from
//! the outermost in (P6); the tools offered follow the route's selection
//! (P3) and the attempt's timeout is the shortest given.

use std::collections::BTreeMap;

use pai_runtime::{
    Event,
    event::EventKind,
    hook::{AttemptPatch, NoteDecision, Phase, RunDecision, StepDecision},
    model::{Route, RoutePatch},
};

use super::facts::handlers;
use super::observed::{Observed, Violation};
use super::reference::{FlatRoute, apply, flatten};
use crate::scenario::OracleId;

/// One run's patches so far.
#[derive(Debug, Default)]
struct Fold {
    run_patches: Vec<RoutePatch>,
    step_patches: Vec<RoutePatch>,
    episode: Option<FlatRoute>,
    step: Option<FlatRoute>,
    /// The attempt patches on the path to the next attempt, by hook depth.
    attempt: Vec<AttemptPatch>,
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let depth: BTreeMap<&str, usize> = handlers(o.scenario, Phase::AroundModelCall)
        .into_iter()
        .enumerate()
        .map(|(i, h)| (h, i))
        .collect();
    let base = flatten(&Route::new(o.scenario.agent.model.clone()));
    let mut runs: BTreeMap<&str, Fold> = BTreeMap::new();
    let mut out = Vec::new();
    for e in o.events {
        let f = runs.entry(e.run_id.as_str()).or_default();
        if let Some(p) = step(o, f, &base, &depth, e) {
            out.push(Violation::new(OracleId::P1P6, Some(&e.run_id), p));
        }
    }
    out
}

fn folded(start: &FlatRoute, patches: &[RoutePatch]) -> FlatRoute {
    let mut flat = start.clone();
    for p in patches {
        apply(&mut flat, p);
    }
    flat
}

/// Takes one event into the run's fold; a problem if it shows a route that
/// is not the reference's.
fn step(
    o: &Observed<'_>,
    f: &mut Fold,
    base: &FlatRoute,
    depth: &BTreeMap<&str, usize>,
    e: &Event,
) -> Option<String> {
    match &e.kind {
        EventKind::LeaseAcquired { .. } => f.run_patches.clear(),
        EventKind::Hook(n) => match &n.decision {
            NoteDecision::Run(RunDecision::Continue(p)) => f.run_patches.push(p.route.clone()),
            NoteDecision::Step(StepDecision::Continue(p)) => f.step_patches.push(p.route.clone()),
            NoteDecision::Next { patch } => {
                f.attempt
                    .truncate(depth.get(n.hook.as_str()).copied().unwrap_or(0));
                f.attempt.push(patch.clone());
            }
            _ => {}
        },
        EventKind::PrepareRun { route, .. } => {
            let want = folded(base, &f.run_patches);
            f.episode = Some(want.clone());
            return differs("the episode route", route, &want);
        }
        EventKind::PrepareModelStep { step, route, .. } => {
            let episode = f.episode.clone().unwrap_or_else(|| base.clone());
            let want = folded(&episode, &std::mem::take(&mut f.step_patches));
            f.step = Some(want.clone());
            f.attempt.clear();
            return differs(&format!("step {step}'s route"), route, &want);
        }
        EventKind::ModelCall {
            step,
            attempt,
            route,
            tools,
            timeout_ms,
            ..
        } => {
            let patches: Vec<RoutePatch> = f.attempt.iter().map(|p| p.route.clone()).collect();
            let want = folded(f.step.as_ref().unwrap_or(base), &patches);
            let place = format!("step {step} attempt {attempt}'s route");
            return differs(&place, route, &want)
                .or_else(|| offered(o, &want, tools))
                .or_else(|| timeout(&f.attempt, *timeout_ms));
        }
        _ => {}
    }
    None
}

fn differs(place: &str, got: &Route, want: &FlatRoute) -> Option<String> {
    let got = flatten(got);
    let text = |f: &FlatRoute| serde_json::to_string(f).unwrap_or_default();
    (got != *want).then(|| {
        format!(
            "{place} is {}; the patches in the log make {}",
            text(&got),
            text(want)
        )
    })
}

/// P3: the registered tools the route selects, in registration order.
fn offered(o: &Observed<'_>, route: &FlatRoute, tools: &[String]) -> Option<String> {
    let selection: Option<Vec<String>> = route
        .get("tools")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let want: Vec<&str> = o
        .scenario
        .agent
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| selection.as_ref().is_none_or(|s| s.iter().any(|x| x == n)))
        .collect();
    (tools != want).then(|| format!("the attempt offered {tools:?}; the route selects {want:?}"))
}

/// P6: an attempt's deadline is the shortest any patch on its path gave.
fn timeout(path: &[AttemptPatch], got: Option<u64>) -> Option<String> {
    let want = path.iter().filter_map(|p| p.timeout_ms).min();
    (got != want).then(|| format!("the attempt's timeout is {got:?}; the patches give {want:?}"))
}
