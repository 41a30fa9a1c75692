//! Committing a step's tool results (SPEC T2, T9, K5): one tool message
//! in call order, with the run metadata their hooks staged; a cancelled
//! run's closing write says so (K6).

use super::exec::{Exec, Fail};
use crate::event::{EventKind, RunStage};
use crate::lifecycle::ToolResult;
use crate::message::{NewMessage, Part, Producer, Role, Visibility};
use crate::store::Appended;

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// Commits the results of a step whose client and approval calls were
    /// answerable (T9), in call order, as one tool message in the commit
    /// that ends their being answerable (K5: nothing is answered twice),
    /// with the run metadata their hooks wrote (K5).
    pub(super) async fn commit_answered(
        &self,
        step: u32,
        finals: &[ToolResult],
    ) -> Result<(), Fail> {
        let message = self.results_message(step, finals);
        let id = message.id.clone();
        let metadata = self.batch.close();
        let carried = metadata.is_some();
        let appended = self.commit_resumed(message, metadata).await?;
        self.emit(|| EventKind::CommitToolResults {
            step,
            message: id,
            version: appended.version,
            metadata: carried,
        });
        self.closed(&appended, "commit_resumed");
        Ok(())
    }

    /// The store took these results as the closing write of a run a
    /// client asked to cancel, and said so (K6): the run stops.
    pub(super) fn closed(&self, appended: &Appended, request: &str) {
        if appended.cancel_requested {
            self.hear_cancel(request);
        }
    }

    /// Commits the step's results, in call order, as one tool message (T2),
    /// with the run metadata their hooks wrote (K5).
    pub(super) async fn commit_results(
        &self,
        step: u32,
        finals: &[ToolResult],
    ) -> Result<(), Fail> {
        let message = self.results_message(step, finals);
        let id = message.id.clone();
        let metadata = self.batch.close();
        let carried = metadata.is_some();
        let stage = RunStage::CommitToolResults;
        let appended = self
            .commit_carrying(stage, vec![message], None, metadata)
            .await?;
        self.emit(|| EventKind::CommitToolResults {
            step,
            message: id,
            version: appended.version,
            metadata: carried,
        });
        self.closed(&appended, "commit_tool_results");
        Ok(())
    }

    /// One tool message holding `finals` in order.
    pub(super) fn results_message(&self, step: u32, finals: &[ToolResult]) -> NewMessage {
        let id = self.sh.ids.next_id(crate::clock::IdKind::Message);
        let parts = finals
            .iter()
            .map(|r| Part::ToolResult {
                call_id: r.call_id.clone(),
                tool: r.tool.clone(),
                status: r.status,
                source: r.source,
                output: r.output.clone(),
            })
            .collect();
        NewMessage {
            id: id.into(),
            role: Role::Tool,
            parts,
            visibility: Visibility::ALL,
            pai: self.meta(Producer::Tool, Some(step)),
        }
    }
}
