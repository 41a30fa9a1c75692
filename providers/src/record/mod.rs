//! [`Recorder`]: a recording proxy between a client and a provider (cargo
//! feature `record`), to turn a real conversation into recordings the
//! simulator replays (`[model] replay = [...]`).
//!
//! The recorder listens where it is told (`127.0.0.1:PORT`) and forwards
//! every request to the upstream: the method, the upstream's URL followed
//! by the request's path and query, the body, and the request's headers
//! (authentication among them) except the hop-by-hop ones, `host`,
//! `content-length` and `accept-encoding` (the upstream answers
//! uncompressed, so a recording is what `curl -N` prints). The upstream's
//! status, headers and body go back to the client, the body chunk by chunk
//! as it arrives: the client sees a stream, never a buffered body.
//!
//! Each request is a [`Turn`], numbered from 1 in the order requests
//! arrive: its body is written to `turn-NNN.request.json` (pretty-printed
//! when it is JSON), and the response body, byte for byte as received, to
//! `turn-NNN.sse` (an event stream) or `turn-NNN.body` (anything else, an
//! error status's JSON among them), written as it arrives so a cut
//! connection leaves what came. Keys and headers are never written or
//! reported, nor the query string. An error status is recorded and passed
//! through with its status; a connection cut or a stall mid-body is
//! recorded up to there, passed on to the client as a cut, and named in
//! the turn ([`Turn::error`]).
//!
//! With a turn limit the recorder stops once that many turns are
//! recorded; later requests are refused with 503.

mod files;
mod forward;
mod turn;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use futures_util::future;
use tokio::sync::watch;

pub use turn::Turn;

use crate::http::chain;

/// What is called with each recorded turn.
type TurnHook = Arc<dyn Fn(&Turn) + Send + Sync>;

/// The largest request body the recorder accepts.
const MAX_REQUEST: usize = 64 * 1024 * 1024;

/// A [`Recorder`]'s configuration: the upstream and the folder, with
/// builder methods for the rest.
#[derive(Clone)]
pub struct RecordConfig {
    pub(crate) upstream: String,
    pub(crate) out: PathBuf,
    pub(crate) max_turns: Option<usize>,
    pub(crate) connect_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) on_turn: Option<TurnHook>,
}

impl RecordConfig {
    /// Requests go to `upstream` (`https://api.openai.com`,
    /// `http://127.0.0.1:8080`) followed by their own path and query;
    /// recordings go to the folder `out`.
    ///
    /// Defaults: no turn limit; 10 s to connect; 300 s for the response
    /// headers and between two chunks of the body.
    pub fn new(upstream: impl Into<String>, out: impl Into<PathBuf>) -> RecordConfig {
        RecordConfig {
            upstream: upstream.into().trim_end_matches('/').to_owned(),
            out: out.into(),
            max_turns: None,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            on_turn: None,
        }
    }

    /// Stop after `turns` turns are recorded (`None`: never).
    pub fn max_turns(mut self, turns: Option<usize>) -> RecordConfig {
        self.max_turns = turns;
        self
    }

    /// How long connecting to the upstream (TCP and TLS) may take.
    pub fn connect_timeout(mut self, timeout: Duration) -> RecordConfig {
        self.connect_timeout = timeout;
        self
    }

    /// How long the upstream may take to answer, and then to send each
    /// next chunk of the body: past it the turn ends as a stall.
    pub fn idle_timeout(mut self, timeout: Duration) -> RecordConfig {
        self.idle_timeout = timeout;
        self
    }

    /// Called with each turn once its recording is complete (or cut).
    pub fn on_turn(mut self, hook: impl Fn(&Turn) + Send + Sync + 'static) -> RecordConfig {
        self.on_turn = Some(Arc::new(hook));
        self
    }
}

impl fmt::Debug for RecordConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordConfig")
            .field("upstream", &self.upstream)
            .field("out", &self.out)
            .field("max_turns", &self.max_turns)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .finish_non_exhaustive()
    }
}

/// Why the recorder could not start or stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The upstream is not an `http://` or `https://` URL.
    #[error("the upstream {0:?} is not an http:// or https:// URL")]
    Upstream(String),
    /// The address could not be listened on.
    #[error("cannot listen on {addr}: {detail}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// The system's complaint.
        detail: String,
    },
    /// The output folder could not be made, read, or already holds
    /// recordings.
    #[error("{}: {detail}", .path.display())]
    Out {
        /// The folder.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
    /// The server failed while serving.
    #[error("the recorder's server failed: {0}")]
    Serve(String),
}

