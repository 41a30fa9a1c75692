//! The thread facade (SPEC H2–H5, H7, K4, R1–R3): atomic mutations with
//! expectations, history rewrites with their hooks, and incarnations.
//! Trusted code reaches it through [`Admin`]; a hook through its
//! `HookCx::mutate`, under its run's lease token. Every operation is one
//! store transaction (`store/mutation.rs`); nothing here touches a store
//! record directly.
//!
//! `mutate.rs` is the one path every write takes, `admin.rs` the trusted
//! API, `hook_cx.rs` the methods a hook calls on its `HookCx`, `deliver.rs`
//! the delivery of rewrite facts to `history_rewritten`. What a mutation's
//! closure sees ([`Staged`]) is a leaf outside this folder (`staged.rs`):
//! hooks name it too.

mod admin;
mod deliver;
mod hook_cx;
mod mutate;

pub use crate::staged::{MutateError, Staged};
pub use admin::{Admin, AdminThread};

pub(crate) use mutate::{Committer, rewrite_writes};
