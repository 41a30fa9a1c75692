//! Injected time and identifiers. The runtime never reads the OS clock or OS randomness.

/// Milliseconds since the clock's epoch.
pub type Millis = u64;

/// The runtime's only source of time, and its only timer.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Millis;

    /// Resolves after `ms` milliseconds of this clock's time.
    fn sleep(&self, ms: Millis) -> crate::future::HookFuture<'static, ()>;
}

/// What an identifier names; lets an id source give each kind its own prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdKind {
    Run,
    Message,
    Thread,
    ToolCall,
}

impl IdKind {
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
    fn next_id(&self, kind: IdKind) -> String;
}
