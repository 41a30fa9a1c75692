//! `pai-sim fuzz` (SPEC D8): generated cases, every oracle on every case
//! (each case runs twice, D4; a share of cases once more on the other store,
//! which must give the same run, D1), failures shrunk into scenario files, and the
//! coverage of what the cases reached. One seed and a case count give the
//! same cases anywhere; shards split them without overlap.

mod approval;
mod campaign;
mod case;
mod cluster;
mod coverage;
mod coverage_keys;
mod crossings;
mod decisions;
#[cfg(test)]
mod differential_tests;
mod draw;
mod facade;
mod hooks;
mod judge;
mod mix;
mod mix_tools;
mod near;
mod persist;
mod placed;
mod replayed;
mod resumed_steer;
mod shrink;
mod taker;
mod timeline;
mod tools;
mod waiting;
mod write;

pub use campaign::{Campaign, DIFFERENTIAL_EVERY, Find, Summary};
pub use case::{case, case_with};
pub use coverage::{Coverage, KEYS as COVERAGE_KEYS};
pub use decisions::{DECISIONS, Decisions};
pub use draw::Features;
pub use judge::{
    Evaluation, Failure, case_seed, differential, evaluate, evaluate_across, evaluate_on,
    evaluate_with, in_shard,
};
pub use mix::{CROSSINGS, MixCoverage};
pub use shrink::shrink;
pub use write::{find_digest, write_find, write_find_as};
