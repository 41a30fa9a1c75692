//! What hooks write about a step's tool results (SPEC K5). The run
//! metadata that `on_output` handlers and `after_tool_result` hooks write
//! while the results are produced is staged here and committed in the one
//! store write that commits those results: a step's `commit_tool_results`,
//! a resumed run's commit of its answered calls, or the commit that closes
//! a cancelled run's open calls. A result that is never committed (its
//! worker crashed or lost its lease, or a later hook failed the step)
//! leaves no trace of what its hooks wrote, so a call run again after a
//! crash is counted once.
//!
//! Read your writes: while a batch is open, a hook or handler that reads
//! the run's metadata reads what the batch staged (its own write, or an
//! earlier one of the same batch), not the stored value, so two results
//! of one step that each add 1 leave 2.

use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

/// One episode's batch of results on their way to their commit.
#[derive(Debug, Default)]
pub(super) struct ResultBatch {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Results are being produced: metadata writes are staged.
    open: bool,
    /// The run metadata staged by the batch's latest write.
    metadata: Option<Value>,
}

impl ResultBatch {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Results are produced from now until their commit.
    pub(super) fn open(&self) {
        self.state().open = true;
    }

    /// Stages `value` when a batch is open; gives it back when none is
    /// (the caller then writes it at once).
    pub(super) fn stage(&self, value: Value) -> Option<Value> {
        let mut state = self.state();
        if !state.open {
            return Some(value);
        }
        state.metadata = Some(value);
        None
    }

    /// The run metadata the open batch staged, if it staged any.
    pub(super) fn staged(&self) -> Option<Value> {
        self.state().metadata.clone()
    }

    /// Ends the batch at the commit of its results: the metadata that
    /// commit carries, if a hook wrote any.
    pub(super) fn close(&self) -> Option<Value> {
        let mut state = self.state();
        state.open = false;
        state.metadata.take()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// SPEC K5: writes outside a batch go to the store at once; inside one
    /// they are staged, read back, and handed to the results' commit once.
    #[test]
    fn k5_a_batch_stages_reads_back_and_hands_over_once() {
        let batch = ResultBatch::default();
        assert_eq!(batch.stage(json!(1)), Some(json!(1)));
        assert_eq!(batch.staged(), None);
        batch.open();
        assert_eq!(batch.staged(), None);
        assert_eq!(batch.stage(json!(2)), None);
        assert_eq!(batch.stage(json!(3)), None);
        assert_eq!(batch.staged(), Some(json!(3)));
        assert_eq!(batch.close(), Some(json!(3)));
        assert_eq!(batch.close(), None);
        assert_eq!(batch.stage(json!(4)), Some(json!(4)));
    }
}
