//! The simulated world the runtime runs in: one seeded rng, the virtual
//! clock, ids from both, the scripted model and tools, and the recorder of
//! events. The world only records; it never judges what it sees.

mod actions;
mod answer;
mod calls;
mod clock;
mod cluster_log;
mod commits;
mod lock;
mod model;
mod recorder;
mod replay;
mod seeded;
mod sim_store;
mod store_tap;
mod tool;

pub use crate::book::{AnswerBook, Milestone, Plan, StoreWatch};
pub use actions::ActionRecord;
pub use answer::{Answering, answer, check_waiting, saw_calls};
pub use calls::{Answer, Calls, ModelCallRecord, ScriptName};
pub use clock::VirtualClock;
pub use cluster_log::{ClientWrite, ClusterEvent, ClusterLog, ClusterRecord};
pub use commits::{CommitRecord, reported, run_version};
pub use model::{ScriptedProvider, SharedProvider};
pub use recorder::Recorder;
pub use seeded::{Rng, SimIds};
#[cfg(test)]
pub(crate) use sim_store::plant;
pub use sim_store::{SimStore, StoreKind};
pub use store_tap::{ClientView, ExpectationRecord, Found, StoreTap, TapLog, TapOutcome};
pub use tool::{on_output, runtime_tool};
