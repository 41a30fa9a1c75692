//! The one integration-test binary of `pai-runtime`: one module per area,
//! linked once (a binary per file cost CI a link each). Run one area with
//! `cargo test -p pai-runtime --test it facade::`.

mod api;
mod client;
mod common;
mod context_cache;
mod facade;
mod h6_rewrites;
mod module_graph;
mod props;
mod streams;
mod waiting;
mod workers;
