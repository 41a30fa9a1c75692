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
use pai_runtime::{
    Agent, BoxStream, Clock, FinishReason, HookFuture, IdKind, IdSource, LanguageModel, Message,
    Millis, ModelError, ModelMap, ModelRequest, Part, PgConfig, PgOptions, PgStore, Producer,
    ReadyStream, Role, RunRecord, RunStatus, Runtime, StoreReply, StoreRequest, StoredThread,
    StreamPart, ToolCx, ToolError, WorkerConfig, tool_fn,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

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
#[derive(Debug)]
struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as Millis)
    }

    fn sleep(&self, ms: Millis) -> HookFuture<'static, ()> {
        HookFuture::new(tokio::time::sleep(Duration::from_millis(ms)))
    }
}

/// Ids unique across processes: the worker's name and a counter.
#[derive(Debug)]
struct WorkerIds {
    worker: String,
    counter: AtomicU64,
}

impl IdSource for WorkerIds {
    fn next_id(&self, kind: IdKind) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("{}_{}_{n}", kind.prefix(), self.worker)
    }
}

/// Steps `0..STEPS-1` say who made them and call the tool; the last stops.
#[derive(Debug)]
struct Scripted {
    worker: String,
}

impl LanguageModel for Scripted {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        let step = request.step;
        let text = StreamPart::TextDelta(format!("step {step} by {}", self.worker));
        let parts = if step + 1 < STEPS {
            vec![
                text,
                StreamPart::ToolCall {
                    call_id: format!("call_{step}"),
                    tool: "work".into(),
                    input: json!({ "step": step }),
                },
                StreamPart::Finish(FinishReason::ToolCalls),
            ]
        } else {
            vec![text, StreamPart::Finish(FinishReason::Stop)]
        };
        HookFuture::ready(Ok(Box::new(ReadyStream::new(parts)) as BoxStream))
    }
}

#[derive(Deserialize)]
struct WorkInput {
    step: u32,
}

/// What the tool returns: who ran it, under which idempotency key.
#[derive(Serialize)]
struct WorkOutput {
    by: String,
    key: String,
    step: u32,
}

/// Logs its start (`<worker> <idempotency key>`) to `log`, sleeps, answers.
fn work_tool(worker: &str, log: &Path) -> Arc<dyn pai_runtime::Tool> {
    let (worker, log) = (worker.to_string(), log.to_path_buf());
    tool_fn(
        "work",
        "works a while",
        move |cx: ToolCx, input: WorkInput| {
            let (worker, log) = (worker.clone(), log.clone());
            async move {
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .map_err(|e| ToolError::Throw(e.to_string()))?;
                file.write_all(format!("{worker} {}\n", cx.idempotency_key).as_bytes())
                    .map_err(|e| ToolError::Throw(e.to_string()))?;
                tokio::time::sleep(Duration::from_millis(TOOL_MS)).await;
                Ok::<_, ToolError>(WorkOutput {
                    by: worker,
                    key: cx.idempotency_key,
                    step: input.step,
                })
            }
        },
    )
}

/// A runtime for `worker` on `store`: a worker among several, sends left
/// to the workers (the gateway's too).
fn runtime(worker: &str, store: Arc<PgStore>, log: &Path) -> Runtime<()> {
    let agent = Agent::new("assistant", "scripted")
        .max_steps(STEPS + 5)
        .tool(work_tool(worker, log));
    let model = Scripted {
        worker: worker.to_string(),
    };
    let ids = WorkerIds {
        worker: worker.to_string(),
        counter: AtomicU64::new(0),
    };
    Runtime::builder(agent, ())
        .store(store)
        .worker(WorkerConfig::shared(worker, LEASE_TTL))
        .clock(Arc::new(SystemClock))
        .ids(Arc::new(ids))
        .models(ModelMap::new().with("scripted", Arc::new(model)))
        .build()
        .expect("the runtime builds")
}

fn store(config: PgConfig, schema: &str) -> Arc<PgStore> {
    let options = PgOptions::default().schema(schema);
    Arc::new(PgStore::new(config, Some(Arc::new(SystemClock)), options))
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is set for a worker"))
}

