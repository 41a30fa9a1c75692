//! The store host's side of the change feed (`feed`): it accepts a
//! watcher's subscription, applies its `Open`, and pushes what the store
//! tells the thread's subscribers until the feed closes.

use std::sync::Arc;

use pai_runtime::{
    StoreError,
    event::LiveEvent,
    store::{ClientOp, Op, StoreReply, StoreRequest},
};
use tokio::sync::mpsc;
use turmoil::net::{TcpListener, TcpStream};

use super::feed::{FEED_PORT, Subscribe};
use super::store_host::StoreHost;
use super::wire::{read_frame, write_frame};

/// The store host's feed listener; bound before the store says it listens.
pub async fn listen() -> std::io::Result<TcpListener> {
    TcpListener::bind(("0.0.0.0", FEED_PORT)).await
}

/// Accepts feed subscriptions until the simulation ends.
pub async fn serve(listener: TcpListener, host: Arc<StoreHost>) {
    while let Ok((stream, peer)) = listener.accept().await {
        let from = turmoil::reverse_lookup(peer.ip()).unwrap_or_else(|| peer.ip().to_string());
        tokio::task::spawn_local(connection(stream, from, host.clone()));
    }
}

/// One subscription: the `Open` answered, then every event pushed, until
/// the store closes the feed (the connection then ends).
async fn connection(mut stream: TcpStream, from: String, host: Arc<StoreHost>) {
    let Ok(frame) = read_frame(&mut stream).await else {
        return;
    };
    let (reply, rx) = match serde_json::from_slice::<Subscribe>(&frame) {
        Ok(Subscribe {
            name,
            open:
                open @ StoreRequest::On {
                    op:
                        Op::Client {
                            op: ClientOp::Open, ..
                        },
                    ..
                },
        }) => host.subscribe(&from, &name, open),
        Ok(_) => (
            Err(StoreError::Protocol("a feed opens with `open`".into())),
            None,
        ),
        Err(e) => (
            Err(StoreError::Protocol(format!("bad subscription: {e}"))),
            None,
        ),
    };
    let Ok(bytes) = serde_json::to_vec(&reply) else {
        return;
    };
    if write_frame(&mut stream, &bytes).await.is_err() {
        return;
    }
    let Some(mut rx) = rx else { return };
    // Bounded: the store drops the sender when the thread is deleted, and
    // the simulation ends the task otherwise.
    while let Some(event) = rx.recv().await {
        let Ok(bytes) = serde_json::to_vec(&event) else {
            return;
        };
        if write_frame(&mut stream, &bytes).await.is_err() {
            return;
        }
    }
}

impl StoreHost {
    /// Applies a subscription's `Open` and, if it is answered, subscribes
    /// in the same step (nothing commits in between).
    fn subscribe(
        &self,
        from: &str,
        name: &str,
        open: StoreRequest,
    ) -> (
        Result<StoreReply, StoreError>,
        Option<mpsc::UnboundedReceiver<LiveEvent>>,
    ) {
        let thread = open.thread().map(str::to_string);
        let reply = self.apply(from, open);
        match (&reply, thread) {
            (Ok(_), Some(thread)) => {
                let rx = self.feeds().subscribe(name, &thread);
                (reply, Some(rx))
            }
            _ => (reply, None),
        }
    }
}
