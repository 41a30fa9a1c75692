//! Records every runtime event in order.

use std::sync::Mutex;

use pai_runtime::{Event, EventSink};

use super::lock::lock;

#[derive(Debug, Default)]
pub struct Recorder {
    events: Mutex<Vec<Event>>,
}

impl Recorder {
    /// How many events were recorded so far.
    pub fn len(&self) -> usize {
        lock(&self.events).len()
    }

    /// Reads the events so far (the recorder keeps them).
    pub fn read<T>(&self, f: impl FnOnce(&[Event]) -> T) -> T {
        f(&lock(&self.events))
    }

    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *lock(&self.events))
    }
}

impl EventSink for Recorder {
    fn record(&self, event: Event) {
        lock(&self.events).push(event);
    }
}
