//! The store seam (SPEC K2, H7): the runtime reaches durable thread state
//! only through the root's [`Store`] trait
//! ([`MemoryStore`](crate::MemoryStore) in process; `SqliteStore` and
//! `PgStore` behind the features `sqlite` and `postgres`; failures a
//! [`StoreError`]). This module holds the protocol: one request per transaction
//! (`protocol.rs`; its kinds' names in `kinds.rs`, its answers in
//! `reply.rs`), applied by `engine.rs` (what a run asked to cancel may still write:
//! `cancelled.rs`). `memory.rs` is the in-process
//! store; `thread.rs` the thread record and its invariants, `lease.rs` its lease, `record.rs`
//! what is recorded and reported, `waiting.rs` the waiting calls and the
//! answer rule, `handle.rs` the typed calls the runtime makes. Nothing
//! here lives only in the process that drives a thread (stop signals,
//! watchers, the driver task): that is `process.rs`.

mod cancelled;
mod cut;
mod engine;
pub(crate) mod handle;
mod kinds;
pub(crate) mod memory;
mod mutation;
#[cfg(feature = "postgres")]
mod postgres;
pub(crate) mod protocol;
mod reads;
pub(crate) mod record;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod record_cache;
mod reply;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(all(test, any(feature = "sqlite", feature = "postgres")))]
mod test_script;
mod thread;
mod token;
mod waiting;

pub(crate) use cut::regeneration_cut;
pub(crate) use handle::StoreHandle;
pub use mutation::{
    DELETED, Deletion, Expect, Mutation, Refusal, Regeneration, VisibilityChange, Write, Writer,
};
#[cfg(feature = "postgres")]
pub use postgres::{PgConfig, PgError, PgOptions, PgStore};
pub(crate) use protocol::Store;
pub use protocol::{
    AdminOp, CachedThrough, ClientOp, FacadeOp, HistoryRead, Op, ReadOp, RunOp, StoreFuture,
    StoreRequest,
};
pub(crate) use record::StoreError;
pub use record::{
    Answered, Appended, CancelMiss, CancelReached, CancelTarget, Claimed, HandOver, HandedOver,
    RunEnd, RunRecord, RunStatus, StoredThread, Submitted, Takeover,
};
pub use reply::{AdminReply, ClientReply, FacadeReply, Finish, ReadReply, RunReply, StoreReply};
#[cfg(feature = "sqlite")]
pub use sqlite::{Durability, SqliteConfig, SqliteError, SqliteStore};
pub use token::FencingToken;
pub use waiting::{Answer, AnswerMiss, WaitingCall};
