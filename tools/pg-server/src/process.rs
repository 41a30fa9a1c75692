//! The pieces of starting and stopping a server: the temporary folder, the
//! unprivileged user, `initdb`, the `postgres` process and its readiness.

use std::fs::{self, DirBuilder, File};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::PgServerError;

/// Parent of the temporary folders. Fixed and short on purpose: the socket
/// path (`<folder>/.s.PGSQL.<port>`) must fit in `sun_path` (~107 bytes),
/// which a long `$TMPDIR` could overflow.
const TMP_PARENT: &str = "/tmp";

/// The superuser initdb creates; every connection uses it (trust auth).
pub(crate) const SUPERUSER: &str = "postgres";

/// How often readiness and exit are polled.
const POLL: Duration = Duration::from_millis(5);

/// Distinguishes the servers of one process.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// A uid/gid pair to run the server programs as.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunAs {
    uid: u32,
    gid: u32,
}

/// The user to run `initdb` and `postgres` as: `nobody` when running as
/// root (both refuse root), the current user otherwise.
pub(crate) fn run_as() -> Result<Option<RunAs>, PgServerError> {
    if !rustix::process::geteuid().is_root() {
        return Ok(None);
    }
    let passwd = fs::read_to_string("/etc/passwd")
        .map_err(|e| PgServerError::io("reading /etc/passwd", e))?;
    passwd
        .lines()
        .find_map(|line| {
            let mut fields = line.split(':');
            (fields.next()? == "nobody").then_some(())?;
            let uid = fields.nth(1)?.parse().ok()?;
            let gid = fields.next()?.parse().ok()?;
            Some(RunAs { uid, gid })
        })
        .map(Some)
        .ok_or(PgServerError::NoUnprivilegedUser)
}

/// A fresh folder under [`TMP_PARENT`], removed on drop.
#[derive(Debug)]
pub(crate) struct TempFolder {
    path: PathBuf,
    /// Which server of this process it is; also picks the port.
    pub(crate) serial: u32,
}

