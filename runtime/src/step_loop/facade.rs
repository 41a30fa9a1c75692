//! The thread facade an episode lends its hooks (SPEC H7): run metadata
//! and hidden lifecycle context messages (L13), written under the
//! episode's lease token (K2), one commit each (H1). Run metadata written
//! while a step's results are produced (`on_output`, `after_tool_result`)
//! is staged instead and commits with those results (K5, `batch.rs`).

use serde_json::Value;

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::exec::{Exec, Fail};
use crate::clock::IdKind;
use crate::event::{EventKind, RunStage};
use crate::facade::Committer;
use crate::future::HookFuture;
use crate::future::panic_message;
use crate::id::MessageId;
use crate::lifecycle::{Progress, RunFacade, StageFn, StreamKind, ToolResult};
use crate::message::{NewMessage, Part, Producer, Role, Visibility};
use crate::metadata::MetaType;
use crate::staged::MutateError;
use crate::store::{Expect, Mutation, StoredThread, Writer};

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// Replaces the run's metadata in one commit under the episode's token;
    /// a refusal is heard as `request`'s (a delete learned is logged, H5).
    async fn commit_metadata(&self, value: Value, request: &str) -> Result<u64, String> {
        self.writable(RunStage::OnOutput).map_err(|f| f.message)?;
        let mut attached = self.sh.process.attach(self.thread).await;
        let written = self
            .sh
            .store
            .set_run_metadata(self.thread, self.run, self.token, value);
        let version = written
            .await
            .map_err(|e| self.refused(RunStage::OnOutput, request, e).message)?;
        self.sh.told(&mut attached, version);
        Ok(version)
    }

    /// Writes the run's metadata: staged while results are produced, to
    /// commit with them (K5; `None`), else at once in one commit under the
    /// episode's token (the thread's new version).
    async fn store_metadata(&self, value: Value, request: &str) -> Result<Option<u64>, String> {
        match self.batch.stage(value) {
            None => Ok(None),
            Some(value) => self.commit_metadata(value, request).await.map(Some),
        }
    }

    /// The tool's `on_output` handlers over one successful output (SPEC
    /// T6), inside the batch of results being produced: they read the
    /// metadata as the batch left it, and what they change commits with
    /// the result (K5). An error or a panic in a handler fails the run
    /// (X2).
    pub(super) async fn on_output(
        &self,
        step: u32,
        input: &Value,
        result: &ToolResult,
    ) -> Result<(), Fail> {
        let fail = |m: String| Fail::new(RunStage::OnOutput, m);
        self.batch.open();
        let stored = self.read_metadata().await.map_err(fail)?;
        let handlers = &self.sh.agent.on_output;
        let ran = catch_unwind(AssertUnwindSafe(|| {
            handlers.run(&result.tool, stored.as_ref(), input, &result.output)
        }));
        let changed = match ran {
            Ok(out) => out.map_err(fail)?,
            Err(p) => return Err(fail(format!("on_output panicked: {}", panic_message(&*p)))),
        };
        let changed = match changed {
            Some(v) => self
                .store_metadata(v, "on_output")
                .await
                .map_err(fail)?
                .is_none(),
            None => false,
        };
        self.emit(|| EventKind::OnOutput {
            step,
            call_id: result.call_id.clone(),
            tool: result.tool.clone(),
            input: input.clone(),
            changed,
        });
        Ok(())
    }
}

impl<C: Send + Sync + 'static> RunFacade for Exec<'_, C> {
    fn stopped(&self) -> bool {
        self.stop.is_set()
    }

    fn metadata_type(&self) -> MetaType {
        self.sh.agent.metadata
    }

