//! A run's lease as its driver holds it (SPEC K2, K3): the token of the
//! current episode, renewal while the episode works, and what happens when
//! the lease is lost: the driver stops at its next write.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::event::EventKind;
use crate::shared::Shared;
use crate::stop::StopSignal;
use crate::store::FencingToken;
use crate::store::{StoreError, WaitingCall};

/// The lease a driver holds on one run.
#[derive(Debug, Default)]
pub(super) struct RunLease {
    token: AtomicU64,
    /// Why the lease is lost, once it is.
    lost: Mutex<Option<String>>,
    /// The episode gave the lease up itself (a wait): nothing to renew,
    /// and a renewal refused since is no loss.
    released: AtomicBool,
    /// The calls the store recorded the run waiting on, with the wait,
    /// and the thread's version after it.
    waited: Mutex<(Vec<WaitingCall>, u64)>,
    /// The thread's incarnation was deleted under the run (SPEC H5).
    deleted: AtomicBool,
    /// The driver heard that a client asked to cancel the run (SPEC K6).
    cancel_heard: AtomicBool,
}

impl RunLease {
    pub(super) fn new(token: FencingToken) -> RunLease {
        RunLease {
            token: AtomicU64::new(token.get()),
            lost: Mutex::new(None),
            released: AtomicBool::new(false),
            waited: Mutex::new((Vec::new(), 0)),
            deleted: AtomicBool::new(false),
            cancel_heard: AtomicBool::new(false),
        }
    }

    /// The claim itself said a cancel reached the run: nothing to log
    /// when a later answer says so again.
    pub(super) fn cancel_known(&self) {
        self.cancel_heard.store(true, Ordering::Relaxed);
    }

    pub(super) fn token(&self) -> FencingToken {
        FencingToken::new(self.token.load(Ordering::Relaxed))
    }

    pub(super) fn set_token(&self, token: FencingToken) {
        self.token.store(token.get(), Ordering::Relaxed);
        self.released.store(false, Ordering::Relaxed);
    }

    /// The store recorded that the episode gave its lease up to wait on
    /// `calls` (T7) in the commit that made `version`: whatever happens
    /// next, the episode ends waiting.
    pub(super) fn release(&self, calls: Vec<WaitingCall>, version: u64) {
        self.released.store(true, Ordering::Relaxed);
        *self.waited.lock().unwrap_or_else(|e| e.into_inner()) = (calls, version);
    }

