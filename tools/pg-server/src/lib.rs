//! A throwaway PostgreSQL server for tests.
//!
//! [`PgServer::start`] runs `initdb` in a fresh folder under `/tmp`, starts
//! `postgres` listening on a unix socket in that folder only (no TCP), and
//! waits until it accepts connections. Dropping the handle shuts the server
//! down (fast shutdown, then SIGKILL) and removes the folder. Each server has
//! its own folder, socket and port, so tests may start servers in parallel.
//!
//! When running as root the server programs run as `nobody` (initdb and
//! postgres refuse root). Connections use the superuser `postgres` with
//! trust auth.
//!
//! Binaries: `PAI_PG_BIN` (a folder holding `initdb`, `postgres` and
//! `createdb`) if set, else the newest `/usr/lib/postgresql/<version>/bin`,
//! else `PATH`. When none is found, `start` returns `Ok(None)` after a
//! one-line skip message, unless `PAI_REQUIRE_PG` is set (CI sets it), in
//! which case it fails.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

mod error;
mod find;
mod process;

pub use error::PgServerError;

use process::{Launch, RunAs, TempFolder};

/// How long `start` waits for the server to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `drop` waits after a fast shutdown before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Ports are only socket-file names here (no TCP); distinct per server anyway.
const PORT_BASE: u16 = 40_000;

/// How [`PgServer::start_with`] finds binaries and what it does without them.
#[derive(Debug, Clone)]
pub struct PgServerOptions {
    /// Folder holding `initdb`, `postgres` and `createdb`; the only place
    /// looked at when set. `None` searches `/usr/lib/postgresql/*/bin`, then
    /// `PATH`.
    pub bin_dir: Option<PathBuf>,
    /// Fail with [`PgServerError::NotFound`] instead of skipping when no
    /// binaries are found.
    pub require: bool,
    /// The server's `max_connections`.
    pub max_connections: u32,
}

impl Default for PgServerOptions {
    fn default() -> Self {
        Self {
            bin_dir: None,
            require: false,
            max_connections: 64,
        }
    }
}

impl PgServerOptions {
    /// Options from `PAI_PG_BIN` and `PAI_REQUIRE_PG` (set to anything but
    /// "" or "0" means required).
    pub fn from_env() -> Self {
        Self::from_vars(|key| std::env::var_os(key))
    }

    fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Self {
        let bin_dir = var("PAI_PG_BIN")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from);
        let require = var("PAI_REQUIRE_PG").is_some_and(|v| !v.is_empty() && v != "0");
        Self {
            bin_dir,
            require,
            ..Self::default()
        }
    }
}

/// A running PostgreSQL server; dropping it stops the server and removes
/// its folder.
#[derive(Debug)]
pub struct PgServer {
    child: Child,
    bin_dir: PathBuf,
    data_dir: PathBuf,
    log_path: PathBuf,
    port: u16,
    // Dropped after `Drop::drop` has stopped the server.
    folder: TempFolder,
}

impl PgServer {
    /// Starts a server with [`PgServerOptions::from_env`]; `Ok(None)` when
    /// no binaries are found and they are not required.
    pub fn start() -> Result<Option<Self>, PgServerError> {
        Self::start_with(&PgServerOptions::from_env())
    }

    /// Starts a server with explicit options (no environment lookups but
    /// `PATH` when `bin_dir` is `None`).
    pub fn start_with(options: &PgServerOptions) -> Result<Option<Self>, PgServerError> {
        let found = find::find_bin_dir(
            options.bin_dir.as_deref(),
            Path::new(find::DEBIAN_ROOT),
            std::env::var_os("PATH"),
        );
        let Some(bin_dir) = found.bin_dir else {
            let searched = found.searched.join(", ");
            if options.require {
                return Err(PgServerError::NotFound { searched });
            }
            // Straight to the stderr handle, in one write, not `eprintln!`:
            // the test harness captures the macro's output of passing tests,
            // and the skip must be visible.
            let line = format!(
                "pai-pg-server: skipping, no PostgreSQL server binaries found (searched: {searched}); \
                 install the `postgresql` package or set PAI_PG_BIN, and set PAI_REQUIRE_PG=1 to fail instead\n"
            );
            let _ = std::io::stderr().write_all(line.as_bytes());
            return Ok(None);
        };
        Self::launch(bin_dir, options.max_connections).map(Some)
    }

