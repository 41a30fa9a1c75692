//! What a mutation's closure gets (SPEC H2): the thread as stored when the
//! mutation began (reads never see staged writes) and the writes it stages;
//! and what a facade operation can fail with (H3, K4, H5). A leaf: the
//! facade, hooks and the compaction helper all use it.

use serde_json::Value;

use crate::clock::{IdKind, IdSource, Millis};
use crate::id::MessageId;
use crate::message::{NewMessage, PaiMeta, Part, Producer, Role, Visibility};
use crate::store::{Refusal, StoreError, StoredThread, Write};

/// The staging area of one mutation.
pub struct Staged<'a> {
    stored: &'a StoredThread,
    ids: &'a dyn IdSource,
    now: Millis,
    run: Option<&'a str>,
    pub(crate) writes: Vec<Write>,
}

impl std::fmt::Debug for Staged<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staged")
            .field("thread", &self.stored.id)
            .field("writes", &self.writes)
            .finish()
    }
}

impl<'a> Staged<'a> {
    pub(crate) fn new(
        stored: &'a StoredThread,
        ids: &'a dyn IdSource,
        now: Millis,
        run: Option<&'a str>,
    ) -> Staged<'a> {
        Staged {
            stored,
            ids,
            now,
            run,
            writes: Vec::new(),
        }
    }

    /// The thread as stored when the mutation began, not its staged writes.
    pub fn thread(&self) -> &StoredThread {
        self.stored
    }

    /// Stages a text message; returns its id.
    pub fn append(
        &mut self,
        role: Role,
        text: impl Into<String>,
        visibility: Visibility,
    ) -> MessageId {
        let producer = match (self.run, role) {
            (_, Role::User) => Producer::User,
            (Some(_), _) => Producer::Lifecycle,
            (None, _) => Producer::Runtime,
        };
        self.append_as(producer, role, text, visibility)
    }

    /// Stages a text message with an explicit producer; returns its id.
    pub fn append_as(
        &mut self,
        producer: Producer,
        role: Role,
        text: impl Into<String>,
        visibility: Visibility,
    ) -> MessageId {
        let id = MessageId::new(self.ids.next_id(IdKind::Message));
        self.writes.push(Write::Append(NewMessage {
            id: id.clone(),
            role,
            parts: vec![Part::text(text.into())],
            visibility,
            pai: PaiMeta::new(producer, self.run, None, self.now),
        }));
        id
    }

    /// Sets a client-readable metadata key.
    pub fn set_metadata(&mut self, key: impl Into<String>, value: Value) {
        self.writes.push(Write::Metadata {
            key: key.into(),
            value: Some(value),
        });
    }

    /// Removes a client-readable metadata key (nothing if it is not set).
    pub fn remove_metadata(&mut self, key: impl Into<String>) {
        self.writes.push(Write::Metadata {
            key: key.into(),
            value: None,
        });
    }

    /// Sets a private metadata key (server side only, SPEC H4).
    pub fn set_private(&mut self, key: impl Into<String>, value: Value) {
        self.writes.push(Write::PrivateMetadata {
            key: key.into(),
            value: Some(value),
        });
    }

    /// Removes a private metadata key (server side only, SPEC H4; nothing if it
    /// is not set).
    pub fn remove_private(&mut self, key: impl Into<String>) {
        self.writes.push(Write::PrivateMetadata {
            key: key.into(),
            value: None,
        });
    }

    /// Changes a stored message's visibility: the mutation becomes a
    /// visibility rewrite (SPEC R1, K4).
    pub fn set_visibility(&mut self, message: impl Into<MessageId>, visibility: Visibility) {
        self.writes.push(Write::Visibility {
            message: message.into(),
            visibility,
        });
    }
}

/// Why a mutation or rewrite committed nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MutateError {
    /// The store refused it (SPEC H3 conflict, K4 active run, a missing
    /// message): nothing changed. A conflict can be retried after reading again.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The closure returned an error or panicked: nothing was committed (H2).
    #[error("the mutation was abandoned: {0}")]
    Aborted(String),
    /// A `prepare_history_rewrite` hook failed: the rewrite was not committed.
    #[error("prepare_history_rewrite refused the rewrite: {0}")]
    Hook(String),
    /// The store failed the request, or refused it on other grounds than a
    /// [`Refusal`] (no such thread, another identity's); when the store was
    /// unavailable, the mutation may or may not have committed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl MutateError {
    /// Whether reading again and retrying may succeed (SPEC H3).
    pub fn is_conflict(&self) -> bool {
        matches!(self, MutateError::Refused(Refusal::Conflict { .. }))
    }
}
