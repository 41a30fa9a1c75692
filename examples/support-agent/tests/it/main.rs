//! The support agent under the simulator: its scenarios with every
//! oracle and their snapshots, a fuzz campaign over compositions of its
//! hooks with the simulator's library, its own oracles, and proof that
//! those catch a broken hook. Run with `cargo test -p support-agent`.

mod broken;
mod fuzz;
mod harness;
mod off_by_one;
mod scenarios;
