//! K3, K2, K5, X3 with real processes on a real PostgreSQL server: a worker
//! process driving a run on a shared `PgStore` is killed (SIGKILL) in the
//! middle of the run; a second worker process takes the run over once the
//! first one's lease has expired, and finishes it.
//!
//! Each round gets a fresh schema. The parent submits one user message
//! through a gateway runtime that drives nothing, starts worker `a`, waits
//! until the run has committed `k` steps (`k` from a fixed seed), kills `a`,
//! reads the thread as `a` left it, starts worker `b` and waits until the run
//! is over. Then the stored thread must show: the run completed, every step
//! committed once, every tool call answered once, consecutive sequence
//! numbers, a newer lease token and a second episode (the takeover), what
//! `a` left untouched and followed only by `b`'s messages, and no tool call
//! whose result was committed run again (K5; every tool start is logged
//! to a file). [`check`] is also shown doctored threads, each of which it
//! must reject, so none of its checks passes vacuously.
//!
//! A worker is this test binary run again with `PAI_PG_CRASH_WORKER` naming
//! it; the database, schema and tool log come in `PAI_PG_CRASH_*` variables.
//! Skipped, with a line on stderr, when no server binaries are installed
//! and `PAI_REQUIRE_PG` is unset.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pai_pg_server::PgServer;
use pai_runtime::store::{AdminOp, AdminReply};
use pai_runtime::{
    Agent, Clock, HookFuture, IdKind, IdSource, LanguageModel, Message, Millis, ModelError,
    ModelRequest, Part, Role, Runtime, StreamPart, ToolCx, ToolError, WorkerConfig,
    message::Producer,
    model::{BoxStream, FinishReason, ModelMap, ReadyStream},
    store::{
        PgConfig, PgOptions, PgStore, RunRecord, RunStatus, StoreReply, StoreRequest, StoredThread,
    },
    tool_fn,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

mod checks;
mod worker;

use checks::*;
use worker::*;

const TEST: &str = "k3_a_killed_worker_process_is_taken_over_on_postgres";
const WORKER_VAR: &str = "PAI_PG_CRASH_WORKER";
const DB_VAR: &str = "PAI_PG_CRASH_DB";
const SCHEMA_VAR: &str = "PAI_PG_CRASH_SCHEMA";
const LOG_VAR: &str = "PAI_PG_CRASH_LOG";
const THREAD: &str = "t";
const OWNER: &str = "alice";
/// Model steps of the run: each but the last calls the tool once.
const STEPS: u32 = 20;
const LEASE_TTL: Millis = 400;
const TOOL_MS: u64 = 30;
/// One round per delay: how long after seeing `k` committed steps the
/// parent kills `a`.
const KILL_DELAYS: [u64; 3] = [20, 55, 1];
/// How long the parent waits for `a` to commit `k` steps, and for `b` to
/// finish the run (process start, schema migration and a loaded CI box).
const REACH_K: Duration = Duration::from_secs(30);
const FINISH: Duration = Duration::from_secs(60);

/// Wall-clock time, the same in every process; timers on Tokio.
async fn inspect(store: &PgStore) -> Option<StoredThread> {
    let request = StoreRequest::admin(THREAD, AdminOp::Inspect);
    match store.apply(request).await {
        Ok(StoreReply::Admin(AdminReply::Thread(t))) => t,
        other => panic!("inspect answered {other:?}"),
    }
}

fn run_of<'a>(t: &'a StoredThread, run: &str) -> &'a RunRecord {
    t.runs
        .iter()
        .find(|r| r.id == run)
        .unwrap_or_else(|| panic!("run {run} is not in the thread"))
}

