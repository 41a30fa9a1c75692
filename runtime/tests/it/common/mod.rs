//! What the runtime's integration tests share: a clock and an id source
//! for driving the runtime outside the simulator (`drive.rs`, which the
//! benches include too), a scripted model, a recording event sink, and
//! [`setup`], a runtime over a store of the test's own with sensible
//! defaults.

#![allow(dead_code)]

mod drive;
mod scripted;
mod setup;
mod sink;

pub use drive::{CountingIds, StillClock, one_more_step, redact};
pub use scripted::{ScriptedModel, Turn, last_user_text, texts};
pub use setup::{Setup, SetupBuilder, setup};
pub use sink::RecordingSink;
