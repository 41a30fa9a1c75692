//! X3 with real crashes: a child process writes to a SQLite store and is
//! killed (SIGKILL) at random points, again and again on one database file.
//! After every kill the database is opened again and must hold every commit
//! the child was told had landed, with consecutive versions and sequence
//! numbers, and no mutation half applied.
//!
//! The child is this test binary run again with `PAI_CRASH_CHILD` naming
//! the database: it prints one line per commit the store answered.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use pai_runtime::store::{AdminOp, AdminReply, ClientOp, FacadeOp, FacadeReply};
use pai_runtime::{
    Part, Role,
    message::{NewMessage, PaiMeta, Producer, Visibility},
    store::{
        Durability, Expect, SqliteConfig, SqliteStore, StoreReply, StoreRequest, StoredThread,
        Write, Writer,
    },
};
use serde_json::json;

const THREAD: &str = "t";
/// Messages each batch appends, in one mutation with its metadata.
const PER_BATCH: u64 = 3;

fn open(path: &Path) -> SqliteStore {
    let config = SqliteConfig::default().durability(Durability::Full);
    SqliteStore::open(path, None, config).expect("the database opens after a crash")
}

fn message(id: String) -> NewMessage {
    NewMessage {
        parts: vec![Part::text(format!("body of {id}"))],
        id: id.into(),
        role: Role::User,
        visibility: Visibility::ALL,
        pai: PaiMeta::new(Producer::User, None, None, 0),
    }
}

/// Batch `b`: three messages, the metadata key `batch`, and every fifth
/// batch hides a message of three batches before: all one commit.
fn batch(b: u64, version: u64) -> StoreRequest {
    let mut writes: Vec<Write> = (0..PER_BATCH)
        .map(|k| Write::Append(message(format!("b{b}-{k}"))))
        .collect();
    writes.push(Write::Metadata {
        key: "batch".into(),
        value: Some(json!(b)),
    });
    if b.is_multiple_of(5) && b >= 3 {
        writes.push(Write::Visibility {
            message: format!("b{}-0", b - 3).into(),
            visibility: Visibility::CONTEXT_ONLY,
        });
    }
    StoreRequest::facade(
        THREAD,
        FacadeOp::Mutate {
            incarnation: None,
            writer: Writer::Trusted,
            expect: Expect::Version {
                version,
                incarnation: 1,
            },
            writes,
        },
    )
}

fn inspect(store: &SqliteStore) -> Option<StoredThread> {
    match store.apply(StoreRequest::admin(THREAD, AdminOp::Inspect)) {
        Ok(StoreReply::Admin(AdminReply::Thread(t))) => t,
        other => panic!("inspect answered {other:?}"),
    }
}

/// The child: commits batches until it is killed, one line per commit.
fn child(path: &Path) {
    let store = open(path);
    let open = StoreRequest::client(THREAD, "a", "o", ClientOp::Open);
    store.apply(open).expect("opens the thread");
    let mut version = inspect(&store).map_or(0, |t| t.version);
    let mut out = std::io::stdout().lock();
    loop {
        let reply = store.apply(batch(version, version));
        let Ok(StoreReply::Facade(FacadeReply::Mutated(Ok(done)))) = reply else {
            panic!("batch {version} answered {reply:?}");
        };
        version = done.version;
        // The line goes out only after the commit was answered.
        std::io::Write::write_all(&mut out, format!("committed {version}\n").as_bytes())
            .expect("the parent reads");
        std::io::Write::flush(&mut out).expect("flushed");
    }
}

/// What every reopened database must show, given the newest commit the
/// child reported.
fn check(thread: &StoredThread, acknowledged: u64) {
    let v = thread.version;
    assert!(
        v == acknowledged || v == acknowledged + 1,
        "version {v} after {acknowledged} acknowledged commits: a commit was lost or invented"
    );
    assert_eq!(
        thread.messages.len() as u64,
        v * PER_BATCH,
        "a batch is half there"
    );
    for (k, m) in thread.messages.iter().enumerate() {
        let (b, i) = (k as u64 / PER_BATCH, k as u64 % PER_BATCH);
        assert_eq!(m.id, format!("b{b}-{i}"), "messages out of order");
        assert_eq!(m.seq, k as u64 + 1, "sequence numbers not consecutive");
        let hidden_by = b + 3;
        let hidden = i == 0 && hidden_by.is_multiple_of(5) && hidden_by < v;
        assert!(m.visibility.context);
        assert_eq!(
            m.visibility.transcript, !hidden,
            "message {} and the batch that hid it disagree",
            m.id
        );
    }
    let last = thread.metadata.get("batch").cloned();
    assert_eq!(
        last,
        v.checked_sub(1).map(|b| json!(b)),
        "metadata of another batch"
    );
}

/// The version a child's report line names, if it is one.
fn read_report(line: &str) -> Option<u64> {
    line.strip_prefix("committed ")?.parse().ok()
}

/// A small deterministic generator for the kill points.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

#[test]
fn x3_a_killed_writer_loses_no_commit_and_leaves_no_half_mutation() {
    if let Some(path) = std::env::var_os("PAI_CRASH_CHILD") {
        child(Path::new(&path));
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("crash.db");
    let mut seed = 0x5eed_u64;
    let mut acknowledged = 0;
    for round in 0..12 {
        let lines = 1 + next(&mut seed) % 40;
        let mut child = Command::new(std::env::current_exe().expect("this test binary"))
            .args([
                "--exact",
                "crash_sqlite::x3_a_killed_writer_loses_no_commit_and_leaves_no_half_mutation",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("PAI_CRASH_CHILD", &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the child starts");
        let mut reports = BufReader::new(child.stdout.take().expect("piped")).lines();
        let mut seen = 0;
        while seen < lines {
            let Some(line) = reports.next() else { break };
            if let Some(v) = read_report(&line.expect("a line")) {
                acknowledged = v;
                seen += 1;
            }
        }
        // Killed mid-stream: the child is most likely inside its next commit.
        child.kill().expect("killed");
        let _ = child.wait();
        // The child may have committed and reported more between the last
        // line read and the kill: those reports wait in the pipe, and each
        // is a commit the store acknowledged, so read them all.
        for line in reports {
            if let Some(v) = line.ok().as_deref().and_then(read_report) {
                acknowledged = v;
            }
        }
        let thread = inspect(&open(&path)).expect("the thread survives");
        check(&thread, acknowledged);
        acknowledged = thread.version;
        assert!(acknowledged > 0, "round {round} committed nothing");
    }
}
