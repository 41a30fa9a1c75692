//! Shrinking a failing case (issue: fuzz): smaller specs are tried one
//! change at a time (a hook, tool, turn, delta, tool call, timeline entry
//! or worker fault less; a shorter text; a smaller latency; a tool without its approval,
//! its `on_output` or its output's required fields), and kept while the
//! same failure still shows. Every loop is bounded by a budget of runs.

use super::judge::{Failure, evaluate_with};
use crate::registry::Registry;
use crate::scenario::{ScenarioSpec, ToolSpec};
use crate::world::StoreKind;

/// The smallest spec found that fails the same way, and how many changes
/// were kept. At most `budget` candidates are run (each twice, and a
/// differential failure's once more on the other store). A case with a
/// harness's hooks is judged with `registry` (empty otherwise).
pub fn shrink(
    spec: &ScenarioSpec,
    failure: &Failure,
    (budget, store): (usize, StoreKind),
    registry: &Registry,
) -> (ScenarioSpec, usize) {
    let across = matches!(failure, Failure::Differential { .. });
    let mut best = spec.clone();
    let mut kept = 0;
    let mut tried = 0;
    loop {
        let mut progressed = false;
        for candidate in candidates(&best) {
            if tried >= budget {
                return (best, kept);
            }
            tried += 1;
            let judged = evaluate_with(&candidate, store, across, registry);
            if judged.failure.as_ref() == Some(failure) {
                best = candidate;
                kept += 1;
                progressed = true;
                break;
            }
        }
        if !progressed {
            return (best, kept);
        }
    }
}

/// Every spec one change smaller than `s`, the biggest changes first.
fn candidates(s: &ScenarioSpec) -> Vec<ScenarioSpec> {
    let mut out = Vec::new();
    let mut with = |f: &dyn Fn(&mut ScenarioSpec)| {
        let mut c = s.clone();
        f(&mut c);
        if c != *s {
            out.push(c);
        }
    };
    for i in 0..s.lifecycle.len() {
        with(&|c| drop(c.lifecycle.remove(i)));
    }
    for i in 0..s.timeline.len() {
        with(&|c| drop(c.timeline.remove(i)));
    }
    // A worker fault the failure does not need goes too: one placed at a
    // request that never came would fail the written find's run anyway.
    for i in 0..s.faults.len() {
        with(&|c| drop(c.faults.remove(i)));
    }
    for i in 0..s.agent.tools.len() {
        with(&|c| drop(c.agent.tools.remove(i)));
    }
    for name in s.models.keys() {
        with(&|c| drop(c.models.remove(name)));
    }
    for i in 0..s.model.turns.len() {
        with(&|c| drop(c.model.turns.remove(i)));
    }
    with(&|c| c.docs.clear());
    with(&|c| c.agent.max_steps = c.agent.max_steps.saturating_sub(1).max(1));
    turns(s, &mut with);
    timeline_values(s, &mut with);
    out
}

/// Smaller turns: fewer deltas and calls, no errors, no latency.
fn turns(s: &ScenarioSpec, with: &mut impl FnMut(&dyn Fn(&mut ScenarioSpec))) {
    for i in 0..s.model.turns.len() {
        let t = &s.model.turns[i];
        for j in 0..t.tool_calls.len() {
            with(&|c| drop(c.model.turns[i].tool_calls.remove(j)));
        }
        if t.text.len() > 1 {
            with(&|c| {
                let joined = c.model.turns[i].text.concat();
                c.model.turns[i].text = vec![joined];
            });
        }
        for j in 0..t.text.len() {
            with(&|c| drop(c.model.turns[i].text.remove(j)));
        }
        with(&|c| c.model.turns[i].error = None);
        with(&|c| c.model.turns[i].stream_error = None);
        with(&|c| c.model.turns[i].latency_ms = 0);
        with(&|c| c.model.turns[i].delta_ms = 0);
    }
    for i in 0..s.agent.tools.len() {
        with(&|c| edit(c, i, |t| t.latency_ms = 0));
        with(&|c| edit(c, i, |t| t.requires.clear()));
        with(&|c| edit(c, i, |t| t.on_output = None));
        with(&|c| edit(c, i, |t| t.output_requires.clear()));
        with(&|c| edit(c, i, |t| t.approval = false.into()));
    }
}

/// Changes the scripted tool `i` (a registered one keeps its fields).
fn edit(c: &mut ScenarioSpec, i: usize, change: impl Fn(&mut ToolSpec)) {
    if let Some(t) = c.agent.tools[i].scripted_mut() {
        change(t);
    }
}

/// Smaller timeline values: earlier times, shorter texts.
fn timeline_values(s: &ScenarioSpec, with: &mut impl FnMut(&dyn Fn(&mut ScenarioSpec))) {
    for i in 0..s.timeline.len() {
        with(&|c| c.timeline[i].at /= 2);
        with(&|c| {
            let e = &mut c.timeline[i];
            for text in [&mut e.send, &mut e.steer].into_iter().flatten() {
                let words: Vec<&str> = text.split(' ').collect();
                *text = words[..words.len().div_ceil(2)].join(" ");
            }
        });
    }
}
