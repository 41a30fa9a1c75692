//! The virtual clock: Tokio's paused time, measured from the scenario start.

use std::time::Duration;

use pai_runtime::{Clock, HookFuture, Millis};

#[derive(Debug)]
pub struct VirtualClock {
    start: tokio::time::Instant,
}

impl VirtualClock {
    /// Must be created inside the paused runtime.
    pub fn new() -> VirtualClock {
        VirtualClock {
            start: tokio::time::Instant::now(),
        }
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Millis {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn sleep(&self, ms: Millis) -> HookFuture<'static, ()> {
        HookFuture::new(tokio::time::sleep(Duration::from_millis(ms)))
    }
}
