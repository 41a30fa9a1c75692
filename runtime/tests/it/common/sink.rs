//! An event sink that keeps every event, with small queries.

use std::sync::Mutex;

use pai_runtime::{Event, EventSink, event::EventKind, store::RunStatus};

/// Keeps every event it is given, in order.
#[derive(Default)]
pub struct RecordingSink(Mutex<Vec<Event>>);

impl EventSink for RecordingSink {
    fn record(&self, e: Event) {
        self.0.lock().unwrap().push(e);
    }
}

impl RecordingSink {
    /// Every event so far.
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }

    /// Every event's run and kind.
    pub fn kinds(&self) -> Vec<(String, EventKind)> {
        let events = self.0.lock().unwrap();
        let kinds = events
            .iter()
            .map(|e| (e.run_id.to_string(), e.kind.clone()));
        kinds.collect()
    }

    /// What `f` picks out of every event's kind, in order.
    pub fn pick<T>(&self, f: impl FnMut(EventKind) -> Option<T>) -> Vec<T> {
        self.kinds()
            .into_iter()
            .map(|(_, k)| k)
            .filter_map(f)
            .collect()
    }

    /// The kinds of `run`'s events.
    pub fn of(&self, run: &str) -> Vec<EventKind> {
        let kinds = self.kinds().into_iter().filter(|(r, _)| r == run);
        kinds.map(|(_, k)| k).collect()
    }

    /// `Ended` events of `run`: (status, reason).
    pub fn ends(&self, run: &str) -> Vec<(RunStatus, Option<String>)> {
        let ends = self.of(run).into_iter().filter_map(|k| match k {
            EventKind::Ended { status, reason, .. } => Some((status, reason)),
            _ => None,
        });
        ends.collect()
    }
}
