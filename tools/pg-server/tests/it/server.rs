//! Starts real servers (skipped, with a message, when no PostgreSQL binaries
//! are installed and PAI_REQUIRE_PG is unset).

use std::path::PathBuf;
use std::time::Instant;

use pai_pg_server::{PgServer, PgServerError, PgServerOptions};
use tokio_postgres::{Client, NoTls};

/// A server, or `None` to skip the test.
fn server() -> Option<PgServer> {
    let started = Instant::now();
    let server = PgServer::start().expect("starting a PostgreSQL server")?;
    eprintln!("server started in {:?}", started.elapsed());
    Some(server)
}

async fn connect(config: &tokio_postgres::Config) -> Client {
    let (client, connection) = config.connect(NoTls).await.expect("connecting");
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            panic!("connection error: {e}");
        }
    });
    client
}

#[tokio::test]
async fn select_one_and_a_table() {
    let Some(server) = server() else { return };
    let client = connect(&server.config("postgres")).await;
    let one: i32 = client.query_one("SELECT 1", &[]).await.unwrap().get(0);
    assert_eq!(one, 1);

    server.create_database("app").unwrap();
    let app = connect(&server.config("app")).await;
    app.batch_execute("CREATE TABLE t (id bigint PRIMARY KEY, body text NOT NULL)")
        .await
        .unwrap();
    app.execute(
        "INSERT INTO t VALUES ($1, $2), ($3, $4)",
        &[&1i64, &"one", &2i64, &"two"],
    )
    .await
    .unwrap();
    let rows = app
        .query("SELECT id, body FROM t ORDER BY id", &[])
        .await
        .unwrap();
    let got: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, [(1, "one".to_owned()), (2, "two".to_owned())]);
    let db: String = app
        .query_one("SELECT current_database()", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(db, "app");
}

#[tokio::test]
async fn connection_string_form_connects() {
    let Some(server) = server() else { return };
    let text = server.connection_string("postgres");
    assert!(text.starts_with("host='/tmp/"), "{text}");
    let (client, connection) = tokio_postgres::connect(&text, NoTls).await.expect(&text);
    tokio::spawn(connection);
    let user: String = client
        .query_one("SELECT current_user", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(user, server.user());
    let fsync: String = client.query_one("SHOW fsync", &[]).await.unwrap().get(0);
    assert_eq!(fsync, "on");
    let tcp: String = client
        .query_one("SHOW listen_addresses", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(tcp, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_connections_at_once() {
    let Some(server) = server() else { return };
    let config = server.config("postgres");
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let config = config.clone();
            tokio::spawn(async move {
                let client = connect(&config).await;
                let n: i32 = client
                    .query_one("SELECT $1::int", &[&i])
                    .await
                    .unwrap()
                    .get(0);
                assert_eq!(n, i);
                client
            })
        })
        .collect();
    let mut clients = Vec::new();
    for task in tasks {
        clients.push(task.await.unwrap());
    }
    assert_eq!(clients.len(), 32);
}

#[test]
fn two_servers_in_parallel_are_separate() {
    let threads: Vec<_> = (0..2)
        .map(|i: i32| {
            std::thread::spawn(move || {
                let server = server()?;
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    let client = connect(&server.config("postgres")).await;
                    client
                        .batch_execute("CREATE TABLE mark (n int)")
                        .await
                        .unwrap();
                    client
                        .execute("INSERT INTO mark VALUES ($1)", &[&i])
                        .await
                        .unwrap();
                    let all: Vec<i32> = client
                        .query("SELECT n FROM mark", &[])
                        .await
                        .unwrap()
                        .iter()
                        .map(|r| r.get(0))
                        .collect();
                    assert_eq!(all, [i]);
                });
                Some(server)
            })
        })
        .collect();
    let servers: Vec<Option<PgServer>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let [Some(a), Some(b)] = &servers[..] else {
        return;
    };
    assert_ne!(a.socket_dir(), b.socket_dir());
    assert_ne!(a.port(), b.port());
    assert_ne!(a.pid(), b.pid());
}

#[test]
fn drop_stops_the_server_and_removes_its_folder() {
    let Some(server) = server() else { return };
    let folder = server.socket_dir().to_path_buf();
    let proc_dir = PathBuf::from(format!("/proc/{}", server.pid()));
    assert!(folder.join("data/PG_VERSION").exists());
    assert!(proc_dir.exists());
    let stopping = Instant::now();
    drop(server);
    eprintln!("server stopped in {:?}", stopping.elapsed());
    assert!(!folder.exists(), "{} still exists", folder.display());
    assert!(!proc_dir.exists(), "postmaster still running");
}

#[test]
fn killed_server_is_still_cleaned_up() {
    let Some(server) = server() else { return };
    let folder = server.socket_dir().to_path_buf();
    let status = std::process::Command::new("kill")
        .args(["-KILL", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    drop(server);
    assert!(!folder.exists());
}

#[test]
fn no_binaries_skips_unless_required() {
    let empty = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pai-pg-empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let mut options = PgServerOptions {
        bin_dir: Some(empty),
        ..PgServerOptions::default()
    };
    assert!(PgServer::start_with(&options).unwrap().is_none());
    options.require = true;
    match PgServer::start_with(&options) {
        Err(PgServerError::NotFound { searched }) => assert!(searched.contains("pai-pg-empty-bin")),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

#[test]
fn a_server_that_exits_early_reports_its_log() {
    let mut options = PgServerOptions::from_env();
    options.max_connections = 0; // postgres refuses this at startup
    let err = match PgServer::start_with(&options) {
        Ok(None) => return,
        Ok(Some(_)) => panic!("postgres started with max_connections=0"),
        Err(e) => e,
    };
    assert!(matches!(err, PgServerError::Exited { .. }), "{err}");
    assert!(err.to_string().contains("max_connections"), "{err}");
}

#[test]
fn create_database_reports_failure() {
    let Some(server) = server() else { return };
    server.create_database("dup").unwrap();
    let err = server.create_database("dup").unwrap_err();
    assert!(matches!(err, PgServerError::CreateDb { .. }), "{err}");
    assert!(err.to_string().contains("already exists"), "{err}");
}
