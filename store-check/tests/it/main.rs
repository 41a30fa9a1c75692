//! The one integration-test binary of `pai-store-check`: the stores run
//! against the reference model, the broken stores it must catch, the
//! findings, and crash tests with real processes (which run this binary
//! again, filtered to their own test). Run one area with
//! `cargo test -p pai-store-check --test it sqlite::`.

mod broken;
mod crash_postgres;
mod crash_sqlite;
mod findings;
mod fixtures;
mod h3_model;
mod memory;
mod postgres;
mod retired;
mod sqlite;
