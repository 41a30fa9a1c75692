//! A worker process of the crash test: the runtime an application builds
//! (system clock, ids of its own, a PgStore), a scripted model and a tool
//! that logs each start; and the handle the parent keeps on the process.

use super::*;

#[derive(Debug)]
pub(crate) struct SystemClock;

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
pub(crate) struct WorkerIds {
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
pub(crate) struct Scripted {
    worker: String,
}

impl LanguageModel for Scripted {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        let step = request.step;
        let text = StreamPart::TextDelta(format!("step {step} by {}", self.worker).into());
        let parts = if step + 1 < STEPS {
            vec![
                text,
                StreamPart::tool_call(format!("call_{step}"), "work", json!({ "step": step })),
                StreamPart::Finish(FinishReason::ToolCalls),
            ]
        } else {
            vec![text, StreamPart::Finish(FinishReason::Stop)]
        };
        HookFuture::ready(Ok(Box::new(ReadyStream::new(parts)) as BoxStream))
    }
}

#[derive(Deserialize)]
pub(crate) struct WorkInput {
    step: u32,
}

/// What the tool returns: who ran it, under which idempotency key.
#[derive(Serialize)]
pub(crate) struct WorkOutput {
    by: String,
    key: String,
    step: u32,
}

/// Logs its start (`<worker> <idempotency key>`) to `log`, sleeps, answers.
pub(crate) fn work_tool(worker: &str, log: &Path) -> Arc<dyn pai_runtime::Tool> {
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
pub(crate) fn runtime(worker: &str, store: Arc<PgStore>, log: &Path) -> Runtime<()> {
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

pub(crate) fn store(config: PgConfig, schema: &str) -> Arc<PgStore> {
    let options = PgOptions::default().schema(schema);
    Arc::new(PgStore::new(config, Some(Arc::new(SystemClock)), options))
}

pub(crate) fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is set for a worker"))
}

/// A worker process: works on the shared store until it is killed.
pub(crate) fn worker(name: &str) {
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
pub(crate) struct WorkerProcess(pub(crate) Child);

impl WorkerProcess {
    pub(crate) fn spawn(name: &str, db: &str, schema: &str, log: &Path) -> WorkerProcess {
        let exact = format!("crash_postgres::{TEST}");
        let child = Command::new(std::env::current_exe().expect("this test binary"))
            .args(["--exact", exact.as_str(), "--nocapture", "--test-threads=1"])
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
    pub(crate) fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }

    pub(crate) fn exited(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(Some(_)))
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
