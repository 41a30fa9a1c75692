//! What keeps the simulated world fair to a run's fault-free twin: the
//! answer book (which scripted answer each call of the world's answering
//! sources gets, a call made again answered alike) and what it reads of
//! the store as the store applies requests (each run's place among its
//! thread's admitted runs; the milestones timeline entries wait for). A
//! leaf: the world, the hooks and the timeline all use it.

mod answers;
mod lock;
mod store_watch;

pub use answers::{AnswerBook, Plan};
pub use store_watch::{Milestone, StoreWatch};