/// A recording proxy, bound and ready to [`run`](Recorder::run): each
/// request is forwarded to the upstream and its response streamed back
/// chunk by chunk while it is written, byte for byte, to `turn-NNN.sse`
/// (an event stream) or `turn-NNN.body` (anything else), the request's
/// body beside it in `turn-NNN.request.json`. Keys, headers and query
/// strings are never written or reported.
///
/// ```no_run
/// use pai_providers::{RecordConfig, Recorder};
///
/// # async fn record() -> Result<(), pai_providers::RecordError> {
/// let config = RecordConfig::new("https://api.openai.com", "recordings")
///     .max_turns(Some(2))
///     .on_turn(|turn| eprintln!("{turn}"));
/// let recorder = Recorder::bind("127.0.0.1:8089".parse().unwrap(), config).await?;
/// // Point the client at http://127.0.0.1:8089/v1.
/// let turns = recorder.run().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Recorder {
    listener: tokio::net::TcpListener,
    app: Arc<App>,
}

/// What every request's handler shares.
pub(crate) struct App {
    pub(crate) config: RecordConfig,
    pub(crate) client: reqwest::Client,
    /// The number of the last turn begun.
    pub(crate) begun: AtomicUsize,
    /// The turns recorded, by number.
    pub(crate) turns: Mutex<BTreeMap<usize, Turn>>,
    /// How many turns are recorded.
    pub(crate) done: watch::Sender<usize>,
}

impl fmt::Debug for App {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("App")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl App {
    /// Files a finished turn: reported, counted, kept.
    pub(crate) fn finish(&self, turn: Turn) {
        if let Some(hook) = &self.config.on_turn {
            hook(&turn);
        }
        self.turns
            .lock()
            .expect("not poisoned")
            .insert(turn.number, turn);
        self.done.send_modify(|n| *n += 1);
    }
}

impl Recorder {
    /// Checks the configuration, makes the output folder (which must hold
    /// no `turn-*` file yet) and listens on `addr` (port 0: any free port).
    /// Installs rustls' ring crypto provider as the process default unless
    /// one is installed already.
    pub async fn bind(addr: SocketAddr, config: RecordConfig) -> Result<Recorder, RecordError> {
        let upstream = &config.upstream;
        if !(upstream.starts_with("http://") || upstream.starts_with("https://")) {
            return Err(RecordError::Upstream(upstream.clone()));
        }
        files::prepare(&config.out)?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| RecordError::Client(chain(&e)))?;
        let listener =
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| RecordError::Listen {
                    addr,
                    detail: e.to_string(),
                })?;
        let app = App {
            config,
            client,
            begun: AtomicUsize::new(0),
            turns: Mutex::default(),
            done: watch::Sender::new(0),
        };
        Ok(Recorder {
            listener,
            app: Arc::new(app),
        })
    }

    /// The address listened on (its port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Serves until the turn limit is reached (forever without one), then
    /// returns the turns in order. Must run inside a tokio runtime with
    /// I/O and time.
    pub async fn run(self) -> Result<Vec<Turn>, RecordError> {
        self.run_until(std::future::pending()).await
    }

    /// [`run`](Recorder::run), stopping also when `stop` completes (a
    /// Ctrl-C): no new request is taken, and the turns streaming finish
    /// before the turns are returned.
    pub async fn run_until(
        self,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Vec<Turn>, RecordError> {
        let app = self.app;
        let router = Router::new()
            .fallback(forward::handle)
            .layer(DefaultBodyLimit::max(MAX_REQUEST))
            .with_state(app.clone());
        let limit = app.config.max_turns;
        let mut done = app.done.subscribe();
        let limit_reached = async move {
            match limit {
                Some(limit) => drop(done.wait_for(|&n| n >= limit).await),
                None => std::future::pending().await,
            }
        };
        let stop = future::select(Box::pin(limit_reached), Box::pin(stop));
        axum::serve(self.listener, router)
            .with_graceful_shutdown(async move { drop(stop.await) })
            .await
            .map_err(|e| RecordError::Serve(e.to_string()))?;
        let turns = std::mem::take(&mut *app.turns.lock().expect("not poisoned"));
        Ok(turns.into_values().collect())
    }
}
