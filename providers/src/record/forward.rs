//! One request through the recorder: forwarded to the upstream, its
//! response passed back as it streams while a task ([`pump`]) writes each
//! chunk to the recording before handing it on.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, Method, StatusCode, Uri, header};
use axum::response::Response;
use tokio::sync::mpsc;

use super::files::{self, Sink};
use super::{App, Turn};
use crate::http::chain;

/// A chunk for the client, or the cut that ends its body.
type Item = Result<Bytes, std::io::Error>;

/// Chunks waiting for a slow client before the upstream is read on.
const QUEUE: usize = 64;

/// How long a cut waits for the chunks before it to be written.
const CUT_GRACE: Duration = Duration::from_millis(50);

/// Headers never forwarded either way: hop-by-hop (RFC 9110 7.6.1), and
/// the body's framing, which each side sets for itself.
const HOP_BY_HOP: [&str; 10] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

/// The headers of `from` worth forwarding: all but the hop-by-hop ones and
/// `skip`.
fn forwarded(from: &HeaderMap, skip: &[HeaderName]) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in from {
        if HOP_BY_HOP.contains(&name.as_str()) || skip.contains(name) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// A plain-text answer of the recorder's own.
fn own(status: StatusCode, text: String) -> Response {
    let mut response = Response::new(Body::from(text + "\n"));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        "text/plain; charset=utf-8".parse().expect("a valid header"),
    );
    response
}

/// The handler of every request: a turn, unless the limit is reached.
pub(crate) async fn handle(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let number = app.begun.fetch_add(1, Ordering::SeqCst) + 1;
    if let Some(limit) = app.config.max_turns.filter(|&limit| number > limit) {
        let text = format!("the recorder has recorded its {limit} turns and is stopping");
        return own(StatusCode::SERVICE_UNAVAILABLE, text);
    }
    let mut turn = Turn::new(number, method.as_str(), uri.path());
    let out = app.config.out.clone();
    match files::write_request(&out, number, &body) {
        Ok(path) => turn.request = path,
        Err(e) => turn.error = Some(format!("cannot write the request: {e}")),
    }
    let query = uri.path_and_query().map_or("", |p| p.as_str());
    let url = format!("{}{query}", app.config.upstream);
    let skip = [header::HOST, header::ACCEPT_ENCODING];
    let send = app
        .client
        .request(method, &url)
        .headers(forwarded(&headers, &skip))
        .body(body)
        .send();
    let idle = app.config.idle_timeout;
    let response = match tokio::time::timeout(idle, send).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => {
            let detail = format!("the request to the upstream failed: {}", chain(&e));
            return no_response(&app, turn, detail);
        }
        Err(_) => {
            let detail = format!("no response within {}ms", idle.as_millis());
            return no_response(&app, turn, detail);
        }
    };
    respond(app, turn, response)
}

/// The client's answer when the upstream gave none: 502 (504 after a
/// timeout) naming why; the turn is filed without a recording.
fn no_response(app: &App, mut turn: Turn, detail: String) -> Response {
    let status = match detail.starts_with("no response") {
        true => StatusCode::GATEWAY_TIMEOUT,
        false => StatusCode::BAD_GATEWAY,
    };
    let text = format!("pai-sim record: {detail}");
    turn.error = Some(detail);
    app.finish(turn);
    own(status, text)
}

/// The upstream's status and headers for the client, its body streamed
/// through [`pump`] into `turn-NNN.sse` (an event stream) or
/// `turn-NNN.body`.
fn respond(app: Arc<App>, mut turn: Turn, upstream: reqwest::Response) -> Response {
    let status = upstream.status();
    turn.status = Some(status.as_u16());
    let is_stream = upstream
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let suffix = if is_stream { "sse" } else { "body" };
    let path = files::name(&app.config.out, turn.number, suffix);
    let sink = match Sink::create(&path) {
        Ok(sink) => sink,
        Err(e) => {
            let detail = format!("cannot create {}: {e}", path.display());
            turn.error = Some(detail.clone());
            app.finish(turn);
            return own(StatusCode::INTERNAL_SERVER_ERROR, detail);
        }
    };
    turn.recording = Some(path.clone());
    let headers = forwarded(upstream.headers(), &[]);
    let (tx, rx) = mpsc::channel::<Item>(QUEUE);
    tokio::spawn(pump(app, turn, upstream, Recording { path, sink, tx }));
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        let item = rx.recv().await?;
        if item.is_err() {
            // hyper drops the bytes it has not written yet when a body
            // fails: let it flush the chunks before the cut first.
            tokio::time::sleep(CUT_GRACE).await;
        }
        Some((item, rx))
    });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// Where a response body goes: the file, and the client.
struct Recording {
    path: PathBuf,
    sink: Sink,
    tx: mpsc::Sender<Item>,
}

/// Reads the upstream's body to its end, writing each chunk to the
/// recording and then handing it to the client. A client that hangs up
/// does not stop the recording; a cut or a stall upstream ends it, and
/// the client's body is cut too. Files the turn at the end.
async fn pump(app: Arc<App>, mut turn: Turn, mut upstream: reqwest::Response, to: Recording) {
    let Recording { path, mut sink, tx } = to;
    let idle = app.config.idle_timeout;
    let mut client = Some(tx);
    let cut = loop {
        let chunk = match tokio::time::timeout(idle, upstream.chunk()).await {
            Ok(Ok(Some(chunk))) => chunk,
            Ok(Ok(None)) => break None,
            Ok(Err(e)) => {
                break Some(format!(
                    "the upstream connection failed mid-body: {}",
                    chain(&e)
                ));
            }
            Err(_) => {
                break Some(format!(
                    "the upstream stalled: no bytes for {}ms",
                    idle.as_millis()
                ));
            }
        };
        sink.write(&chunk, &path);
        turn.bytes += chunk.len() as u64;
        if let Some(tx) = &client
            && tx.send(Ok(chunk)).await.is_err()
        {
            client = None;
        }
    };
    if let (Some(cut), Some(tx)) = (&cut, &client) {
        let _ = tx.send(Err(std::io::Error::other(cut.clone()))).await;
    }
    drop(client);
    let error = [turn.error.take(), sink.error.take(), cut];
    let error: Vec<String> = error.into_iter().flatten().collect();
    turn.error = (!error.is_empty()).then(|| error.join("; "));
    turn.decode(&sink.body);
    app.finish(turn);
}
