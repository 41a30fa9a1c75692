//! A local HTTP server for the provider's tests: an axum app on
//! 127.0.0.1 that answers each request with the next scripted reply (a
//! recording cut in chunks with a delay between them, then the end, a cut
//! connection or a stall; or a status with a body), records every request
//! (path, headers, JSON body) and tells when a response body was dropped
//! unfinished (the client hung up).
//!
//! Not wiremock: its responses are whole bodies with one delay before
//! them, so it cannot stream chunks apart in time, cut a connection
//! mid-body or stall between chunks, which are what these tests are for.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::watch;

/// How a streamed body ends after its chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The body ends well.
    Finish,
    /// The connection is cut (no last chunk of the chunked encoding).
    Cut,
    /// Nothing more is sent, and the body never ends.
    Stall,
}

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A `text/event-stream` body in chunks.
    Stream {
        chunks: Vec<Vec<u8>>,
        delay: Duration,
        end: End,
    },
    /// A whole body with a status and a content type, after `wait`.
    Whole {
        status: u16,
        content_type: &'static str,
        body: String,
        wait: Duration,
    },
}

impl Reply {
    /// `body` in chunks of `size` bytes, `delay` apart, then `end`.
    pub fn stream(body: &[u8], size: usize, delay: Duration, end: End) -> Reply {
        Reply::Stream {
            chunks: body.chunks(size).map(<[u8]>::to_vec).collect(),
            delay,
            end,
        }
    }

    /// A JSON body with `status`.
    pub fn json(status: u16, body: &str) -> Reply {
        Reply::Whole {
            status,
            content_type: "application/json",
            body: body.to_owned(),
            wait: Duration::ZERO,
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Clone)]
struct AppState {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    received: Arc<Mutex<Vec<Received>>>,
    /// How many response bodies were dropped unfinished.
    dropped: watch::Sender<usize>,
}

/// A running server; it stops with the test's runtime.
pub struct Server {
    pub base_url: String,
    state: AppState,
}

impl Server {
    /// A server on a free port of 127.0.0.1 that gives `replies` in order.
    pub async fn start(replies: Vec<Reply>) -> Server {
        let state = AppState {
            replies: Arc::new(Mutex::new(replies.into())),
            received: Arc::default(),
            dropped: watch::Sender::new(0),
        };
        let app = Router::new().fallback(handle).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Server {
            base_url: format!("http://{addr}/v1"),
            state,
        }
    }

    /// Every request so far.
    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }

    /// Waits (at most 5 s) until `n` response bodies were dropped unfinished.
    pub async fn dropped(&self, n: usize) -> bool {
        let mut rx = self.state.dropped.subscribe();
        let wait = rx.wait_for(|&d| d >= n);
        tokio::time::timeout(Duration::from_secs(5), wait)
            .await
            .is_ok()
    }
}

async fn handle(
    State(state): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    state.received.lock().unwrap().push(Received {
        path: uri.path().to_owned(),
        headers,
        body,
    });
    let reply = state.replies.lock().unwrap().pop_front();
    match reply {
        None => reply_whole(500, "text/plain", "no reply scripted".into()),
        Some(Reply::Whole {
            status,
            content_type,
            body,
            wait,
        }) => {
            tokio::time::sleep(wait).await;
            reply_whole(status, content_type, body)
        }
        Some(Reply::Stream { chunks, delay, end }) => {
            let guard = DropGuard {
                dropped: Some(state.dropped.clone()),
            };
            let body = Body::from_stream(chunk_stream(chunks, delay, end, guard));
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(body)
                .unwrap()
        }
    }
}

fn reply_whole(status: u16, content_type: &str, body: String) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .header("content-type", content_type)
        .body(Body::from(body))
        .unwrap()
}

/// Counts a body dropped before it finished.
struct DropGuard {
    /// Taken when the body finished.
    dropped: Option<watch::Sender<usize>>,
}

impl DropGuard {
    /// The body finished (or was cut on purpose): not a hang-up.
    fn disarm(&mut self) {
        self.dropped = None;
    }
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if let Some(dropped) = &self.dropped {
            dropped.send_modify(|n| *n += 1);
        }
    }
}

type Item = Result<Bytes, std::io::Error>;

/// The chunks `delay` apart (none before the first), then `end`.
fn chunk_stream(
    chunks: Vec<Vec<u8>>,
    delay: Duration,
    end: End,
    guard: DropGuard,
) -> impl futures_util::Stream<Item = Item> + Send {
    let state = (chunks.into_iter(), 0usize, guard);
    futures_util::stream::unfold(state, move |(mut chunks, sent, mut guard)| async move {
        match chunks.next() {
            Some(chunk) => {
                if sent > 0 {
                    tokio::time::sleep(delay).await;
                }
                Some((Ok(Bytes::from(chunk)), (chunks, sent + 1, guard)))
            }
            None => match end {
                End::Finish => {
                    guard.disarm();
                    None
                }
                End::Cut => {
                    // Counted as finished: the server cut it on purpose.
                    guard.disarm();
                    let error = std::io::Error::other("cut on purpose");
                    Some((Err(error), (chunks, sent, guard)))
                }
                End::Stall => {
                    std::future::pending::<()>().await;
                    None
                }
            },
        }
    })
}