/// A worker process: works on the shared store until it is killed.
fn worker(name: &str) {
    let config: PgConfig = var(DB_VAR).parse().expect("a connection string");
    let store = store(config, &var(SCHEMA_VAR));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async {
        store
            .migrate()
            .await
            .expect("the worker reaches the database");
        runtime(name, store, Path::new(&var(LOG_VAR))).work().await;
    });
}

/// A worker process, killed and reaped when dropped (also when a check
/// panics, so no worker outlives the test).
struct WorkerProcess(Child);

impl WorkerProcess {
    fn spawn(name: &str, db: &str, schema: &str, log: &Path) -> WorkerProcess {
        let child = Command::new(std::env::current_exe().expect("this test binary"))
            .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
            .env(WORKER_VAR, name)
            .env(DB_VAR, db)
            .env(SCHEMA_VAR, schema)
            .env(LOG_VAR, log)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the worker starts");
        WorkerProcess(child)
    }

    /// SIGKILL, then reap.
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }

    fn exited(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(Some(_)))
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn inspect(store: &PgStore) -> Option<StoredThread> {
    let request = StoreRequest::Inspect {
        thread: THREAD.into(),
    };
    match store.apply(request).await {
        Ok(StoreReply::Thread(t)) => t,
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
    run: String,
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

/// Every check on a round's stored threads; an empty list when all hold.
fn check(c: &Case) -> Vec<String> {
    let mut errors = Vec::new();
    check_run(c, &mut errors);
    check_steps(c, &mut errors);
    check_results(c, &mut errors);
    check_takeover(c, &mut errors);
    check_authors(c, &mut errors);
    check_tool_starts(c, &mut errors);
    errors
}

macro_rules! ensure {
    ($errors:expr, $cond:expr, $($fmt:tt)+) => {
        if !$cond {
            $errors.push(format!($($fmt)+));
        }
    };
}

/// The run completed, all its steps committed, the model ended it.
fn check_run(c: &Case, errors: &mut Vec<String>) {
    let Some(r) = c.last.runs.iter().find(|r| r.id == c.run) else {
        errors.push(format!("run {} is gone", c.run));
        return;
    };
    ensure!(
        errors,
        r.status == RunStatus::Completed && r.reason.is_none(),
        "the run is not completed by the model: {:?} ({:?})",
        r.status,
        r.reason
    );
    ensure!(
        errors,
        r.steps == STEPS,
        "the run committed {} steps, not {STEPS}",
        r.steps
    );
}

/// Sequence numbers 1, 2, ...; each step's assistant message once (K2).
fn check_steps(c: &Case, errors: &mut Vec<String>) {
    for (k, m) in c.last.messages.iter().enumerate() {
        ensure!(
            errors,
            m.seq == k as u64 + 1,
            "sequence numbers not consecutive: message {k} has seq {}",
            m.seq
        );
    }
    let mut steps: BTreeMap<u32, usize> = BTreeMap::new();
    for m in c.last.messages.iter().filter(|m| m.role == Role::Assistant) {
        let step = m.pai.step.unwrap_or(u32::MAX);
        ensure!(
            errors,
            m.pai.producer == Producer::Model && m.pai.run_id.as_deref() == Some(&c.run),
            "assistant message {} is not the run's model output",
            m.id
        );
        *steps.entry(step).or_default() += 1;
    }
    for step in 0..STEPS {
        let n = steps.remove(&step).unwrap_or(0);
        ensure!(errors, n == 1, "step {step} committed {n} times");
    }
    ensure!(
        errors,
        steps.is_empty(),
        "steps beyond the run's: {steps:?}"
    );
}

/// Every tool call once, with exactly one result, under its key (K5).
fn check_results(c: &Case, errors: &mut Vec<String>) {
    let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
    let mut results: BTreeMap<&str, usize> = BTreeMap::new();
    for part in c.last.messages.iter().flat_map(|m| &m.parts) {
        match part {
            Part::ToolCall { call_id, .. } => *calls.entry(call_id).or_default() += 1,
            Part::ToolResult {
                call_id, output, ..
            } => {
                *results.entry(call_id).or_default() += 1;
                let key = format!("{}/{call_id}", c.run);
                ensure!(
                    errors,
                    output["key"] == json!(key),
                    "result of {call_id} ran under key {}",
                    output["key"]
                );
            }
            Part::Text { .. } => {}
        }
    }
    ensure!(
        errors,
        calls.len() == STEPS as usize - 1,
        "{} distinct tool calls, not {}",
        calls.len(),
        STEPS - 1
    );
    for (call, n) in &calls {
        let got = results.remove(call).unwrap_or(0);
        ensure!(errors, *n == 1, "call {call} committed {n} times");
        ensure!(errors, got == 1, "call {call} has {got} results");
    }
    ensure!(
        errors,
        results.is_empty(),
        "results without a call: {results:?}"
    );
}

/// `a` held the run when it died; `b` took it over: a newer token, a
/// later episode (K2, K3).
fn check_takeover(c: &Case, errors: &mut Vec<String>) {
    let (before, after) = (run_of(&c.at_kill, &c.run), run_of(&c.last, &c.run));
    ensure!(
        errors,
        before.status == RunStatus::Running && c.at_kill.lease_holder.as_ref() == Some(&c.run),
        "a did not hold the running run when killed: {:?}",
        before.status
    );
    ensure!(
        errors,
        c.last.lease_token > c.at_kill.lease_token,
        "the lease token did not grow past a's {} (now {}): no takeover",
        c.at_kill.lease_token,
        c.last.lease_token
    );
    ensure!(
        errors,
        after.episodes > before.episodes && after.episodes >= 2,
        "no later episode: {} when a died, {} at the end",
        before.episodes,
        after.episodes
    );
}

/// The workers named in a message: a step's text or a tool result's `by`.
fn authors(m: &Message) -> Vec<String> {
    m.parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } if m.role == Role::Assistant => {
                text.rsplit_once(" by ").map(|(_, w)| w.to_string())
            }
            Part::ToolResult { output, .. } => output["by"].as_str().map(str::to_string),
            _ => None,
        })
        .collect()
}