/// Polls the thread every 10 ms until `done` holds; panics after `limit`
/// or if `worker` exits by itself.
async fn poll_until(
    store: &PgStore,
    worker: &mut WorkerProcess,
    limit: Duration,
    what: &str,
    done: impl Fn(&StoredThread) -> bool,
) -> StoredThread {
    let start = Instant::now();
    loop {
        let thread = inspect(store).await.expect("the thread exists");
        if done(&thread) {
            return thread;
        }
        assert!(!worker.exited(), "the worker exited before {what}");
        assert!(
            start.elapsed() < limit,
            "no {what} after {limit:?}: runs {:?}",
            thread.runs
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn ended(status: RunStatus) -> bool {
    matches!(
        status,
        RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
    )
}

/// The tool starts logged, in order: (worker, idempotency key).
fn read_starts(log: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|line| {
            let (worker, key) = line.split_once(' ').expect("a start line: worker key");
            (worker.to_string(), key.to_string())
        })
        .collect()
}

/// What one round leaves to judge.
#[derive(Debug, Clone)]
struct Case {
    run: pai_runtime::id::RunId,
    /// The thread as `a` left it, read once `a` was reaped.
    at_kill: StoredThread,
    /// The thread once the run was over.
    last: StoredThread,
    /// Every tool start, in order: (worker, idempotency key).
    starts: Vec<(String, String)>,
}

/// One round on a fresh schema: the gateway submits, `a` works until the
/// run has `k` committed steps and is killed `delay` ms later, `b` takes
/// over and finishes.
async fn round(server: &PgServer, dir: &Path, round: usize, (k, delay): (u32, u64)) -> Case {
    let schema = format!("crash_{round}");
    let db = server.connection_string("postgres");
    let log = dir.join(format!("starts_{round}.log"));
    let store = store(server.config("postgres"), &schema);
    let gateway = runtime("gateway", store.clone(), &log);
    let sent = gateway
        .client(OWNER)
        .thread(THREAD)
        .send("work through it")
        .await
        .expect("the gateway stores the message");
    let run = sent.run_id;
    let mut a = WorkerProcess::spawn("a", &db, &schema, &log);
    let what = format!("{k} steps committed by a");
    let seen = poll_until(&store, &mut a, REACH_K, &what, |t| {
        run_of(t, &run).steps >= k
    })
    .await;
    // Somewhere in step k: before its tool starts, inside it, or past it.
    tokio::time::sleep(Duration::from_millis(delay)).await;
    a.kill();
    // Every request locks the thread's row: this read waits for a
    // transaction of `a` still open on the server, which then rolls back.
    let at_kill = inspect(&store).await.expect("the thread survives");
    let mut b = WorkerProcess::spawn("b", &db, &schema, &log);
    let last = poll_until(&store, &mut b, FINISH, "end of the run", |t| {
        ended(run_of(t, &run).status)
    })
    .await;
    b.kill();
    eprintln!(
        "{TEST}: round {round}: a killed {delay} ms after {} steps seen ({} in the store), k = {k}",
        run_of(&seen, &run).steps,
        run_of(&at_kill, &run).steps,
    );
    Case {
        run,
        at_kill,
        last,
        starts: read_starts(&log),
    }
}

/// Where the kill caught `a`: the last committed step's call without a
/// result (started by `a` or not), or none.
fn kill_point(c: &Case) -> String {
    let done = result_keys(&c.at_kill);
    let open: Vec<String> = (call_keys(&c.at_kill, &c.run).into_iter())
        .filter(|key| !done.contains_key(key))
        .collect();
    let started = |key: &String| c.starts.iter().any(|(w, k)| w == "a" && k == key);
    match open.first() {
        None => "killed between steps (no call open)".to_string(),
        Some(key) if started(key) => format!("killed inside call {key}, which b ran again"),
        Some(key) => format!("killed before call {key} started"),
    }
}

/// A small deterministic generator for the kill points.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

#[test]
fn k3_a_killed_worker_process_is_taken_over_on_postgres() {
    if let Ok(name) = std::env::var(WORKER_VAR) {
        worker(&name);
        return;
    }
    let Some(server) = PgServer::start().expect("starting a PostgreSQL server") else {
        eprintln!("{TEST}: skipped, no PostgreSQL server");
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary folder");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    // k from the seed; the delay after seeing step k committed aims (a
    // step takes some 65 ms here) before its tool starts, inside the tool's
    // sleep, and past its result.
    let mut seed = 0x5eed_u64;
    for (r, delay) in KILL_DELAYS.into_iter().enumerate() {
        let k = 2 + (next(&mut seed) % 9) as u32;
        let started = Instant::now();
        let case = rt.block_on(round(&server, dir.path(), r, (k, delay)));
        let errors = check(&case);
        assert!(
            errors.is_empty(),
            "round {r} (k = {k}):\n{}",
            errors.join("\n")
        );
        checks_fire(&case);
        eprintln!(
            "{TEST}: round {r}: {}; completed by b in {:?}",
            kill_point(&case),
            started.elapsed()
        );
    }
    drop(server);
}
