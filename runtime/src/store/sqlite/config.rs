//! How a SQLite store keeps its database: durability and caching.

/// How hard a commit works to survive a crash (SQLite's `synchronous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Every commit reaches the disk before it is answered: nothing
    /// answered is lost to a crash of the process or of the machine.
    #[default]
    Full,
    /// A commit survives a crash of the process; the machine losing power
    /// may lose the last commits (never half of one).
    Normal,
    /// No syncing: for tests and simulations only.
    Off,
}

/// How a [`SqliteStore`](crate::store::SqliteStore) keeps its database.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteConfig {
    /// How hard a commit works to survive a crash ([`Durability::Full`] by
    /// default).
    pub durability: Durability,
    /// Threads kept decoded in memory between requests (0: every request
    /// reads its thread back from the database).
    pub cached_threads: usize,
}

impl Default for SqliteConfig {
    fn default() -> Self {
        SqliteConfig {
            durability: Durability::Full,
            cached_threads: 1024,
        }
    }
}

impl SqliteConfig {
    /// This configuration with `durability`.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// This configuration keeping up to `threads` threads decoded in memory
    /// (1024 by default; 0 reads every thread back from the database).
    pub fn cached_threads(mut self, threads: usize) -> Self {
        self.cached_threads = threads;
        self
    }
}
