//! Injected time and identifiers. The runtime never reads the OS clock or OS randomness.

/// Milliseconds since the clock's epoch.
pub type Millis = u64;

/// The runtime's only source of time, and its only timer.
pub trait Clock: Send + Sync + 'static {
    /// The current time, in milliseconds since the clock's epoch: every
    /// event and stored timestamp is read here.
    fn now(&self) -> Millis;

    /// Resolves after `ms` milliseconds of this clock's time.
    fn sleep(&self, ms: Millis) -> crate::future::HookFuture<'static, ()>;
}

/// What an identifier names; lets an id source give each kind its own prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdKind {
    /// A run: one answer to one user message (prefix `run`).
    Run,
    /// A stored message (prefix `msg`).
    Message,
    /// A thread (prefix `thr`).
    Thread,
    /// A model's tool call (prefix `call`).
    ToolCall,
}

impl IdKind {
    /// The prefix an id source may give ids of this kind (`run`, `msg`, `thr`,
    /// `call`).
    pub fn prefix(self) -> &'static str {
        match self {
            IdKind::Run => "run",
            IdKind::Message => "msg",
            IdKind::Thread => "thr",
            IdKind::ToolCall => "call",
        }
    }
}

/// The runtime's only source of identifiers.
pub trait IdSource: Send + Sync + 'static {
    /// A new identifier of `kind`, distinct from every id this source gave
    /// before; a deterministic source makes runs reproducible.
    fn next_id(&self, kind: IdKind) -> String;
}
