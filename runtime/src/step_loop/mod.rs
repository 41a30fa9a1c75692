//! The step loop (SPEC §1, L2): the per-thread driver drains the run queue;
//! a run is one or more episodes; an episode is `prepare_run` and steps; a
//! step is resolve, prepare, call, stream, commit, tools, `after_step`, and a
//! transition decided by one pure function.

mod batch;
mod driver;
mod episode;
mod exec;
mod facade;
mod lease;
mod resume;
mod step;
mod stream;
mod takeover;
mod tool_commit;
mod tools;
mod transition;

pub(crate) use driver::{drive, work_once};