    /// The calls the wait recorded, and its version.
    pub(super) fn take_waited(&self) -> (Vec<WaitingCall>, u64) {
        std::mem::take(&mut *self.waited.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn released(&self) -> bool {
        self.released.load(Ordering::Relaxed)
    }

    /// Records that the lease is lost (the first reason wins); a lease the
    /// episode gave up itself is not lost.
    pub(super) fn lose(&self, why: String) {
        if self.released() {
            return;
        }
        let mut lost = self.lost.lock().unwrap_or_else(|e| e.into_inner());
        lost.get_or_insert(why);
    }

    /// Whether the run's thread incarnation was deleted (SPEC H5): the
    /// store ended the run, cancelled.
    pub(super) fn deleted(&self) -> bool {
        self.deleted.load(Ordering::Relaxed)
    }

    /// Why the lease is lost, if it is: the run must not write again (K3).
    pub(super) fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether `e` means the lease is lost (if so, it is recorded), and,
    /// when `e` is the first word that the run's thread incarnation was
    /// deleted (SPEC H5), that it is, with the deleted incarnation when the
    /// refusal names it.
    fn check_learning(&self, e: &StoreError) -> (bool, Option<Option<u64>>) {
        let learned = match e {
            StoreError::Deleted { incarnation, .. } => {
                (!self.deleted.swap(true, Ordering::Relaxed)).then_some(Some(*incarnation))
            }
            // A run's thread that is gone was deleted under it (and not
            // created again): its facade read finds no thread (SPEC H5).
            StoreError::NoThread(_) => {
                (!self.deleted.swap(true, Ordering::Relaxed)).then_some(None)
            }
            _ => None,
        };
        if e.loses_lease() {
            self.lose(e.to_string());
            return (true, learned);
        }
        (false, learned)
    }
}

/// Whether `e` loses `run`'s lease (recorded if so), whose `request` the store refused with `e`;
/// the first refusal that says its thread's incarnation was deleted is
/// logged among workers (`delete_learned`): the moment its worker knows
/// (SPEC H5).
pub(super) fn heard<C>(
    sh: &Shared<C>,
    (thread, run): (&str, &str),
    lease: &RunLease,
    request: &str,
    e: &StoreError,
) -> bool {
    let (lost, learned) = lease.check_learning(e);
    // In one process the delete itself is the moment the run's driver knows.
    let among_workers = sh.worker.lease_ttl.is_some();
    if let Some(incarnation) = learned.filter(|_| among_workers) {
        sh.emit(thread, run, || EventKind::DeleteLearned {
            request: request.to_string(),
            incarnation,
        });
    }
    lost
}

/// The store's answer to the run's `request` told its driver that a
/// client asked to cancel the run (SPEC K6): the run stops (its running
/// tools are cancelled, T8; no model call or tool starts) and ends
/// cancelled, closing what it must under its lease. Among workers the
/// first time is logged (`cancel_learned`): the moment its worker knows.
pub(super) fn hear_cancel<C>(
    sh: &Shared<C>,
    (thread, run): (&str, &str),
    lease: &RunLease,
    stop: &StopSignal,
    request: &str,
) {
    stop.trigger();
    learned_cancel(sh, (thread, run), lease, request);
}

/// Logs, among workers and once per run, that the store's answer to
/// `request` told the run's driver of its cancel (`cancel_learned`).
pub(super) fn learned_cancel<C>(
    sh: &Shared<C>,
    (thread, run): (&str, &str),
    lease: &RunLease,
    request: &str,
) {
    let first = !lease.cancel_heard.swap(true, Ordering::Relaxed);
    // In one process the cancel itself sets the stop signal at once.
    if first && sh.worker.lease_ttl.is_some() {
        sh.emit(thread, run, || EventKind::CancelLearned {
            request: request.to_string(),
        });
    }
}

/// Renews the lease while an episode works (K3), and hears of a cancel
/// asked through another process (K6). Ends when the lease is lost; the
/// episode it runs beside ends it otherwise.
pub(super) async fn renew<C>(
    sh: &Shared<C>,
    thread: &str,
    run: &str,
    lease: &RunLease,
    stop: &StopSignal,
) {
    let Some(ttl) = sh.worker.lease_ttl else {
        return;
    };
    let every = sh.worker.renew_every.unwrap_or(ttl / 3).max(1);
    loop {
        sh.clock.sleep(every).await;
        if lease.released() {
            return;
        }
        let token = lease.token();
        let sent = sh.clock.now();
        match renew_once(sh, thread, run, token).await {
            // An answer that took a whole lease to come proves nothing.
            Ok(_) if sh.clock.now() >= sent + ttl => {
                lease.lose("the lease's renewal was answered too late".to_string());
                return;
            }
            Ok(cancel) => {
                if cancel {
                    hear_cancel(sh, (thread, run), lease, stop, "renew");
                }
            }
            Err(e) if heard(sh, (thread, run), lease, "renew", &e) => {
                // A deleted incarnation (H5): its running tools are
                // cancelled now, as a cancel's would be (T8).
                if lease.deleted() {
                    stop.trigger();
                }
                return;
            }
            Err(_) => {}
        }
    }
}

/// One renewal of `run`'s lease under `token` (K3): a lease revision, one
/// commit the log records (H1). Whether a cancel was asked for (K6).
pub(super) async fn renew_once<C>(
    sh: &Shared<C>,
    thread: &str,
    run: &str,
    token: FencingToken,
) -> Result<bool, crate::store::StoreError> {
    let (cancel, version) = sh.store.renew(thread, run, token).await?;
    sh.emit(thread, run, || EventKind::LeaseRenewed { token, version });
    Ok(cancel)
}
