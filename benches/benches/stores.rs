//! Commit cost of each store: one run's `Append` of one message under its
//! lease token, the write a model step makes.
//!
//! The measurement pass times 2,000 single commits per store (after 200
//! untimed) into an HDR histogram and prints `RESULT store_<kind>` lines:
//! commits per second (from the mean), p50 and p99 latency in µs; criterion
//! then reports batch means per store. Stores: memory; SQLite on a file
//! with `Durability::Full` (the default: every commit synced), `Normal`
//! (WAL, synced at checkpoints) and `Off`; SQLite in memory; Postgres on a
//! throwaway local server (unix socket, fsync and synchronous commit on)
//! when its binaries are installed (`PAI_REQUIRE_PG=1` makes a missing
//! server an error, not a skip). After timing, each store's thread is
//! checked to hold every message committed.

use std::path::Path;
use std::time::Instant;

use criterion::{Criterion, criterion_group};
use hdrhistogram::Histogram;
use pai_pg_server::PgServer;
use pai_runtime::store::{AdminOp, AdminReply, ClientOp, FencingToken, RunOp, RunReply};
use pai_runtime::{
    MemoryStore, Part, Role, StoreError,
    message::{NewMessage, PaiMeta, Producer, Visibility},
    store::{Durability, PgOptions, PgStore, SqliteConfig, SqliteStore, StoreReply, StoreRequest},
};

#[path = "support/report.rs"]
mod report;

const WARMUP: usize = 200;
const TIMED: usize = 2_000;

type Apply = Box<dyn Fn(StoreRequest) -> Result<StoreReply, StoreError>>;

/// One store, with a thread whose run holds the lease.
struct Bench {
    name: &'static str,
    apply: Apply,
    token: FencingToken,
    next: u64,
    _dir: Option<tempfile::TempDir>,
}

fn message(id: String, role: Role) -> NewMessage {
    NewMessage {
        parts: vec![Part::text(
            "a step's answer, about as long as a short reply",
        )],
        id: id.into(),
        role,
        visibility: Visibility::ALL,
        pai: PaiMeta::new(Producer::Model, Some("r1"), Some(0), 0),
    }
}

impl Bench {
    fn new(name: &'static str, apply: Apply, dir: Option<tempfile::TempDir>) -> Bench {
        let submit = StoreRequest::client(
            "t",
            "a",
            "o",
            ClientOp::Submit {
                message: message("u1".into(), Role::User),
                steer: false,
                new_run: Some("r1".into()),
            },
        );
        apply(submit).expect("submitted");
        let claim = StoreRequest::claim(Some("t".into()), "w", None);
        let Ok(StoreReply::Admin(AdminReply::Claimed(Some(c)))) = apply(claim) else {
            panic!("{name}: the run is claimed");
        };
        Bench {
            name,
            apply,
            token: c.token,
            next: 0,
            _dir: dir,
        }
    }

    /// One commit of one message.
    fn commit(&mut self) {
        self.next += 1;
        let append = StoreRequest::run(
            "t",
            "r1",
            self.token,
            RunOp::Append {
                messages: vec![message(format!("m{}", self.next), Role::Assistant)],
                step: Some(0),
                metadata: None,
            },
        );
        let reply = (self.apply)(append);
        assert!(
            matches!(reply, Ok(StoreReply::Run(RunReply::Appended(_)))),
            "{reply:?}"
        );
    }

    /// The thread holds the user message and every commit, in order.
    fn check(&self) {
        let Ok(StoreReply::Admin(AdminReply::Thread(Some(t)))) =
            (self.apply)(StoreRequest::admin("t", AdminOp::Inspect))
        else {
            panic!("{}: the thread is there", self.name);
        };
        assert_eq!(t.messages.len() as u64, self.next + 1, "{}", self.name);
        assert_eq!(t.version, self.next + 1, "{}", self.name);
    }
}

fn sqlite_file(durability: Durability) -> (Apply, Option<tempfile::TempDir>) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path: &Path = dir.path();
    let config = SqliteConfig::default().durability(durability);
    let store = SqliteStore::open(path.join("bench.db"), None, config).expect("opens");
    (Box::new(move |r| store.apply(r)), Some(dir))
}

/// A Postgres store on `server`, answered on a runtime of its own.
fn postgres(server: &PgServer) -> Apply {
    server.create_database("bench").ok();
    let store = PgStore::new(server.config("bench"), None, PgOptions::default());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    Box::new(move |r| rt.block_on(store.apply(r)))
}

fn stores(server: Option<&PgServer>) -> Vec<Bench> {
    let memory = MemoryStore::default();
    let in_memory = SqliteStore::in_memory(None, SqliteConfig::default()).expect("opens");
    let (full, full_dir) = sqlite_file(Durability::Full);
    let (normal, normal_dir) = sqlite_file(Durability::Normal);
    let (off, off_dir) = sqlite_file(Durability::Off);
    vec![
        Bench::new("memory", Box::new(move |r| memory.apply(r)), None),
        Bench::new("sqlite_memory", Box::new(move |r| in_memory.apply(r)), None),
        Bench::new("sqlite_full", full, full_dir),
        Bench::new("sqlite_normal", normal, normal_dir),
        Bench::new("sqlite_off", off, off_dir),
    ]
    .into_iter()
    .chain(server.map(|s| Bench::new("postgres", postgres(s), None)))
    .collect()
}

/// The throwaway server, or `None` (with a note) without its binaries.
fn server() -> Option<PgServer> {
    match PgServer::start() {
        Ok(server) => server,
        Err(e) => panic!("starting the Postgres server: {e}"),
    }
}

fn measurement_pass() {
    let server = server();
    for mut bench in stores(server.as_ref()) {
        for _ in 0..WARMUP {
            bench.commit();
        }
        let mut hist = Histogram::<u64>::new(3).expect("a histogram");
        let started = Instant::now();
        for _ in 0..TIMED {
            let t = Instant::now();
            bench.commit();
            hist.record(t.elapsed().as_nanos() as u64)
                .expect("recorded");
        }
        let total = started.elapsed().as_secs_f64();
        bench.check();
        let workload = format!("store_{}", bench.name);
        report::result(&workload, "commits_per_s", TIMED as f64 / total);
        report::result(
            &workload,
            "p50_us",
            hist.value_at_quantile(0.50) as f64 / 1e3,
        );
        report::result(
            &workload,
            "p99_us",
            hist.value_at_quantile(0.99) as f64 / 1e3,
        );
        report::result(&workload, "max_us", hist.max() as f64 / 1e3);
    }
}

fn commits(c: &mut Criterion) {
    let mut group = c.benchmark_group("store_commit");
    let server = server();
    for mut bench in stores(server.as_ref()) {
        group.bench_function(bench.name, |b| b.iter(|| bench.commit()));
        bench.check();
    }
    group.finish();
}

criterion_group!(benches, commits);

fn main() {
    report::main(measurement_pass, benches);
}