    // A hook's read or write the store refuses because the run's thread
    // was deleted is, among workers, how its worker learns of the delete
    // (H5): logged (`delete_learned`, naming the request) and the run
    // stopped, as for any write of the run; the run's end then says in
    // which phase it stopped.
    fn read_metadata(&self) -> HookFuture<'_, Result<Option<Value>, String>> {
        HookFuture::new(async move {
            // Read your writes: what the batch of results staged (K5).
            if let Some(staged) = self.batch.staged() {
                return Ok(Some(staged));
            }
            let read = self.sh.store.run_metadata(self.thread, self.run).await;
            read.map_err(|e| self.refused(RunStage::OnOutput, "run_metadata", e).message)
        })
    }

    fn write_metadata(&self, value: Value) -> HookFuture<'_, Result<Option<u64>, String>> {
        HookFuture::new(async move {
            let version = self.store_metadata(value, "set_run_metadata").await?;
            self.emit(|| EventKind::RunMetadata { version });
            Ok(version)
        })
    }

    fn store_context_message(&self, text: String) -> HookFuture<'_, Result<String, String>> {
        HookFuture::new(self.context_message(text))
    }

    fn read_thread(&self) -> HookFuture<'_, Result<StoredThread, MutateError>> {
        HookFuture::new(async move {
            let read = self.committer().read().await;
            if let Err(e) = &read {
                self.hear_refusal("inspect", e);
            }
            Ok(read?)
        })
    }

    fn mutate<'a>(
        &'a self,
        expect: Expect,
        f: StageFn<'a>,
    ) -> HookFuture<'a, Result<Mutation, MutateError>> {
        HookFuture::new(async move {
            let stage = RunStage::Phase(crate::lifecycle::Phase::ResolveModelContext);
            self.writable(stage)
                .map_err(|f| MutateError::Aborted(f.message))?;
            let done = self.committer().mutate(expect, f).await;
            if let Err(MutateError::Store(e)) = &done {
                // A worker that learns of a delete or a cancel stops the
                // run (H5, K6, T8).
                self.hear_refusal("mutate", e);
            }
            Ok(done?.1)
        })
    }

    fn progress(&self, progress: Progress) {
        self.emit(|| match progress {
            Progress::Started {
                step,
                through,
                messages,
            } => EventKind::CompactionStarted {
                step,
                through,
                messages,
            },
            Progress::Compacted {
                step,
                summary,
                through,
                version,
            } => EventKind::Compacted {
                step,
                summary,
                through,
                version,
            },
            Progress::Skipped { step, reason } => EventKind::CompactionSkipped { step, reason },
        });
    }

    fn canonical_summary(&self, step: u32, text: String) -> Result<String, String> {
        let parts = vec![Part::text(text)];
        let parts = self.finished(StreamKind::Summary, Some(step), parts);
        let texts = parts.map_err(|f| f.message)?.into_iter();
        Ok(texts
            .filter_map(|p| match p {
                Part::Text { text } => Some(text),
                _ => None,
            })
            .collect())
    }
}

impl<C: Send + Sync + 'static> Exec<'_, C> {
    fn committer(&self) -> Committer<'_, C> {
        Committer {
            sh: self.sh,
            thread: self.thread,
            writer: Writer::Run {
                run: self.run.into(),
                token: self.token,
            },
            incarnation: None,
        }
    }
}

impl<C: Send + Sync + 'static> Exec<'_, C> {
    async fn context_message(&self, text: String) -> Result<String, String> {
        let id = MessageId::new(self.sh.ids.next_id(IdKind::Message));
        let message = NewMessage {
            id: id.clone(),
            role: Role::System,
            parts: vec![Part::text(text)],
            visibility: Visibility::CONTEXT_ONLY,
            pai: self.meta(Producer::Lifecycle, None),
        };
        let appended = self
            .commit(
                RunStage::Phase(crate::lifecycle::Phase::PrepareRun),
                vec![message],
                None,
            )
            .await
            .map_err(|f| f.message)?;
        self.emit(|| EventKind::ContextMessage {
            message: id.clone(),
            version: appended.version,
        });
        Ok(id.into_string())
    }
}
