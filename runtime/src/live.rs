//! Live watchers (SPEC S2, H1): what a client sees in real time. A watcher
//! receives the canonical stream of every step on its thread, shaped by its
//! own live transforms, one invalidation per commit in version order, and
//! the end of every run. Nothing here changes stored state.

use std::fmt;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::clock::Millis;
use crate::id::RunId;
use crate::message::Outcome;
use crate::model::StreamPart;
use crate::store::RunStatus;
use crate::store::WaitingCall;
use crate::stream::{Pipeline, StreamTransform};

/// One thing a watcher sees. Every variant but `Part` is plain data that a
/// store-side change feed can carry between processes (serde); a stream
/// part lives only in the process that streams it, so serializing one is
/// an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LiveEvent {
    /// A released part of a step's stream, after the watcher's live transforms.
    #[serde(skip)]
    Part {
        /// When it was released, on the runtime's clock (milliseconds).
        at: Millis,
        /// The run streaming.
        run_id: RunId,
        /// The step, within the run, from 0.
        step: u32,
        /// The part, as the watcher's transforms left it.
        part: StreamPart,
    },
    /// The step's stream was aborted; parts already released stay released (S4).
    Aborted {
        /// When the abort happened, on the runtime's clock (milliseconds).
        at: Millis,
        /// The run whose step was aborted.
        run_id: RunId,
        /// The step, within the run, from 0.
        step: u32,
        /// Why, as the aborting stage gave it.
        reason: String,
    },
    /// The thread changed: refresh to see version `version` (H1).
    Committed {
        /// When the watcher was told, on the runtime's clock (milliseconds).
        at: Millis,
        /// The thread's version after the commit: read the thread to see it.
        version: u64,
    },
    /// A run waits for a client to answer these calls (SPEC T7): a client
    /// shows them (approve, deny, run a client tool) and answers.
    RunWaiting {
        /// When the run began to wait, on the runtime's clock (milliseconds).
        at: Millis,
        /// The waiting run.
        run_id: RunId,
        /// The calls waiting for an answer, in call order.
        calls: Vec<WaitingCall>,
    },
    /// A run ended (a run's status is not a commit, so watchers are told here).
    RunEnded {
        /// When the run ended, on the runtime's clock (milliseconds).
        at: Millis,
        /// The run that ended.
        run_id: RunId,
        /// Its final status: completed, failed or cancelled.
        status: RunStatus,
        /// Its outcome: completed, blocked by a guard, cancelled or failed.
        outcome: Outcome,
        /// Why it failed or was cancelled, when it did.
        reason: Option<String>,
    },
}

/// A client's live view of one thread.
#[derive(Debug)]
pub struct Watch {
    rx: mpsc::UnboundedReceiver<LiveEvent>,
}

impl Watch {
    /// The next event, waiting for it; `None` once the watch is closed.
    pub async fn next(&mut self) -> Option<LiveEvent> {
        self.rx.recv().await
    }

    /// The next event if one is already there.
    pub fn try_next(&mut self) -> Option<LiveEvent> {
        self.rx.try_recv().ok()
    }
}

/// The runtime's side of one watcher.
pub(crate) struct Watcher {
    tx: mpsc::UnboundedSender<LiveEvent>,
    live: Pipeline,
}

impl fmt::Debug for Watcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watcher").field("live", &self.live).finish()
    }
}

pub(crate) type WatcherSlot = Arc<Mutex<Watcher>>;

pub(crate) fn watcher(live: Vec<Box<dyn StreamTransform>>) -> (WatcherSlot, Watch) {
    let (tx, rx) = mpsc::unbounded_channel();
    let slot = Arc::new(Mutex::new(Watcher {
        tx,
        live: Pipeline::new(live),
    }));
    (slot, Watch { rx })
}

fn lock(slot: &WatcherSlot) -> std::sync::MutexGuard<'_, Watcher> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

/// Tells every watcher something; watchers whose client is gone are dropped.
pub(crate) fn tell(watchers: &mut Vec<WatcherSlot>, event: impl Fn() -> LiveEvent) {
    watchers.retain(|w| lock(w).tx.send(event()).is_ok());
}

/// Tells every watcher about a commit.
pub(crate) fn committed(watchers: &mut Vec<WatcherSlot>, at: Millis, version: u64) {
    tell(watchers, || LiveEvent::Committed { at, version });
}

/// Runs a watcher's live stages; a panic there is the watcher's problem, not
/// the run's (S2): the watcher is closed and the run goes on.
fn shielded(slot: &WatcherSlot, f: impl FnOnce(&mut Watcher)) {
    let mut w = lock(slot);
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut w))).is_err() {
        tracing::warn!("a live transform panicked; its watcher is closed");
        // A fresh sender whose receiver is gone: the client's side closes,
        // and the next commit notice drops the watcher.
        w.tx = mpsc::unbounded_channel().0;
    }
}

/// The watchers of one step's stream; empty (and free) when nobody watches.
pub(crate) struct LiveStep<'a> {
    pub(crate) watchers: Vec<WatcherSlot>,
    pub(crate) run_id: &'a str,
    pub(crate) step: u32,
}

impl LiveStep<'_> {
    fn part(&self, at: Millis, part: StreamPart) -> LiveEvent {
        LiveEvent::Part {
            at,
            run_id: self.run_id.into(),
            step: self.step,
            part,
        }
    }

    /// Releases one canonical part to every watcher.
    pub(crate) fn send(&self, at: Millis, part: &StreamPart) {
        for slot in &self.watchers {
            shielded(slot, |w| {
                let Watcher { tx, live } = w;
                // Live transforms shape presentation only; they cannot abort the run.
                let _ = live.push(part.clone(), &mut |p: StreamPart| {
                    let _ = tx.send(self.part(at, p));
                });
            });
        }
    }

    /// Ends the step's live stream: flushes held-back live text, or, after an
    /// abort, drops it and says so.
    pub(crate) fn end(&self, at: Millis, aborted: Option<&str>) {
        for slot in &self.watchers {
            shielded(slot, |w| {
                let Watcher { tx, live } = w;
                match aborted {
                    None => {
                        let _ = live.finish(&mut |p: StreamPart| {
                            let _ = tx.send(self.part(at, p));
                        });
                    }
                    Some(reason) => {
                        live.reset();
                        let _ = tx.send(LiveEvent::Aborted {
                            at,
                            run_id: self.run_id.into(),
                            step: self.step,
                            reason: reason.to_string(),
                        });
                    }
                }
            });
        }
    }
}
