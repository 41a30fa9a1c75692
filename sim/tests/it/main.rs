//! The one integration-test binary of `pai-sim`: one module per area,
//! linked once (a binary per file cost CI a link each). Run one area with
//! `cargo test -p pai-sim --test it props::`.

mod browser;
#[cfg(feature = "cli")]
mod cli;
mod common;
mod fuzz;
mod harness;
mod harness_approval;
mod harness_errors;
mod harness_fuzz;
mod harness_models;
mod harness_tools;
mod harness_typed;
mod k2_faults;
mod module_graph;
mod props;
#[cfg(feature = "record")]
mod record;
#[cfg(feature = "cli")]
mod show;
