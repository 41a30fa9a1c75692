//! pai-store-check: a conformance suite for any implementation of
//! [`pai_runtime::Store`].
//!
//! It generates random sequences of store requests over a few threads
//! (user messages and steers, claims with a ttl, renewals, a run's appends
//! and metadata under its token, stale writes under old tokens, the clock
//! moved past a lease's expiry and takeovers by another worker, waits and
//! answers, finishes, cancels, mutations with expectations, regenerations,
//! deletes and re-creations), sends each through the store's
//! [`call`](pai_runtime::Store::call), and checks every reply, and every
//! thread as `Inspect` returns it after every request, against a reference
//! model written from the SPEC (rules H1–H5 and K1–K4, K6, with T7, T9 and
//! A4 where the store records them). A failing case is shrunk to a minimal
//! sequence, and the [`Failure`] names the rule, the step that diverged,
//! what was expected and what the store did.
//!
//! The store's futures may be pending (a store over a socket): each case
//! runs on its own Tokio current-thread runtime with I/O and timers
//! enabled, and `make` is called inside it. Lease expiry is read from the
//! suite's [`ManualClock`], which `make` receives: pass it to the store.
//!
//! ```
//! use std::sync::Arc;
//! use pai_runtime::{Clock, MemoryStore, Store, store::{StoreFuture, StoreRequest}};
//! use pai_store_check::{Config, check_store};
//!
//! /// A user's store: here one that forwards to MemoryStore.
//! struct MyStore(MemoryStore);
//!
//! impl Store for MyStore {
//!     fn call(&self, request: StoreRequest) -> StoreFuture<'_> {
//!         self.0.call(request)
//!     }
//! }
//!
//! let config = Config { cases: 8, ..Config::default() };
//! let made = |clock: Arc<dyn Clock>| MyStore(MemoryStore::new(Some(clock)));
//! if let Err(failure) = check_store(made, &config) {
//!     panic!("{failure}");
//! }
//! ```

mod check;
mod clock;
mod compare;
mod failure;
mod model;
mod ops;
mod run;

use std::sync::Arc;
use std::time::Duration;

use pai_runtime::{Clock, Store};
use proptest::test_runner::{FileFailurePersistence, TestCaseError, TestError, TestRunner};

pub use clock::ManualClock;
pub use failure::Failure;
pub use ops::{
    AnswerPick, CancelPick, EndPick, ExpectPick, IncarnationPick, Op, ReadPick, RunPick, TokenPick,
    WritePick, WriterPick,
};

/// How many cases a run of the suite tries, and how long they are.
#[derive(Debug, Clone)]
pub struct Config {
    /// Generated cases (default 64, or `PAI_STORE_CHECK_CASES`).
    pub cases: u32,
    /// Operations per case, at most (default 40, or `PAI_STORE_CHECK_OPS`).
    pub max_ops: usize,
    /// How long one request may take before the suite reports the store
    /// did not answer (default 10 s). This is the only real-time timer;
    /// lease expiry is on the [`ManualClock`].
    pub call_timeout: Duration,
    /// A file where proptest keeps the seeds of failing cases and replays
    /// them first on the next run (proptest's failure persistence).
    pub regressions: Option<&'static str>,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

impl Default for Config {
    fn default() -> Config {
        Config {
            cases: env_or("PAI_STORE_CHECK_CASES", 64),
            max_ops: env_or("PAI_STORE_CHECK_OPS", 40),
            call_timeout: Duration::from_secs(10),
            regressions: None,
        }
    }
}

/// Runs the suite against stores built by `make`, one fresh, empty store
/// per case (and per shrinking attempt). `make` receives the clock the
/// store must read lease expiry from.
pub fn check_store<S, F>(make: F, config: &Config) -> Result<(), Box<Failure>>
where
    S: Store,
    F: Fn(Arc<dyn Clock>) -> S,
{
    let mut runner = TestRunner::new(proptest::test_runner::Config {
        cases: config.cases,
        failure_persistence: config
            .regressions
            .map(|p| Box::new(FileFailurePersistence::Direct(p)) as Box<_>),
        ..proptest::test_runner::Config::default()
    });
    let timeout = config.call_timeout;
    let result = runner.run(&ops::ops(config.max_ops), |ops| {
        run::run_case(&make, &ops, timeout).map_err(|f| TestCaseError::fail(f.to_string()))
    });
    const FLAKY: &str = "this case passed when run again: the store answers differently";
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(reason, ops)) => match run::run_case(&make, &ops, timeout) {
            Err(failure) => Err(failure),
            Ok(()) => Err(Box::new(Failure {
                flaky: Some(FLAKY.into()),
                ..suite_failure(reason.message().to_string(), ops)
            })),
        },
        Err(TestError::Abort(reason)) => {
            let report = reason.message().to_string();
            Err(Box::new(suite_failure(report, Vec::new())))
        }
    }
}

fn suite_failure(report: String, ops: Vec<ops::Op>) -> Failure {
    Failure {
        rule: "-",
        what: "the suite".into(),
        step: 0,
        expected: "a case that fails the same way each time".into(),
        got: report,
        trace: Vec::new(),
        ops,
        flaky: None,
    }
}

/// [`check_store`], panicking with the failure's report.
pub fn assert_store<S, F>(make: F, config: &Config)
where
    S: Store,
    F: Fn(Arc<dyn Clock>) -> S,
{
    if let Err(failure) = check_store(make, config) {
        panic!("{failure}");
    }
}

/// Runs one given sequence of operations (a regression, or the `ops` of a
/// [`Failure`]) against a fresh store.
pub fn replay<S, F>(make: F, ops: &[Op], config: &Config) -> Result<(), Box<Failure>>
where
    S: Store,
    F: Fn(Arc<dyn Clock>) -> S,
{
    run::run_case(&make, ops, config.call_timeout)
}

#[cfg(test)]
mod coverage;
