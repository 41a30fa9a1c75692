//! What the history-rewrite phases receive and return (SPEC L11, R2, R3):
//! `prepare_history_rewrite` sees the rewrite about to commit and returns
//! metadata patches committed in the same transaction; `history_rewritten`
//! hears, after commit, the facts of rewrites that happened.

use serde_json::{Map, Value};

use crate::id::MessageId;
use crate::store::{StoredThread, VisibilityChange, Write};

/// A history rewrite (SPEC R2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewriteKind {
    /// History after user message `from` is removed and a new run starts from it.
    Regenerate {
        /// The user message the new run answers again.
        from: MessageId,
        /// The messages removed: every message after `from`, oldest first.
        removed: Vec<MessageId>,
    },
    /// Trusted code changed stored visibility of these messages.
    Visibility {
        /// The changes, one per message, in the order they were asked.
        changes: Vec<VisibilityChange>,
    },
}

impl RewriteKind {
    /// The rewrite's name in the event log (`regenerate`, `visibility`).
    pub fn name(&self) -> &'static str {
        match self {
            RewriteKind::Regenerate { .. } => "regenerate",
            RewriteKind::Visibility { .. } => "visibility",
        }
    }
}

/// What `prepare_history_rewrite` is given: the rewrite, and the thread as
/// stored before it (trusted server code: private metadata included).
#[derive(Debug)]
pub struct RewriteInput<'a> {
    /// The rewrite about to commit.
    pub kind: &'a RewriteKind,
    /// The thread as stored before it, private metadata included.
    pub thread: &'a StoredThread,
}

/// Metadata patches a hook wants committed with the rewrite: each key set
/// to `Some(value)` or removed with `None`. Later hooks' keys win (L11).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RewritePatch {
    /// Client-readable metadata keys to set.
    pub metadata: Map<String, Value>,
    /// Private (server-only) metadata keys to set.
    pub private_metadata: Map<String, Value>,
    /// Keys to remove: `(private, key)`.
    pub removed: Vec<(bool, String)>,
}

impl RewritePatch {
    /// Whether the patch changes nothing (no commit is needed for it).
    pub fn is_empty(&self) -> bool {
        self.metadata.is_empty() && self.private_metadata.is_empty() && self.removed.is_empty()
    }

    /// Sets a client-readable metadata key.
    pub fn set(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// Sets a private metadata key.
    pub fn set_private(mut self, key: impl Into<String>, value: Value) -> Self {
        self.private_metadata.insert(key.into(), value);
        self
    }

    /// Removes a key (`private` says which map).
    pub fn remove(mut self, private: bool, key: impl Into<String>) -> Self {
        self.removed.push((private, key.into()));
        self
    }

    /// Folds a later hook's patch in: its keys win (SPEC L11).
    pub(crate) fn then(&mut self, later: RewritePatch) {
        for (private, key) in later.removed {
            let map = match private {
                true => &mut self.private_metadata,
                false => &mut self.metadata,
            };
            map.remove(&key);
            self.removed.retain(|(p, k)| !(*p == private && *k == key));
            self.removed.push((private, key));
        }
        for (k, v) in later.metadata {
            self.removed.retain(|(p, key)| *p || *key != k);
            self.metadata.insert(k, v);
        }
        for (k, v) in later.private_metadata {
            self.removed.retain(|(p, key)| !*p || *key != k);
            self.private_metadata.insert(k, v);
        }
    }

    /// The patch as store writes, in a fixed order.
    pub(crate) fn into_writes(self) -> Vec<Write> {
        let mut writes = Vec::new();
        for (private, key) in self.removed {
            writes.push(match private {
                true => Write::PrivateMetadata { key, value: None },
                false => Write::Metadata { key, value: None },
            });
        }
        for (key, v) in self.metadata {
            writes.push(Write::Metadata {
                key,
                value: Some(v),
            });
        }
        for (key, v) in self.private_metadata {
            writes.push(Write::PrivateMetadata {
                key,
                value: Some(v),
            });
        }
        writes
    }
}

/// A committed rewrite, as `history_rewritten` hears it (SPEC R3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewriteFact {
    /// The thread's version the rewrite committed.
    pub version: u64,
    /// The incarnation of the thread the rewrite happened to: a thread deleted
    /// and created again is a new incarnation (SPEC H5).
    pub incarnation: u64,
    /// What was rewritten.
    pub kind: RewriteKind,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SPEC L11: patches merge in composition order; a later hook's key wins,
    /// whether it sets or removes it.
    #[test]
    fn l11_later_patches_win() {
        let mut p = RewritePatch::default()
            .set("a", Value::from(1))
            .set_private("c", Value::from(1));
        p.then(
            RewritePatch::default()
                .set("a", Value::from(2))
                .remove(true, "c"),
        );
        assert_eq!(p.metadata.get("a"), Some(&Value::from(2)));
        assert!(p.private_metadata.is_empty());
        assert_eq!(p.removed, vec![(true, "c".to_string())]);
        p.then(RewritePatch::default().set_private("c", Value::from(3)));
        assert!(p.removed.is_empty());
        let writes = p.into_writes();
        assert_eq!(writes.len(), 2);
    }
}
