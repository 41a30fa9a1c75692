//! The clock the suite controls: stores read lease expiry from it, and
//! only the suite moves it (SPEC K2, K3: expiry is on the store's clock).

use std::sync::atomic::{AtomicU64, Ordering};

use pai_runtime::{Clock, HookFuture, Millis};

/// A clock that stands still until told to move. `sleep` never resolves:
/// the suite never sleeps, and a store that waits on its clock to answer a
/// request would hang (the suite's call timeout reports it).
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
}

impl ManualClock {
    /// A clock reading `at`.
    pub fn new(at: Millis) -> ManualClock {
        ManualClock {
            now: AtomicU64::new(at),
        }
    }

    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: Millis) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock to `at` (never backwards: a later time wins).
    pub fn set(&self, at: Millis) {
        self.now.fetch_max(at, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Millis {
        self.now.load(Ordering::SeqCst)
    }

    fn sleep(&self, _ms: Millis) -> HookFuture<'static, ()> {
        HookFuture::new(std::future::pending())
    }
}
