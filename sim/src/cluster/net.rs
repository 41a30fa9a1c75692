//! The store over turmoil's simulated TCP: a request/response protocol of
//! length-prefixed JSON frames, the server loop on the store host, and the
//! client every worker (and the timeline's gateway) reaches the store with.
//! turmoil drops a partitioned link's segments without retransmitting, so
//! the client gives a request up after a timeout and reconnects for the
//! next: a request given up may still land (the store refuses it then if
//! its lease token is stale, SPEC K2).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pai_runtime::{
    HookFuture, Store, StoreError,
    store::{StoreFuture, StoreReply, StoreRequest},
};
use turmoil::net::{TcpListener, TcpStream};

use super::store_host::StoreHost;
use super::triggers::Arrival;
pub use super::wire::STORE_HOST;
use super::wire::{read_frame, write_frame};

const PORT: u16 = 7070;

/// The store host's software: accepts connections and answers each
/// request in arrival order. Runs until the simulation ends. `up` tells
/// the other hosts it listens.
pub async fn serve(host: Arc<StoreHost>, up: Arc<AtomicBool>) -> turmoil::Result {
    let listener = TcpListener::bind(("0.0.0.0", PORT)).await?;
    let feeds = super::feed_server::listen().await?;
    tokio::task::spawn_local(super::feed_server::serve(feeds, host.clone()));
    up.store(true, Ordering::SeqCst);
    loop {
        let (stream, peer) = listener.accept().await?;
        let from = turmoil::reverse_lookup(peer.ip()).unwrap_or_else(|| peer.ip().to_string());
        tokio::task::spawn_local(connection(stream, from, host.clone()));
    }
}

/// Waits, a tick at a time, until the store listens. Hosts may run in a
/// seeded order within a tick, so at the very start another host may run
/// before the store has bound its port; this happens only then (the store
/// is never crashed).
pub async fn store_listening(up: &AtomicBool) {
    // Bounded: the store binds on its first tick.
    while !up.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// One connection: requests in, answers out, until it closes.
async fn connection(mut stream: TcpStream, from: String, host: Arc<StoreHost>) {
    while let Ok(frame) = read_frame(&mut stream).await {
        let reply = match serde_json::from_slice::<StoreRequest>(&frame) {
            Ok(request) => match host.arrive(&from, &request) {
                Arrival::Apply => host.apply(&from, request),
                Arrival::Fired => {
                    let reply = host.apply(&from, request);
                    // The answer leaves only once the fault placed at the
                    // request happened (turmoil would otherwise deliver it
                    // within this very step).
                    while host.fault_pending() {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    reply
                }
                Arrival::Lose => {
                    // A fault placed at this request cut the link just
                    // before it arrived: never applied, never answered (the
                    // sender times out and reconnects).
                    std::future::pending::<()>().await;
                    return;
                }
            },
            Err(e) => Err(StoreError::Protocol(format!("bad request: {e}"))),
        };
        let Ok(bytes) = serde_json::to_vec(&reply) else {
            return;
        };
        if write_frame(&mut stream, &bytes).await.is_err() {
            return;
        }
    }
}

/// A store reached over the simulated network, one request at a time.
pub struct RemoteStore {
    conn: tokio::sync::Mutex<Option<TcpStream>>,
    timeout: Duration,
}

impl std::fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteStore").finish_non_exhaustive()
    }
}

impl RemoteStore {
    pub fn new(timeout_ms: u64) -> RemoteStore {
        RemoteStore {
            conn: tokio::sync::Mutex::new(None),
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    async fn ask(&self, request: StoreRequest) -> Result<StoreReply, StoreError> {
        let bytes =
            serde_json::to_vec(&request).map_err(|e| StoreError::Protocol(e.to_string()))?;
        let mut conn = self.conn.lock().await;
        // The connection is taken out for the exchange and put back only
        // after a whole one: a caller that drops this future mid-request
        // (a renewal beside an episode that ended) drops the connection
        // with it, so no later request reads its answer.
        let held = conn.take();
        let exchange = async move {
            let mut stream = match held {
                Some(s) => s,
                None => TcpStream::connect((STORE_HOST, PORT)).await?,
            };
            write_frame(&mut stream, &bytes).await?;
            let frame = read_frame(&mut stream).await?;
            Ok::<_, std::io::Error>((stream, frame))
        };
        let answer = match tokio::time::timeout(self.timeout, exchange).await {
            Ok(Ok((stream, frame))) => {
                *conn = Some(stream);
                frame
            }
            Ok(Err(e)) => return Err(StoreError::Unavailable(e.to_string())),
            // The request may still arrive; the next one starts afresh.
            Err(_) => return Err(StoreError::Unavailable("no answer in time".to_string())),
        };
        let reply: Result<StoreReply, StoreError> =
            serde_json::from_slice(&answer).map_err(|e| StoreError::Protocol(e.to_string()))?;
        reply
    }
}

impl Store for RemoteStore {
    fn call(&self, request: StoreRequest) -> StoreFuture<'_> {
        HookFuture::new(self.ask(request))
    }
}
