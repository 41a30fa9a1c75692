//! A tap on the store of a one-process run (SPEC H3, H4). It hands every
//! request to the in-memory store unchanged and records, on the server
//! side, what each expectation was compared against (the version and the
//! private metadata the thread held when the store took the request) and
//! every metadata value a commit wrote. It only records; oracles judge.
//!
//! One planted store bug lives here: `ignore_expectations` (SPEC D5) hands
//! the store every mutation as if it expected nothing.

use std::sync::{Arc, Mutex};

use pai_runtime::{
    Store,
    store::{
        AdminOp, AdminReply, Expect, FacadeOp, FacadeReply, Op, Refusal, StoreFuture, StoreReply,
        StoreRequest, Write,
    },
};
use serde_json::{Map, Value};

use super::commits::{CommitRecord, reported};
use super::recorder::Recorder;
use super::sim_store::SimStore;
use crate::book::StoreWatch;

/// What the thread held when the store took a request with an expectation.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub version: u64,
    /// The incarnation it was (SPEC H5: an expectation of another conflicts).
    pub incarnation: u64,
    pub private: Map<String, Value>,
}

/// What the store answered a request with an expectation.
#[derive(Debug, Clone, PartialEq)]
pub enum TapOutcome {
    /// It committed; the thread's version after it.
    Committed { version: u64 },
    /// It refused on the expectation (SPEC H3), reporting this version.
    Conflict {
        version: u64,
        incarnation: u64,
        private_changed: bool,
    },
    /// Anything else (another refusal, an error): not an H3 matter.
    Other,
}

/// One mutation or regeneration that carried an expectation.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectationRecord {
    pub thread: String,
    /// `mutate` or `regenerate`.
    pub op: &'static str,
    /// How many runtime events had been recorded when the store took it.
    pub after_event: usize,
    pub expect: Expect,
    /// `None`: the store has no such thread.
    pub found: Option<Found>,
    pub outcome: TapOutcome,
}

/// A metadata value a committed request wrote (`None`: removed).
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenValue {
    pub thread: String,
    pub private: bool,
    pub key: String,
    pub value: Option<Value>,
}

/// Everything the tap saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TapLog {
    pub expectations: Vec<ExpectationRecord>,
    pub written: Vec<WrittenValue>,
    /// Every commit the store reported, in the order it answered (H1).
    pub commits: Vec<CommitRecord>,
}

/// The tapped store.
#[derive(Debug)]
pub struct StoreTap {
    inner: SimStore,
    log: Mutex<TapLog>,
    recorder: Arc<Recorder>,
    ignore_expectations: bool,
    /// What the world reads of the store as it goes (admissions, milestones).
    watch: Arc<StoreWatch>,
}

impl StoreTap {
    /// A tap on `inner` (a fresh store whose leases never expire: what a
    /// one-process runtime makes for itself).
    pub fn new(
        inner: SimStore,
        (recorder, watch): (Arc<Recorder>, Arc<StoreWatch>),
        ignore_expectations: bool,
    ) -> StoreTap {
        StoreTap {
            inner,
            log: Mutex::new(TapLog::default()),
            recorder,
            ignore_expectations,
            watch,
        }
    }

    pub fn take(&self) -> TapLog {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Applies one request, recording around it what the oracles need.
    fn apply(&self, request: StoreRequest) -> Result<StoreReply, pai_runtime::StoreError> {
        let name = request.name();
        let thread = request.thread().map(str::to_string);
        let pending = StoreWatch::ask(&request);
        let reply = self.expecting(request);
        self.watch.note(pending, &reply);
        if let Some((thread, version)) = reported(thread.as_deref(), &reply) {
            let record = CommitRecord {
                from: "local".to_string(),
                request: name,
                thread,
                version,
                after_event: self.recorder.len(),
            };
            let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
            log.commits.push(record);
        }
        reply
    }

    /// Applies one request, recording an expectation's comparison.
    fn expecting(&self, mut request: StoreRequest) -> Result<StoreReply, pai_runtime::StoreError> {
        let Some((thread, op, expect, writes)) = expectation_of(&mut request) else {
            return self.inner.apply(request);
        };
        let thread = thread.to_string();
        let original = expect.clone();
        let writes = writes.to_vec();
        if self.ignore_expectations {
            *expect = Expect::Nothing;
        }
        // Only an expectation needs what the thread held (no copy otherwise).
        let expects = original != Expect::Nothing;
        let found = expects.then(|| self.found(&thread)).flatten();
        let reply = self.inner.apply(request);
        let outcome = outcome_of(&reply);
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if let TapOutcome::Committed { .. } = outcome {
            log.written.extend(written(&thread, &writes));
        }
        if expects {
            log.expectations.push(ExpectationRecord {
                thread,
                op,
                after_event: self.recorder.len(),
                expect: original,
                found,
                outcome,
            });
        }
        reply
    }

    fn found(&self, thread: &str) -> Option<Found> {
        let inspect = StoreRequest::admin(thread, AdminOp::Inspect);
        match self.inner.apply(inspect) {
            Ok(StoreReply::Admin(AdminReply::Thread(Some(t)))) => Some(Found {
                version: t.version,
                incarnation: t.incarnation,
                private: t.private_metadata,
            }),
            _ => None,
        }
    }
}

impl Store for StoreTap {
    fn call(&self, request: StoreRequest) -> StoreFuture<'_> {
        pai_runtime::HookFuture::ready(self.apply(request))
    }
}

type Expecting<'r> = (&'r str, &'static str, &'r mut Expect, &'r [Write]);

/// The thread, operation, expectation and writes of a request that can
/// carry an expectation.
fn expectation_of(request: &mut StoreRequest) -> Option<Expecting<'_>> {
    let StoreRequest::On {
        thread,
        op: Op::Facade(op),
    } = request
    else {
        return None;
    };
    match op {
        FacadeOp::Mutate { expect, writes, .. } => Some((thread, "mutate", expect, writes)),
        FacadeOp::Regenerate { expect, writes, .. } => Some((thread, "regenerate", expect, writes)),
    }
}

fn outcome_of(reply: &Result<StoreReply, pai_runtime::StoreError>) -> TapOutcome {
    let refusal = match reply {
        Ok(StoreReply::Facade(FacadeReply::Mutated(Ok(m)))) => {
            return TapOutcome::Committed { version: m.version };
        }
        Ok(StoreReply::Facade(FacadeReply::Regenerated(Ok(r)))) => {
            return TapOutcome::Committed { version: r.version };
        }
        Ok(StoreReply::Facade(FacadeReply::Mutated(Err(r)) | FacadeReply::Regenerated(Err(r)))) => {
            r
        }
        _ => return TapOutcome::Other,
    };
    match refusal {
        Refusal::Conflict {
            version,
            incarnation,
            private_changed,
        } => TapOutcome::Conflict {
            version: *version,
            incarnation: *incarnation,
            private_changed: *private_changed,
        },
        _ => TapOutcome::Other,
    }
}

fn written(thread: &str, writes: &[Write]) -> Vec<WrittenValue> {
    let value = |private: bool, key: &String, value: &Option<Value>| WrittenValue {
        thread: thread.to_string(),
        private,
        key: key.clone(),
        value: value.clone(),
    };
    writes
        .iter()
        .filter_map(|w| match w {
            Write::Metadata { key, value: v } => Some(value(false, key, v)),
            Write::PrivateMetadata { key, value: v } => Some(value(true, key, v)),
            _ => None,
        })
        .collect()
}

/// A thread as its owner's client read it (SPEC H4).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientView {
    pub owner: String,
    pub state: pai_runtime::ThreadState,
}
