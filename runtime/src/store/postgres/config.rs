//! How a Postgres store keeps its tables.

/// How a [`PgStore`](crate::store::PgStore) keeps its tables.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PgOptions {
    /// The Postgres schema every table lives in (created if missing).
    /// Stores on one database with different schemas share nothing.
    pub schema: String,
    /// Threads kept decoded in memory between requests (0: every request
    /// reads its thread back from the database).
    pub cached_threads: usize,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            schema: "pai".into(),
            cached_threads: 1024,
        }
    }
}

impl PgOptions {
    /// These options with tables in the Postgres schema `schema` (`pai` by
    /// default).
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// These options keeping up to `threads` threads decoded in memory (1024 by
    /// default; 0 reads every thread back from the database).
    pub fn cached_threads(mut self, threads: usize) -> Self {
        self.cached_threads = threads;
        self
    }
}
