//! The thread facade a hook reaches through its [`HookCx`] (SPEC H7): the
//! run's typed metadata and hidden lifecycle context messages (L13). Every
//! write is one commit under the run's lease token (K2) that bumps the
//! thread's version and tells its watchers (H1), but run metadata written
//! while tool results are produced, which commits with them (K5); no hook
//! touches the store.

use crate::error::{HookError, HookResult};
use crate::lifecycle::{HookCx, RunFacade};
use crate::metadata::{RunMetadata, decode, encode};
use crate::staged::{MutateError, Staged};
use crate::store::{Expect, Mutation, StoredThread};

impl<C: Sync> HookCx<'_, C> {
    fn facade(&self) -> HookResult<&dyn RunFacade> {
        self.run.ok_or_else(|| {
            HookError::new("no thread facade: this hook context is not inside a run")
        })
    }

    /// The run's metadata, `M::default()` until written. `M` must be the
    /// type the agent names ([`crate::Agent::run_metadata`]). Inside
    /// `after_tool_result` it reads what the step's results staged so far
    /// (read your writes, SPEC K5).
    pub async fn run_metadata<M: RunMetadata>(&self) -> HookResult<M> {
        let f = self.facade()?;
        f.metadata_type().expect::<M>().map_err(HookError::new)?;
        let stored = f.read_metadata().await.map_err(HookError::new)?;
        decode(stored.as_ref()).map_err(HookError::new)
    }

    /// Replaces the run's metadata (one commit under the run's lease). In
    /// `after_tool_result` the write is about the result: it is staged and
    /// commits in the same store write as the step's results, or not at
    /// all if they are not committed (SPEC K5).
    pub async fn set_run_metadata<M: RunMetadata>(&self, value: &M) -> HookResult<()> {
        let f = self.facade()?;
        f.metadata_type().expect::<M>().map_err(HookError::new)?;
        let value = encode(value).map_err(HookError::new)?;
        f.write_metadata(value)
            .await
            .map(drop)
            .map_err(HookError::new)
    }

    /// Reads, changes and writes back the run's metadata; nothing is
    /// written when `f` leaves it as it was.
    pub async fn update_run_metadata<M: RunMetadata>(
        &self,
        f: impl FnOnce(&mut M),
    ) -> HookResult<()> {
        let before: M = self.run_metadata().await?;
        let before_json = encode(&before).map_err(HookError::new)?;
        let mut after = before;
        f(&mut after);
        if encode(&after).map_err(HookError::new)? == before_json {
            return Ok(());
        }
        self.set_run_metadata(&after).await
    }

    /// Stores a hidden lifecycle context message (SPEC L13): the model sees
    /// it in every later step's context, the transcript never shows it, and
    /// unlike an overlay it survives waiting and resume. Returns its id.
    pub async fn store_context_message(&self, text: impl Into<String>) -> HookResult<String> {
        self.facade()?
            .store_context_message(text.into())
            .await
            .map_err(HookError::new)
    }

    /// The thread as stored, private metadata included (hooks are server code).
    pub async fn read_thread(&self) -> Result<StoredThread, MutateError> {
        let f = self
            .facade()
            .map_err(|e| MutateError::Aborted(e.to_string()))?;
        f.read_thread().await
    }

    /// SPEC H2, H3: stages writes in `f` over the stored thread and commits
    /// them as one change under the run's lease token (K2) if `expect`
    /// holds. An error or panic in `f` commits nothing; a conflict can be
    /// retried after reading again.
    pub async fn mutate<T: Send>(
        &self,
        expect: Expect,
        f: impl FnOnce(&mut Staged<'_>) -> Result<T, String> + Send,
    ) -> Result<(T, Mutation), MutateError> {
        let facade = self
            .facade()
            .map_err(|e| MutateError::Aborted(e.to_string()))?;
        let mut out = None;
        let stage = Box::new(|s: &mut Staged<'_>| {
            out = Some(f(s)?);
            Ok(())
        });
        let done = facade.mutate(expect, stage).await?;
        match out {
            Some(out) => Ok((out, done)),
            None => Err(MutateError::Aborted("the mutation staged nothing".into())),
        }
    }
}