/// What `a` left is kept as it was (X3); everything after it is `b`'s:
/// nothing of `a` landed after its death or under its token.
fn check_authors(c: &Case, errors: &mut Vec<String>) {
    let (left, last) = (&c.at_kill.messages, &c.last.messages);
    let kept = left.len() <= last.len() && last[..left.len()] == left[..];
    ensure!(
        errors,
        kept,
        "what a left was not kept: {} messages then, the first {} now differ",
        left.len(),
        left.len().min(last.len())
    );
    for m in left {
        let by = authors(m);
        ensure!(
            errors,
            by.iter().all(|w| w == "a"),
            "message {} before a's death is by {by:?}",
            m.id
        );
    }
    let later = last.get(left.len()..).unwrap_or_default();
    for m in later {
        let by = authors(m);
        ensure!(
            errors,
            by.iter().all(|w| w == "b"),
            "message {} after a's death is by {by:?}",
            m.id
        );
    }
    let of_b = later.iter().filter(|m| !authors(m).is_empty()).count();
    ensure!(errors, of_b > 0, "nothing of b after a's death");
}

/// The idempotency keys of `run`'s tool calls in `t`.
fn call_keys(t: &StoredThread, run: &str) -> BTreeSet<String> {
    (t.messages.iter().flat_map(|m| &m.parts))
        .filter_map(|p| match p {
            Part::ToolCall { call_id, .. } => Some(format!("{run}/{call_id}")),
            _ => None,
        })
        .collect()
}

/// The committed results in `t`: idempotency key to the worker that ran it.
fn result_keys(t: &StoredThread) -> BTreeMap<String, String> {
    t.messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult { output, .. } => Some((
                output["key"].as_str()?.to_string(),
                output["by"].as_str()?.to_string(),
            )),
            _ => None,
        })
        .collect()
}

