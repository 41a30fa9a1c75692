//! What the runtime lends a hook for its run's durable writes (SPEC H7);
//! hooks use it through the methods of `HookCx` in `facade/hook_cx.rs`.

use serde_json::Value;

use crate::future::HookFuture;
use crate::id::MessageId;
use crate::metadata::MetaType;
use crate::staged::{MutateError, Staged};
use crate::store::{Expect, Mutation, StoredThread};

/// A mutation's staging closure, boxed to cross the facade.
pub(crate) type StageFn<'a> = Box<dyn FnOnce(&mut Staged<'_>) -> Result<(), String> + Send + 'a>;

/// What the runtime lends a hook for durable writes of its run.
pub(crate) trait RunFacade: Send + Sync {
    /// The type the agent names for run metadata.
    fn metadata_type(&self) -> MetaType;
    /// The run's metadata as stored, or as the batch of results being
    /// produced staged it (`None`: never written; SPEC K5).
    fn read_metadata(&self) -> HookFuture<'_, Result<Option<Value>, String>>;
    /// Replaces the run's metadata; returns the thread's new version, or
    /// `None` when the write is staged to commit with the results being
    /// produced (K5).
    fn write_metadata(&self, value: Value) -> HookFuture<'_, Result<Option<u64>, String>>;
    /// Stores a hidden lifecycle context message; returns its id.
    fn store_context_message(&self, text: String) -> HookFuture<'_, Result<String, String>>;
    /// The thread as stored (trusted: private metadata included).
    fn read_thread(&self) -> HookFuture<'_, Result<StoredThread, MutateError>>;
    /// A mutation under the run's lease token (SPEC H2, H3, K2).
    fn mutate<'a>(
        &'a self,
        expect: Expect,
        f: StageFn<'a>,
    ) -> HookFuture<'a, Result<Mutation, MutateError>>;
    /// Logs compaction progress for the run (C1).
    fn progress(&self, progress: Progress);
    /// A compaction summary's text through the run's canonical transforms
    /// (SPEC S1, C3), as a step's text is before it is stored; `step` is
    /// the step the summary is made for. A transform that panics is the
    /// error.
    fn canonical_summary(&self, step: u32, text: String) -> Result<String, String>;
    /// Whether the run's driver heard of a cancel or a delete (K6, H5): a
    /// helper then starts no model call of its own.
    fn stopped(&self) -> bool;
}

/// Compaction progress, as the run's log reports it (SPEC C1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Progress {
    Started {
        step: u32,
        through: u64,
        messages: usize,
    },
    Compacted {
        step: u32,
        summary: MessageId,
        through: u64,
        version: u64,
    },
    Skipped {
        step: u32,
        reason: String,
    },
}
