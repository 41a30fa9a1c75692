//! The thread facade's events (SPEC H2–H5, R1–R3, C1): mutations, refusals,
//! rewrites, deliveries, incarnations and compaction progress.

use schemars::JsonSchema;
use serde::Serialize;

use pai_runtime::{EventKind, Visibility, VisibilityChange};

/// Stored visibility of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VisibilityRecord {
    /// Shown in the transcript.
    pub transcript: bool,
    /// Sent to the model.
    pub context: bool,
}

impl From<Visibility> for VisibilityRecord {
    fn from(v: Visibility) -> Self {
        VisibilityRecord {
            transcript: v.transcript,
            context: v.context,
        }
    }
}

/// One message's visibility before and after a rewrite (SPEC R2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VisibilityChangeRecord {
    pub message: String,
    pub before: VisibilityRecord,
    pub after: VisibilityRecord,
}

impl From<&VisibilityChange> for VisibilityChangeRecord {
    fn from(c: &VisibilityChange) -> Self {
        VisibilityChangeRecord {
            message: c.message.clone(),
            before: c.before.into(),
            after: c.after.into(),
        }
    }
}

/// The fields of a facade event.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum FacadeData {
    /// `mutated`: a mutation committed as one change (SPEC H2).
    Mutated {
        /// The thread's version after it.
        version: u64,
        /// Ids of the messages it appended.
        appended: Vec<String>,
        /// Metadata keys it set or removed.
        metadata: Vec<String>,
        /// Private metadata keys it set or removed (names only, H4).
        private: Vec<String>,
        /// Visibility changes (a rewrite, R1).
        visibility: Vec<VisibilityChangeRecord>,
    },
    /// `mutation_refused`: nothing was committed.
    Refused {
        /// `mutate`, `regenerate` or `set_visibility`.
        op: String,
        /// Why.
        reason: String,
        /// A conflict the caller can retry on (H3).
        conflict: bool,
    },
    /// `history_rewritten`: a rewrite committed (R1, R2).
    Rewritten {
        version: u64,
        /// `regenerate` or `visibility`.
        kind: String,
        /// Messages removed.
        removed: Vec<String>,
        /// Keys the `prepare_history_rewrite` patches wrote.
        patched: Vec<String>,
        /// The run a regeneration started.
        started: Option<String>,
    },
    /// `rewrite_delivered`: `history_rewritten` hooks heard these facts (R3).
    Delivered {
        /// The versions of the rewrites delivered in this one call.
        versions: Vec<u64>,
        /// A hook's failure (dropped: best effort).
        error: Option<String>,
    },
    /// `thread_deleted`: the incarnation ended (H5).
    Deleted {
        incarnation: u64,
        /// Runs cancelled with it.
        cancelled: Vec<String>,
    },
    /// `thread_created`: an incarnation started.
    Created { incarnation: u64 },
    /// `compaction_started`: summarizing up to `through` (C1).
    CompactionStarted {
        step: u32,
        through: u64,
        messages: usize,
    },
    /// `compacted`: summary and cursor committed (C1).
    Compacted {
        step: u32,
        summary: String,
        through: u64,
        version: u64,
    },
    /// `compaction_skipped`: the stored cursor is used as it is.
    CompactionSkipped { step: u32, reason: String },
}

impl FacadeData {
    /// The fields of a facade event; `None` for other events.
    pub fn of(kind: &EventKind) -> Option<FacadeData> {
        Some(match kind.clone() {
            EventKind::Mutated {
                version,
                appended,
                metadata,
                private,
                visibility,
            } => FacadeData::Mutated {
                version,
                appended,
                metadata,
                private,
                visibility: visibility.iter().map(Into::into).collect(),
            },
            EventKind::MutationRefused {
                op,
                reason,
                conflict,
            } => FacadeData::Refused {
                op: op.to_string(),
                reason,
                conflict,
            },
            EventKind::HistoryRewritten {
                version,
                kind,
                removed,
                patched,
                started,
            } => FacadeData::Rewritten {
                version,
                kind: kind.to_string(),
                removed,
                patched,
                started,
            },
            EventKind::RewriteDelivered { versions, error } => {
                FacadeData::Delivered { versions, error }
            }
            EventKind::ThreadDeleted {
                incarnation,
                cancelled,
            } => FacadeData::Deleted {
                incarnation,
                cancelled,
            },
            EventKind::ThreadCreated { incarnation } => FacadeData::Created { incarnation },
            EventKind::CompactionStarted {
                step,
                through,
                messages,
            } => FacadeData::CompactionStarted {
                step,
                through,
                messages,
            },
            EventKind::Compacted {
                step,
                summary,
                through,
                version,
            } => FacadeData::Compacted {
                step,
                summary,
                through,
                version,
            },
            EventKind::CompactionSkipped { step, reason } => {
                FacadeData::CompactionSkipped { step, reason }
            }
            _ => return None,
        })
    }
}