    fn launch(bin_dir: PathBuf, max_connections: u32) -> Result<Self, PgServerError> {
        let run_as: Option<RunAs> = process::run_as()?;
        let folder = TempFolder::create(run_as)?;
        let data_dir = folder.path().join("data");
        let log_path = folder.path().join("server.log");
        process::init_db(&bin_dir, folder.path(), &data_dir, run_as)?;
        let port = PORT_BASE + u16::try_from(folder.serial % 10_000).unwrap_or(0);
        let mut child = process::spawn_postgres(&Launch {
            bin_dir: &bin_dir,
            folder: folder.path(),
            data_dir: &data_dir,
            log_path: &log_path,
            port,
            max_connections,
            run_as,
        })?;
        if let Err(e) = process::wait_ready(&mut child, &data_dir, &log_path, START_TIMEOUT) {
            process::stop(&mut child, STOP_TIMEOUT);
            return Err(e);
        }
        Ok(Self {
            child,
            bin_dir,
            data_dir,
            log_path,
            port,
            folder,
        })
    }

    /// The folder holding the server's unix socket (`.s.PGSQL.<port>`).
    pub fn socket_dir(&self) -> &Path {
        self.folder.path()
    }

    /// The port, which here only names the socket file.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The superuser to connect as (trust auth, no password).
    pub fn user(&self) -> &str {
        process::SUPERUSER
    }

    /// The postmaster's process id (for crash tests).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The cluster's data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The last lines of the server log, for failure messages.
    pub fn log_tail(&self) -> String {
        process::log_tail(&self.log_path)
    }

    /// A libpq-style connection string for `dbname`, which
    /// `tokio_postgres::connect` accepts (`host=/path` is a unix socket).
    pub fn connection_string(&self, dbname: &str) -> String {
        format!(
            "host={} port={} user={} dbname={}",
            quote(&self.socket_dir().to_string_lossy()),
            self.port,
            quote(self.user()),
            quote(dbname)
        )
    }

    /// A `tokio_postgres::Config` for `dbname` over the unix socket.
    pub fn config(&self, dbname: &str) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host_path(self.socket_dir())
            .port(self.port)
            .user(self.user())
            .dbname(dbname);
        config
    }

    /// Creates database `name` (with `createdb`, over the socket).
    pub fn create_database(&self, name: &str) -> Result<(), PgServerError> {
        let output = process::command(&self.bin_dir.join("createdb"), self.socket_dir(), None)
            .arg("--host")
            .arg(self.socket_dir())
            .args(["--port", &self.port.to_string()])
            .args(["--username", self.user(), "--no-password", "--"])
            .arg(name)
            .output()
            .map_err(|e| {
                PgServerError::io(format!("running {}/createdb", self.bin_dir.display()), e)
            })?;
        if output.status.success() {
            return Ok(());
        }
        Err(PgServerError::CreateDb {
            name: name.to_owned(),
            status: output.status,
            output: process::printed(&output),
        })
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        process::stop(&mut self.child, STOP_TIMEOUT);
    }
}

/// Quotes a connection-string value: `'...'` with `\` and `'` escaped.
fn quote(value: &str) -> String {
    let escaped = value.replace('\\', "\\\\").replace('\'', "\\'");
    format!("'{escaped}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |key| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn env_options() {
        let none = PgServerOptions::from_vars(vars(&[]));
        assert!(!none.require && none.bin_dir.is_none());
        let set =
            PgServerOptions::from_vars(vars(&[("PAI_PG_BIN", "/x/bin"), ("PAI_REQUIRE_PG", "1")]));
        assert!(set.require);
        assert_eq!(set.bin_dir.as_deref(), Some(Path::new("/x/bin")));
        let off = PgServerOptions::from_vars(vars(&[("PAI_PG_BIN", ""), ("PAI_REQUIRE_PG", "0")]));
        assert!(!off.require && off.bin_dir.is_none());
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(quote(r"it's\"), r"'it\'s\\'");
    }
}
