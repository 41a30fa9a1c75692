//! What the runtime lends a hook for its run's durable writes (SPEC H7);
//! hooks use it through the methods of `HookCx` in `cx_facade`.

use serde_json::Value;

use crate::future::HookFuture;
use crate::metadata::MetaType;

/// What the runtime lends a hook for durable writes of its run.
pub(crate) trait RunFacade: Send + Sync {
    /// The type the agent names for run metadata.
    fn metadata_type(&self) -> MetaType;
    /// The run's metadata as stored (`None`: never written).
    fn read_metadata(&self) -> HookFuture<'_, Result<Option<Value>, String>>;
    /// Replaces the run's metadata; returns the thread's new version.
    fn write_metadata(&self, value: Value) -> HookFuture<'_, Result<u64, String>>;
    /// Stores a hidden lifecycle context message; returns its id.
    fn store_context_message(&self, text: String) -> HookFuture<'_, Result<String, String>>;
}
