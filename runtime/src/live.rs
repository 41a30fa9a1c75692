//! Live watchers (SPEC S2, H1): what a client sees in real time. A watcher
//! receives the canonical stream of every step on its thread, shaped by its
//! own live transforms, and one invalidation per commit in version order.
//! Nothing here changes stored state.

use std::fmt;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::clock::Millis;
use crate::model::StreamPart;
use crate::transform::{Pipeline, StreamTransform};

/// One thing a watcher sees.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveEvent {
    /// A released part of a step's stream, after the watcher's live transforms.
    Part {
        at: Millis,
        run_id: String,
        step: u32,
        part: StreamPart,
    },
    /// The step's stream was aborted; parts already released stay released (S4).
    Aborted {
        at: Millis,
        run_id: String,
        step: u32,
        reason: String,
    },
    /// The thread changed: refresh to see version `version` (H1).
    Committed { at: Millis, version: u64 },
}

/// A client's live view of one thread.
#[derive(Debug)]
pub struct Watch {
    rx: mpsc::UnboundedReceiver<LiveEvent>,
}

impl Watch {
    /// The next event, waiting for it.
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

/// Tells every watcher about a commit.
pub(crate) fn committed(watchers: &mut Vec<WatcherSlot>, at: Millis, version: u64) {
    watchers.retain(|w| {
        lock(w)
            .tx
            .send(LiveEvent::Committed { at, version })
            .is_ok()
    });
}

/// The watchers of one step's stream; empty (and free) when nobody watches.
pub(crate) struct LiveStep<'a> {
    pub(crate) watchers: Vec<WatcherSlot>,
    pub(crate) run_id: &'a str,
    pub(crate) step: u32,
}

impl LiveStep<'_> {
    /// Releases one canonical part to every watcher.
    pub(crate) fn send(&self, at: Millis, part: &StreamPart) {
        for w in &self.watchers {
            let mut w = lock(w);
            let Watcher { tx, live } = &mut *w;
            // Live transforms shape presentation only; they cannot abort the run.
            let _ = live.push(part.clone(), &mut |p| {
                let _ = tx.send(LiveEvent::Part {
                    at,
                    run_id: self.run_id.to_string(),
                    step: self.step,
                    part: p,
                });
            });
        }
    }

    /// Ends the step's live stream: flushes held-back live text, or, after an
    /// abort, drops it and says so.
    pub(crate) fn end(&self, at: Millis, aborted: Option<&str>) {
        for w in &self.watchers {
            let mut w = lock(w);
            let Watcher { tx, live } = &mut *w;
            match aborted {
                None => {
                    let _ = live.finish(&mut |p| {
                        let _ = tx.send(LiveEvent::Part {
                            at,
                            run_id: self.run_id.to_string(),
                            step: self.step,
                            part: p,
                        });
                    });
                }
                Some(reason) => {
                    live.reset();
                    let _ = tx.send(LiveEvent::Aborted {
                        at,
                        run_id: self.run_id.to_string(),
                        step: self.step,
                        reason: reason.to_string(),
                    });
                }
            }
        }
    }
}
