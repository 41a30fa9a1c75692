//! `pai-sim fuzz` (SPEC D8): generated cases, every oracle on every case
//! (each case runs twice, D4), failures shrunk into scenario files, and the
//! coverage of what the cases reached. One seed and a case count give the
//! same cases anywhere; shards split them without overlap.

mod campaign;
mod case;
mod cluster;
mod coverage;
mod crossings;
mod draw;
mod facade;
mod hooks;
mod judge;
mod shrink;
mod timeline;
mod tools;
mod write;

pub use campaign::{Campaign, Find, Summary};
pub use case::case;
pub use coverage::{Coverage, KEYS as COVERAGE_KEYS};
pub use judge::{Evaluation, Failure, case_seed, evaluate, in_shard};
pub use shrink::shrink;
pub use write::write_find;
