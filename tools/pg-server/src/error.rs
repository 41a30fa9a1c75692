//! The harness's error type.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

/// Why a server could not be started or a database could not be created.
#[derive(Debug, thiserror::Error)]
pub enum PgServerError {
    /// No `initdb`/`postgres` pair was found and `PAI_REQUIRE_PG` asks for one.
    #[error(
        "PostgreSQL server binaries not found (searched: {searched}); \
         install the `postgresql` package or point PAI_PG_BIN at a folder holding initdb and postgres"
    )]
    NotFound {
        /// The places that were looked at, in order.
        searched: String,
    },
    /// Running as root, but no unprivileged user to run the server as.
    #[error("running as root and no `nobody` user in /etc/passwd to run initdb and postgres as")]
    NoUnprivilegedUser,
    /// A file-system or process operation failed.
    #[error("{action}: {source}")]
    Io {
        /// What was being done, with the path or program concerned.
        action: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// `initdb` exited unsuccessfully.
    #[error("initdb failed ({status}) for {data_dir}:\n{output}")]
    InitDb {
        /// The data directory it was asked to create.
        data_dir: PathBuf,
        /// Its exit status.
        status: ExitStatus,
        /// Its stdout and stderr.
        output: String,
    },
    /// The server process exited before it accepted connections.
    #[error(
        "postgres exited ({status}) before accepting connections; server log tail:\n{log_tail}"
    )]
    Exited {
        /// Its exit status.
        status: ExitStatus,
        /// The last lines of the server log.
        log_tail: String,
    },
    /// The server did not report readiness within the bounded wait.
    #[error("postgres did not accept connections within {waited:?}; server log tail:\n{log_tail}")]
    StartTimeout {
        /// How long the harness waited.
        waited: Duration,
        /// The last lines of the server log.
        log_tail: String,
    },
    /// `createdb` exited unsuccessfully.
    #[error("createdb {name} failed ({status}):\n{output}")]
    CreateDb {
        /// The database name.
        name: String,
        /// Its exit status.
        status: ExitStatus,
        /// Its stdout and stderr.
        output: String,
    },
}

impl PgServerError {
    pub(crate) fn io(action: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            action: action.into(),
            source,
        }
    }
}
