//! The published JSON Schemas (SPEC D6): the scenario format
//! (`ScenarioSpec::schema`), so another implementation can be driven by the
//! same suite, and the event log (`EventRecord::schema`), so another
//! implementation's log can be checked. Both are draft 2020-12, generated
//! from the serde types themselves; `schema/` at the repository root holds
//! the generated files, and a test keeps them current.
//!
//! The runtime's types derive their own schemas (its feature `schema`):
//! the event log's shape is the runtime's. This module depends on neither
//! the scenario types nor the hooks: they point at it (the checks and the
//! redaction pattern as schema transforms), so the flow stays one way.

pub(crate) mod checks;
mod document;
mod event_log;
pub(crate) mod pattern;

pub use document::{document, schema_text};
pub use event_log::{EventRecord, event_log_json};
