//! The lease on a thread's current run (SPEC K2, K3): who holds it, the
//! fencing token that only grows, and when it expires on the store's
//! clock. Claiming a run, moving to a new episode, renewing and releasing
//! are here; every run write is checked by `fenced`.

use super::super::record::{Claimed, RunStatus, StoreError, Takeover};
use super::ThreadRec;
use crate::clock::Millis;
use crate::store::FencingToken;

/// A thread's lease. `holder` is the run whose episode holds it; `worker`
/// the process driving that episode.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct Lease {
    pub(super) holder: Option<String>,
    worker: Option<String>,
    pub(super) token: FencingToken,
    ttl: Option<Millis>,
    expires: Option<Millis>,
}

impl Lease {
    /// When the holder's lease ended or ends, if it expires at all.
    fn expiry(&self) -> Option<Millis> {
        self.holder.as_ref().and(self.expires)
    }
}

impl ThreadRec {
    /// Refuses a write under `token` unless it is the current lease token
    /// (K2). A holder whose lease expired but that nobody took over still
    /// has the newest token: its write lands, and renews the lease.
    pub(in crate::store) fn fenced(&self, token: Option<FencingToken>) -> Result<(), StoreError> {
        match token {
            Some(given) if given != self.lease.token => Err(StoreError::StaleLease {
                given,
                current: self.lease.token,
            }),
            _ => Ok(()),
        }
    }

    /// A landed write under the current token extends the lease.
    pub(in crate::store) fn touch(&mut self, now: Millis) {
        if self.lease.holder.is_some() {
            self.lease.expires = self.lease.ttl.map(|t| now + t);
        }
    }

    /// Takes the lease of the run to drive (K1, K3, T9): the current run if
    /// it waits and can resume, or runs with no live lease (a takeover);
    /// else nothing while a current run is busy; else the next queued run,
    /// made current. The new token is newer than every token before (K2).
    pub(in crate::store) fn claim(
        &mut self,
        thread: &str,
        worker: &str,
        ttl: Option<Millis>,
        now: Millis,
    ) -> Option<Claimed> {
        let (run, takeover) = match self.current.clone() {
            Some(current) => {
                let takeover = self.takeable(now);
                let r = self.run_mut(&current)?;
                match r.status {
                    RunStatus::Waiting if r.resumable() => (current, None),
                    RunStatus::Running if takeover.is_some() => (current, takeover),
                    _ => return None,
                }
            }
            None => {
                let run = self.queue.pop_front()?;
                self.epoch += 1;
                self.current = Some(run.clone());
                self.enter_run(&run);
                (run, None)
            }
        };
        self.lease = Lease {
            holder: Some(run.clone()),
            worker: Some(worker.to_string()),
            token: self.lease.token.next(),
            ttl,
            expires: ttl.map(|t| now + t),
        };
        let token = self.lease.token;
        self.version += 1;
        let version = self.version;
        let r = self.run_mut(&run)?;
        let resumed = r.status != RunStatus::Queued;
        r.status = RunStatus::Running;
        r.episodes += 1;
        Some(Claimed {
            version,
            thread: thread.into(),
            run: run.into(),
            resumed,
            cancel_requested: r.cancel_requested,
            token,
            episode: r.episodes,
            steps: r.steps,
            takeover,
        })
    }

    /// Whether a running current run can be taken: nobody holds its lease,
    /// or the holder's lease has expired by `now`.
    fn takeable(&self, now: Millis) -> Option<Takeover> {
        let from = self.lease.worker.clone();
        match self.lease.expiry() {
            _ if self.lease.holder.is_none() => Some(Takeover {
                from,
                token: self.lease.token,
                expired_at: now,
            }),
            Some(at) if now >= at => Some(Takeover {
                from,
                token: self.lease.token,
                expired_at: at,
            }),
            _ => None,
        }
    }

