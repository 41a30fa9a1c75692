//! The run's stop signal: set by a client's cancel, it wins over attempt
//! deadlines and ends running tools (SPEC P6, T8).

use tokio::sync::watch;

use crate::future::HookFuture;

#[derive(Debug)]
pub(crate) struct StopSignal {
    tx: watch::Sender<bool>,
}

impl StopSignal {
    pub(crate) fn new() -> StopSignal {
        StopSignal {
            tx: watch::channel(false).0,
        }
    }

    pub(crate) fn trigger(&self) {
        self.tx.send_replace(true);
    }

    pub(crate) fn is_set(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once the signal is set.
    pub(crate) fn wait(&self) -> HookFuture<'static, ()> {
        let mut rx = self.tx.subscribe();
        HookFuture::new(async move {
            // The sender lives as long as the run; if it is gone, so is the run.
            let _ = rx.wait_for(|set| *set).await;
        })
    }
}
