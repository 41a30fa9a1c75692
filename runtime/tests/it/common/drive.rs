//! A clock and an id source for driving the runtime outside the simulator,
//! and two small lifecycles (shared by the runtime's integration tests and
//! the benches, which include this file alone).

#![allow(dead_code)]

use std::sync::Mutex;

use pai_runtime::{
    Clock, HookFuture, IdKind, IdSource, Lifecycle, Millis, hook,
    hook::AfterStepDecision,
    text::{Pattern, redact_text_deltas},
};

/// Time that never passes; nothing driven with it may wait on a timer.
pub struct StillClock;

impl Clock for StillClock {
    fn now(&self) -> Millis {
        0
    }
    fn sleep(&self, _ms: Millis) -> HookFuture<'static, ()> {
        HookFuture::new(std::future::pending())
    }
}

/// `run1`, `msg2`, ...: one counter for every kind.
#[derive(Default)]
pub struct CountingIds(Mutex<u64>);

impl IdSource for CountingIds {
    fn next_id(&self, kind: IdKind) -> String {
        let mut n = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *n += 1;
        format!("{}{n}", kind.prefix())
    }
}

/// Asks for one more step after step 0, then lets the run end naturally.
pub fn one_more_step() -> impl Lifecycle<()> {
    hook::after_step("one_more_step", |_, i| {
        HookFuture::ready(Ok(if i.step == 0 {
            AfterStepDecision::NextStep
        } else {
            AfterStepDecision::Natural
        }))
    })
}

/// Canonical redaction of every stream with `replacement`.
pub fn redact(patterns: Vec<Pattern>, replacement: &'static str) -> impl Lifecycle<()> {
    hook::transform_step_stream("redact", move |_, _| {
        Some(redact_text_deltas(patterns.clone(), replacement))
    })
}
