//! The thread facade (SPEC H2–H5, H7, K4, R1–R3): atomic mutations with
//! expectations, history rewrites with their hooks, and incarnations.
//! Trusted code reaches it through [`Admin`]; a hook through its
//! `HookCx::mutate`, under its run's lease token. Every operation is one
//! store transaction (`store/mutation.rs`); nothing here touches a store
//! record directly.

mod admin;
mod deliver;

pub use admin::{Admin, AdminThread};