    /// Moves `run`'s lease to a new episode under a newer token, without a
    /// moment in which another worker could take it. One commit (H1): the
    /// token, the episode and the thread's new version.
    pub(in crate::store) fn next_episode(
        &mut self,
        run: &str,
        token: FencingToken,
        now: Millis,
    ) -> Result<(FencingToken, u32, u64), StoreError> {
        let episodes = self
            .runs
            .iter()
            .find(|r| r.id == run)
            .map(|r| r.episodes + 1)
            .ok_or_else(|| StoreError::LeaseNotHeld {
                run: run.into(),
                token,
            })?;
        self.lease.token = self.lease.token.next();
        self.touch(now);
        if let Some(r) = self.run_mut(run) {
            r.episodes = episodes;
        }
        self.version += 1;
        Ok((self.lease.token, episodes, self.version))
    }

    /// Extends `run`'s lease: a lease revision, one commit (H1). Answers
    /// whether a cancel was asked for, so a holder in another process hears
    /// of it (K6), and the thread's new version.
    pub(in crate::store) fn renew(&mut self, run: &str, now: Millis) -> (bool, u64) {
        self.touch(now);
        self.version += 1;
        let cancel = self.runs.iter().any(|r| r.id == run && r.cancel_requested);
        (cancel, self.version)
    }

    /// Checks that `token` is current and `run` holds the lease.
    pub(in crate::store) fn holding(
        &self,
        run: &str,
        token: FencingToken,
    ) -> Result<(), StoreError> {
        self.fenced(Some(token))?;
        match self.lease.holder.as_deref() == Some(run) {
            true => Ok(()),
            false => Err(StoreError::LeaseNotHeld {
                run: run.into(),
                token,
            }),
        }
    }

    /// The thread's incarnation ends (SPEC H5): nobody holds the lease and
    /// every token handed out so far is stale.
    pub(in crate::store) fn retire_lease(&mut self) {
        self.lease.holder = None;
        self.lease.worker = None;
        self.lease.expires = None;
        self.lease.token = self.lease.token.next();
    }

    /// Ends `run`'s episode: it no longer holds the lease.
    pub(crate) fn release_lease(&mut self, run: &str) {
        if self.lease.holder.as_deref() == Some(run) {
            self.lease.holder = None;
            self.lease.expires = None;
        }
    }
}

/// The record's operations with the token check the engine makes before
/// them (SPEC K2), for the record's own tests.
#[cfg(test)]
impl ThreadRec {
    pub(crate) fn append_t(
        &mut self,
        token: Option<FencingToken>,
        messages: impl IntoIterator<Item = crate::message::NewMessage>,
    ) -> Result<crate::store::record::Appended, StoreError> {
        self.fenced(token)?;
        Ok(self.append(messages))
    }

    pub(crate) fn next_episode_t(
        &mut self,
        run: &str,
        token: FencingToken,
        now: Millis,
    ) -> Result<(FencingToken, u32, u64), StoreError> {
        self.holding(run, token)?;
        self.next_episode(run, token, now)
    }

    pub(crate) fn renew_t(
        &mut self,
        run: &str,
        token: FencingToken,
        now: Millis,
    ) -> Result<(bool, u64), StoreError> {
        self.holding(run, token)?;
        Ok(self.renew(run, now))
    }

    pub(crate) fn wait_t(
        &mut self,
        run: &str,
        token: FencingToken,
        calls: Vec<crate::store::waiting::WaitingCall>,
    ) -> Result<Option<u64>, StoreError> {
        self.fenced(Some(token))?;
        Ok(self.wait(run, calls))
    }

    pub(crate) fn await_calls_t(
        &mut self,
        run: &str,
        token: FencingToken,
        calls: Vec<crate::store::waiting::WaitingCall>,
    ) -> Result<u64, StoreError> {
        self.fenced(Some(token))?;
        Ok(self.await_calls(run, calls))
    }

    pub(crate) fn set_run_metadata_t(
        &mut self,
        run: &str,
        token: FencingToken,
        value: serde_json::Value,
    ) -> Result<u64, StoreError> {
        self.fenced(Some(token))?;
        Ok(self.set_run_metadata(run, value))
    }

    pub(crate) fn commit_resumed_t(
        &mut self,
        run: &str,
        token: FencingToken,
        messages: Vec<crate::message::NewMessage>,
    ) -> Result<crate::store::record::Appended, StoreError> {
        self.fenced(Some(token))?;
        Ok(self.commit_resumed(run, messages, None))
    }
}