impl TempFolder {
    /// Creates `/tmp/pai-pg-<pid>-<n>` with mode 0700, owned by `run_as`.
    pub(crate) fn create(run_as: Option<RunAs>) -> Result<Self, PgServerError> {
        let pid = std::process::id();
        loop {
            let serial = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = Path::new(TMP_PARENT).join(format!("pai-pg-{pid}-{serial}"));
            match DirBuilder::new().mode(0o700).create(&path) {
                // Left over by an earlier process with the same pid.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(PgServerError::io(format!("creating {}", path.display()), e)),
                Ok(()) => {}
            }
            let folder = Self { path, serial };
            if let Some(user) = run_as {
                std::os::unix::fs::chown(&folder.path, Some(user.uid), Some(user.gid)).map_err(
                    |e| PgServerError::io(format!("chown {}", folder.path.display()), e),
                )?;
            }
            return Ok(folder);
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempFolder {
    fn drop(&mut self) {
        // Best effort: a failure leaves a folder in /tmp, nothing worse.
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// A command for one of the PostgreSQL programs: run as `run_as`, in `cwd`
/// (the test's own working directory may be unreadable for `nobody`), with
/// no inherited `PG*` variables and the C locale.
pub(crate) fn command(program: &Path, cwd: &Path, run_as: Option<RunAs>) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(cwd).env("LC_ALL", "C").stdin(Stdio::null());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PG") {
            cmd.env_remove(key);
        }
    }
    if let Some(user) = run_as {
        // std clears the supplementary groups when root drops its uid.
        cmd.uid(user.uid).gid(user.gid);
    }
    cmd
}

/// Runs `initdb` for `data_dir`: trust auth, UTF8, locale C.
/// What a finished program printed: its stdout, then its stderr.
pub(crate) fn printed(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub(crate) fn init_db(
    bin_dir: &Path,
    folder: &Path,
    data_dir: &Path,
    run_as: Option<RunAs>,
) -> Result<(), PgServerError> {
    let output = command(&bin_dir.join("initdb"), folder, run_as)
        .arg("--pgdata")
        .arg(data_dir)
        .args(["--auth=trust", "--encoding=UTF8", "--locale=C"])
        .arg(format!("--username={SUPERUSER}"))
        // Skips fsyncing the fresh cluster (≈ no cost on tmpfs, helps on
        // disks); the running server keeps fsync on.
        .arg("--no-sync")
        .output()
        .map_err(|e| PgServerError::io(format!("running {}/initdb", bin_dir.display()), e))?;
    if output.status.success() {
        return Ok(());
    }
    Err(PgServerError::InitDb {
        data_dir: data_dir.to_path_buf(),
        status: output.status,
        output: printed(&output),
    })
}

/// What `spawn_postgres` needs to know.
#[derive(Debug)]
pub(crate) struct Launch<'a> {
    pub(crate) bin_dir: &'a Path,
    pub(crate) folder: &'a Path,
    pub(crate) data_dir: &'a Path,
    pub(crate) log_path: &'a Path,
    pub(crate) port: u16,
    pub(crate) max_connections: u32,
    pub(crate) run_as: Option<RunAs>,
}

/// Starts `postgres` listening only on a socket in `folder`, its output
/// going to `log_path`.
pub(crate) fn spawn_postgres(launch: &Launch<'_>) -> Result<Child, PgServerError> {
    let log = File::create(launch.log_path)
        .map_err(|e| PgServerError::io(format!("creating {}", launch.log_path.display()), e))?;
    let log_err = log
        .try_clone()
        .map_err(|e| PgServerError::io("duplicating the log file handle", e))?;
    command(
        &launch.bin_dir.join("postgres"),
        launch.folder,
        launch.run_as,
    )
    .arg("-D")
    .arg(launch.data_dir)
    .arg("-k")
    .arg(launch.folder)
    .args(["-p", &launch.port.to_string()])
    .args(["-c", "listen_addresses="])
    .args(["-c", &format!("max_connections={}", launch.max_connections)])
    .args(["-c", "shared_buffers=16MB", "-c", "fsync=on"])
    .stdout(log)
    .stderr(log_err)
    .spawn()
    .map_err(|e| PgServerError::io(format!("running {}/postgres", launch.bin_dir.display()), e))
}

/// Polls until `postmaster.pid` says "ready" (the server accepts
/// connections), the process exits, or `timeout` passes.
pub(crate) fn wait_ready(
    child: &mut Child,
    data_dir: &Path,
    log_path: &Path,
    timeout: Duration,
) -> Result<(), PgServerError> {
    let pid_file = data_dir.join("postmaster.pid");
    let started = Instant::now();
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| PgServerError::io("waiting for postgres", e))?
        {
            let log_tail = log_tail(log_path);
            return Err(PgServerError::Exited { status, log_tail });
        }
        // Line 8 of postmaster.pid is the status: starting, ready, stopping.
        let ready = fs::read_to_string(&pid_file)
            .is_ok_and(|text| text.lines().nth(7).is_some_and(|s| s.trim() == "ready"));
        if ready {
            return Ok(());
        }
        if started.elapsed() >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            let log_tail = log_tail(log_path);
            return Err(PgServerError::StartTimeout {
                waited: timeout,
                log_tail,
            });
        }
        std::thread::sleep(POLL);
    }
}

/// Fast shutdown (SIGINT), then SIGKILL if it has not exited in `timeout`.
pub(crate) fn stop(child: &mut Child, timeout: Duration) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
    }
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(POLL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The last 40 lines of the server log, or why it could not be read.
pub(crate) fn log_tail(log_path: &Path) -> String {
    match fs::read_to_string(log_path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(40)..].join("\n")
        }
        Err(e) => format!("(could not read {}: {e})", log_path.display()),
    }
}
