//! Crossings of waiting that the main draw rarely reaches (issue 25):
//!
//! - **A give-up window.** A run whose step made calls answerable, then
//!   completes without waiting (`after_step` says complete), gives the
//!   calls up (A3) while a slow `after_tool_result` hook holds the closing
//!   commit; an extra answer lands around that window. The store must
//!   refuse it or keep it, never take it and commit a cancelled result
//!   over it (T9's kept-answer check).
//! - **Hooks only on resume.** A `fail` or `delay` hook limited to a
//!   resumed episode (`on_resume`), in cases where an episode can resume
//!   (a client or approval tool, or several workers), so the loader takes it.
//!
//! Drawn from its own stream of the seed, after the other generators, so
//! the cases they draw stay as they were.

use super::draw::{Features, Gen};
use crate::hooks::{AfterStep, AfterStepSpec, Delay, HookSpec, PhaseName};
use crate::scenario::{LifecycleEntry, ScenarioSpec, ToolEntry};

/// A stream of the seed's rng apart from the other generators'.
const STREAM: u64 = 0x5eed_a3a3_907e_11f0;

/// Adds the waiting crossings to some cases that have waiting tools.
pub(super) fn waiting(seed: u64, features: Features, spec: &mut ScenarioSpec) {
    let mut g = Gen::new(seed ^ STREAM, features);
    let waits = spec.agent.tools.iter().any(ToolEntry::may_wait);
    if waits && g.chance(20) {
        give_up_window(&mut g, spec);
    }
    if (waits || !spec.workers.is_empty()) && g.chance(25) {
        on_resume(&mut g, spec);
    }
}

/// `after_step` completes at once and `after_tool_result` is slow: the
/// step's answerable calls are given up over a window; an answer already
/// drawn is sent again a little later, into it or past it.
fn give_up_window(g: &mut Gen, spec: &mut ScenarioSpec) {
    spec.lifecycle
        .push(LifecycleEntry::from(HookSpec::AfterStep(AfterStep {
            name: None,
            decision: AfterStepSpec::Complete,
            step: g.maybe(50, |g| g.range(0, 1) as u32),
        })));
    spec.lifecycle
        .push(LifecycleEntry::from(HookSpec::Delay(Delay {
            name: None,
            phase: PhaseName::AfterToolResult,
            ms: g.range(20, 80),
            step: None,
            on_resume: false,
        })));
    let answers: Vec<usize> = (0..spec.timeline.len())
        .filter(|&i| {
            let t = &spec.timeline[i];
            // Not an answer meant to be refused (it names no call a script
            // makes, which the loader allows only with its `expect_error`).
            let answer = t.approve.is_some() || t.deny.is_some() || t.submit_result.is_some();
            answer && t.expect_error.is_none()
        })
        .collect();
    if answers.is_empty() {
        return;
    }
    let mut again = spec.timeline[*g.pick(&answers)].clone();
    again.at = g.range(0, 120);
    again.expect_error = None;
    spec.timeline.push(again);
}

/// One hook that fails or waits only when its episode resumes.
fn on_resume(g: &mut Gen, spec: &mut ScenarioSpec) {
    let phase = super::hooks::phase(g);
    let hook = match g.chance(40) {
        true => HookSpec::Fail(crate::hooks::Fail {
            name: None,
            phase,
            message: "planted failure on resume".into(),
            panic: false,
            step: None,
            on_resume: true,
        }),
        false => HookSpec::Delay(Delay {
            name: None,
            phase,
            ms: g.range(1, 40),
            step: None,
            on_resume: true,
        }),
    };
    spec.lifecycle.push(hook.into());
}
