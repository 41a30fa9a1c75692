//! The virtual clock: Tokio's paused time, measured from the scenario
//! start; or, among several workers, turmoil's simulated time, which every
//! host shares.

use std::time::Duration;

use pai_runtime::{Clock, HookFuture, Millis};

#[derive(Debug)]
pub struct VirtualClock {
    /// `None`: turmoil's time since the simulation began.
    start: Option<tokio::time::Instant>,
}

impl VirtualClock {
    /// Must be created inside the paused runtime.
    pub fn new() -> VirtualClock {
        VirtualClock {
            start: Some(tokio::time::Instant::now()),
        }
    }

    /// The clock of a turmoil simulation: readable from any host or client
    /// (each host's own Tokio time starts when the host does; this does not).
    pub fn turmoil() -> VirtualClock {
        VirtualClock { start: None }
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Millis {
        let elapsed = match self.start {
            Some(start) => start.elapsed(),
            None => turmoil::sim_elapsed().unwrap_or_default(),
        };
        u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
    }

    fn sleep(&self, ms: Millis) -> HookFuture<'static, ()> {
        HookFuture::new(tokio::time::sleep(Duration::from_millis(ms)))
    }
}
