//! The thread facade's store data (SPEC H2, H3, H5, K4, R1, R2): staged
//! writes, what a mutation expects of the stored thread, who writes, and
//! why a store refuses a mutation or a history rewrite.

use crate::id::{MessageId, RunId};
use crate::store::FencingToken;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::record::RunStatus;
use crate::message::{NewMessage, Visibility};

/// What a mutation expects of the stored thread when it commits (SPEC H3).
/// An expectation names the incarnation it was read from: it conflicts
/// once that incarnation is gone, whatever the values (H5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub enum Expect {
    /// Commit whatever changed since the writer read.
    #[default]
    Nothing,
    /// Conflict if any change happened since the thread had this version
    /// (lease renewals included: the strict check).
    Version {
        /// The version the writer read.
        version: u64,
        /// The incarnation the writer read.
        incarnation: u64,
    },
    /// Conflict only if private metadata is no longer this map; other
    /// changes (messages, usage, lease renewals) do not conflict.
    PrivateMetadata {
        /// The private metadata the writer read, whole.
        private: Map<String, Value>,
        /// The incarnation the writer read.
        incarnation: u64,
    },
}

impl Expect {
    /// No change at all since `read` (SPEC H3's strict check).
    pub fn version_of(read: &super::record::StoredThread) -> Expect {
        Expect::Version {
            version: read.version,
            incarnation: read.incarnation,
        }
    }

    /// No change of private metadata since `read`.
    pub fn private_metadata_of(read: &super::record::StoredThread) -> Expect {
        Expect::PrivateMetadata {
            private: read.private_metadata.clone(),
            incarnation: read.incarnation,
        }
    }
}

/// One staged write of a mutation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Write {
    /// Appends a message (the store numbers it at commit).
    Append(NewMessage),
    /// Sets (`Some`) or removes (`None`) a key of the client-readable metadata.
    Metadata {
        /// The key.
        key: String,
        /// The new value; `None` removes the key.
        value: Option<Value>,
    },
    /// Sets or removes a key of the private metadata (never sent to clients, H4).
    PrivateMetadata {
        /// The key.
        key: String,
        /// The new value; `None` removes the key.
        value: Option<Value>,
    },
    /// Changes a stored message's visibility (a visibility rewrite, R1).
    Visibility {
        /// The message, by id.
        message: MessageId,
        /// Its new visibility.
        visibility: Visibility,
    },
}

impl Write {
    /// Whether this write rewrites history (SPEC R1, K4).
    pub fn rewrites(&self) -> bool {
        matches!(self, Write::Visibility { .. })
    }
}

/// Who commits a mutation: trusted server code, or a run under its lease
/// token (SPEC K2, H7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Writer {
    /// Trusted server code (the admin API, SPEC H7): no lease, no fencing.
    Trusted,
    /// A run's lease holder: the write lands only under the thread's newest
    /// token (SPEC K2).
    Run {
        /// The run writing.
        run: RunId,
        /// The lease token it holds.
        token: FencingToken,
    },
}

/// Why a mutation or rewrite committed nothing, though the store was reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum Refusal {
    /// The expectation no longer holds (SPEC H3): read again and retry.
    /// The thread is at `version` of `incarnation` (an expectation read
    /// from another incarnation conflicts, H5); `private_changed` says a
    /// private-metadata expectation found other values (false when only
    /// the incarnation differs).
    #[error("conflict: the thread is at version {version} of incarnation {incarnation}{}", if *.private_changed { ", and its private metadata changed" } else { "" })]
    Conflict {
        /// The thread's version now.
        version: u64,
        /// The thread's incarnation now.
        incarnation: u64,
        /// Whether private metadata differs from what a private-metadata
        /// expectation named.
        private_changed: bool,
    },
    /// A history rewrite found a run holding or owed the thread (SPEC K4):
    /// a running or waiting run (its pending calls must keep their
    /// messages), or for a regeneration a queued run.
    #[error("run {run} is {} on this thread: a history rewrite must wait until it ends or is cancelled", .status.as_str())]
    Busy {
        /// The run.
        run: RunId,
        /// Its status: running, waiting, or (for a regeneration) queued.
        status: RunStatus,
    },
    /// A write names a message the thread does not have.
    #[error("message {message} is not in the thread")]
    NoMessage {
        /// The message named.
        message: MessageId,
    },
    /// A regeneration must start from a user message.
    #[error("message {message} is not a user message: a regeneration starts from one")]
    NotUserMessage {
        /// The message named.
        message: MessageId,
    },
}

/// What a committed mutation did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mutation {
    /// The thread's version after it (unchanged when nothing was staged).
    pub version: u64,
    /// The thread's incarnation it committed to.
    pub incarnation: u64,
    /// Ids of the messages it appended, in order.
    pub appended: Vec<MessageId>,
    /// The visibility changes it made (a rewrite when not empty).
    pub changed: Vec<VisibilityChange>,
}

/// One message's visibility before and after a rewrite (SPEC R2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct VisibilityChange {
    /// The message.
    pub message: MessageId,
    /// Its visibility before.
    pub before: Visibility,
    /// Its visibility after.
    pub after: Visibility,
}

/// What a committed regeneration did (SPEC R1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Regeneration {
    /// The thread's version after it.
    pub version: u64,
    /// The thread's incarnation it committed to.
    pub incarnation: u64,
    /// The run it started, queued behind nothing.
    pub run: RunId,
    /// The user message the run starts from: the last message kept.
    pub from: MessageId,
    /// Ids of the messages it removed, in order.
    pub removed: Vec<MessageId>,
}

/// What deleting a thread did (SPEC H5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deletion {
    /// The incarnation that is gone.
    pub incarnation: u64,
    /// Every run that had not ended, each now cancelled (reason `deleted`),
    /// with the status it had.
    pub cancelled: Vec<(RunId, RunStatus)>,
    /// The thread's version after the delete's commit (SPEC H1).
    pub version: u64,
}

/// The reason a deleted thread's runs end with.
pub const DELETED: &str = "deleted";