/// K5 from the tool's own log: no worker started a call twice; a call
/// whose result was committed before `a` died was not run again; every
/// committed result comes from a logged start of the worker it names.
fn check_tool_starts(c: &Case, errors: &mut Vec<String>) {
    let done_at_kill = result_keys(&c.at_kill);
    let calls = call_keys(&c.last, &c.run);
    let mut seen = BTreeSet::new();
    for (worker, key) in &c.starts {
        ensure!(
            errors,
            seen.insert((worker.as_str(), key.as_str())),
            "{worker} started {key} twice"
        );
        ensure!(
            errors,
            calls.contains(key),
            "{worker} started {key}, a call the thread does not hold"
        );
        ensure!(
            errors,
            worker == "a" || !done_at_kill.contains_key(key),
            "{key}, committed before a's death, was run again by {worker} (K5)"
        );
    }
    for (key, by) in result_keys(&c.last) {
        ensure!(
            errors,
            seen.contains(&(by.as_str(), key.as_str())),
            "the result of {key} names {by}, whose start of it was not logged"
        );
    }
}

/// Copies of a passing case, each broken the way one check must catch,
/// with a piece of the error that check gives.
fn doctored(c: &Case) -> Vec<(&'static str, Case)> {
    let edit = |f: &dyn Fn(&mut Case)| {
        let mut d = c.clone();
        f(&mut d);
        d
    };
    vec![
        ("committed 2 times", edit(&|d| duplicate_step(&mut d.last))),
        ("has 0 results", edit(&|d| drop_result(&mut d.last))),
        ("not consecutive", edit(&|d| d.last.messages[1].seq += 1)),
        (
            "not completed",
            edit(&|d| set_status(d, RunStatus::Running)),
        ),
        (
            "did not grow",
            edit(&|d| d.last.lease_token = d.at_kill.lease_token),
        ),
        ("no later episode", edit(&|d| copy_episodes(d))),
        (
            "after a's death is by",
            edit(&|d| relabel_last_step(&mut d.last)),
        ),
        (
            "was not kept",
            edit(&|d| d.at_kill.messages[0].parts.clear()),
        ),
        ("nothing of b", edit(&|d| d.last = d.at_kill.clone())),
        ("run again by b", edit(&|d| rerun_committed(d))),
        ("twice", edit(&|d| d.starts.push(d.starts[0].clone()))),
    ]
}

fn run_mut<'a>(t: &'a mut StoredThread, run: &str) -> &'a mut RunRecord {
    t.runs.iter_mut().find(|r| r.id == run).expect("the run")
}

/// The first step's message committed again at the end.
fn duplicate_step(t: &mut StoredThread) {
    let mut m = (t.messages.iter())
        .find(|m| m.role == Role::Assistant)
        .cloned()
        .expect("a step");
    m.id.push_str("_again");
    m.seq = t.messages.len() as u64 + 1;
    t.messages.push(m);
}

/// The last tool result lost, sequence numbers closed up.
fn drop_result(t: &mut StoredThread) {
    let at = (t.messages.iter())
        .rposition(|m| m.role == Role::Tool)
        .expect("a result");
    t.messages.remove(at);
    for (k, m) in t.messages.iter_mut().enumerate() {
        m.seq = k as u64 + 1;
    }
}

fn set_status(c: &mut Case, status: RunStatus) {
    run_mut(&mut c.last, &c.run).status = status;
}

fn copy_episodes(c: &mut Case) {
    let episodes = run_of(&c.at_kill, &c.run).episodes;
    run_mut(&mut c.last, &c.run).episodes = episodes;
}

/// The last step claims to be `a`'s.
fn relabel_last_step(t: &mut StoredThread) {
    let m = (t.messages.iter_mut())
        .rfind(|m| m.role == Role::Assistant)
        .expect("a step");
    for part in &mut m.parts {
        if let Part::Text { text } = part {
            *text = text.replace(" by b", " by a");
        }
    }
}

/// `b` logged a start of a call whose result `a` had committed.
fn rerun_committed(c: &mut Case) {
    let key = (result_keys(&c.at_kill).into_keys().next()).expect("a result before the kill");
    c.starts.push(("b".to_string(), key));
}

/// Every doctored copy of a passing case must be rejected, by the check
/// it was broken for.
fn checks_fire(c: &Case) {
    for (want, d) in doctored(c) {
        let errors = check(&d);
        assert!(
            errors.iter().any(|e| e.contains(want)),
            "a doctored thread ({want}) passed the checks: {errors:?}"
        );
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
