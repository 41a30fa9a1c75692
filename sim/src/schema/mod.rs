//! The published JSON Schemas (SPEC D6): the scenario format
//! (`ScenarioSpec::schema`), so another implementation can be driven by the
//! same suite, and the event log (`EventRecord::schema`), so another
//! implementation's log can be checked. Both are draft 2020-12, generated
//! from the serde types themselves; `schema/` at the repository root holds
//! the generated files, and a test keeps them current.
//!
//! This module depends on neither the scenario types nor the hooks: they
//! point at it (the mirrors of runtime types, the checks as schema
//! transforms), so the flow stays one way.

pub(crate) mod checks;
mod document;
mod events;
pub(crate) mod mirror;

pub use document::{document, schema_text};
pub use events::{EventData, EventRecord, event_log_json};
