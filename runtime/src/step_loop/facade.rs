//! The thread facade an episode lends its hooks (SPEC H7): run metadata
//! and hidden lifecycle context messages (L13), written under the
//! episode's lease token (K2), one commit each (H1).

use serde_json::Value;

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::exec::{Exec, Fail};
use crate::clock::IdKind;
use crate::event::{EventKind, RunStage};
use crate::future::panic_message;
use crate::lifecycle::{RunFacade, ToolResult};
use crate::message::{Message, Part, Producer, Role, Visibility};
use crate::metadata::MetaType;
use crate::store::StoreError;

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// Replaces the run's metadata in one commit under the episode's token.
    fn commit_metadata(&self, value: Value) -> Result<u64, StoreError> {
        self.sh.commit_in(self.thread, |store, _| {
            let v = store.write(self.thread, |rec| {
                rec.set_run_metadata(self.run, self.token, value)
            })??;
            Ok((v, v))
        })
    }

    /// The tool's `on_output` handlers over one successful output (SPEC
    /// T6); what they leave in the run metadata is committed. An error or a
    /// panic in a handler fails the run (X2).
    pub(super) fn on_output(
        &self,
        step: u32,
        input: &Value,
        result: &ToolResult,
    ) -> Result<(), Fail> {
        let fail = |m: String| Fail::new(RunStage::OnOutput, m);
        let stored = self.read_metadata().map_err(fail)?;
        let handlers = &self.sh.agent.on_output;
        let ran = catch_unwind(AssertUnwindSafe(|| {
            handlers.run(&result.tool, stored.as_ref(), input, &result.output)
        }));
        let changed = match ran {
            Ok(out) => out.map_err(fail)?,
            Err(p) => return Err(fail(format!("on_output panicked: {}", panic_message(&*p)))),
        };
        let version = match changed {
            Some(v) => Some(self.commit_metadata(v).map_err(|e| fail(e.to_string()))?),
            None => None,
        };
        self.emit(|| EventKind::OnOutput {
            step,
            call_id: result.call_id.clone(),
            tool: result.tool.clone(),
            version,
        });
        Ok(())
    }
}

impl<C: Send + Sync + 'static> RunFacade for Exec<'_, C> {
    fn metadata_type(&self) -> MetaType {
        self.sh.agent.metadata
    }

    fn read_metadata(&self) -> Result<Option<Value>, String> {
        self.sh
            .store
            .read(self.thread, |rec| rec.run_metadata(self.run).cloned())
            .map_err(|e| e.to_string())
    }

    fn write_metadata(&self, value: Value) -> Result<u64, String> {
        let version = self.commit_metadata(value).map_err(|e| e.to_string())?;
        self.emit(|| EventKind::RunMetadata { version });
        Ok(version)
    }

    fn store_context_message(&self, text: String) -> Result<String, String> {
        let id = self.sh.ids.next_id(IdKind::Message);
        let message = Message {
            id: id.clone(),
            seq: 0,
            role: Role::System,
            parts: vec![Part::text(text)],
            visibility: Visibility::CONTEXT_ONLY,
            pai: self.meta(Producer::Lifecycle, None),
        };
        let appended = self
            .sh
            .commit(self.thread, Some(self.token), [message])
            .map_err(|e| e.to_string())?;
        self.emit(|| EventKind::ContextMessage {
            message: id.clone(),
            version: appended.version,
        });
        Ok(id)
    }
}
