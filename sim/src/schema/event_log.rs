//! The event log as data: one JSON object a line, each the runtime's own
//! event (`pai_runtime::event::EventKind` serializes itself as its name in the
//! phase grammar and its fields) with its time, thread and run, and a
//! published schema (`pai-sim schema events`) derived from the runtime's
//! types, so another implementation's log can be checked against it.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use pai_runtime::{Event, event::EventKind};

/// The event log as JSON lines: one [`EventRecord`] object a line, fields
/// in a fixed order, each line ending with a newline.
pub fn event_log_json(events: &[Event]) -> String {
    let mut out = String::new();
    for e in events {
        // An EventRecord holds only strings, numbers, maps with string keys
        // and JSON values: it always serializes.
        out.push_str(&serde_json::to_string(&EventRecord::from(e)).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// One thing the runtime did, at a time on its clock: one line of the event
/// log. The phase grammar (SPEC §1) orders a run's events; this schema
/// describes each event on its own.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = super::checks::closed)]
pub struct EventRecord<'a> {
    /// Virtual milliseconds on the runtime's clock.
    pub at: u64,
    /// The thread the event belongs to.
    pub thread: &'a str,
    /// The run the event belongs to.
    pub run: &'a str,
    /// What happened: the event's name (`event`, as planted faults name
    /// events) and its fields (`fields`).
    #[serde(flatten)]
    pub event: &'a EventKind,
}

impl EventRecord<'_> {
    /// The published schema of one line of the event log
    /// (`schema/events.schema.json`).
    pub fn schema() -> Value {
        super::document::document::<EventRecord>(
            "urn:pai-sim:schema:events",
            "pai-sim event log",
            "One line of a runtime event log as JSON lines: the time, thread and run of an event, its name in the phase grammar (SPEC §1) and its fields.",
        )
    }
}

impl<'a> From<&'a Event> for EventRecord<'a> {
    fn from(e: &'a Event) -> Self {
        EventRecord {
            at: e.at,
            thread: &e.thread_id,
            run: &e.run_id,
            event: &e.kind,
        }
    }
}

#[cfg(test)]
mod tests {
    use pai_runtime::{
        event::{EventName, RunStage},
        hook::Phase,
        store::RunStatus,
    };

    use super::*;

    /// Each record's `event` is its kind's name.
    #[test]
    fn record_names_are_event_names() {
        let kinds = [
            EventKind::Admitted {
                trigger: "m".into(),
            },
            EventKind::ModelCall {
                step: 1,
                attempt: 1,
                route: pai_runtime::model::Route::new("m"),
                context: 0,
                overlay: 0,
                messages: 0,
                tools: vec![],
                timeout_ms: None,
            },
            EventKind::Ended {
                status: RunStatus::Completed,
                outcome: pai_runtime::message::Outcome::Completed,
                reason: None,
                version: None,
            },
            EventKind::Failed {
                phase: RunStage::BetweenSteps,
                message: "x".into(),
            },
        ];
        for k in &kinds {
            let v = serde_json::to_value(k).unwrap_or_default();
            assert_eq!(v["event"], k.name());
        }
    }

    /// The events schema names exactly the events `EventName` names.
    #[test]
    fn the_schema_names_every_event() {
        let mut expected: Vec<&str> = EventName::ALL.iter().map(|n| n.as_str()).collect();
        let schema = EventRecord::schema();
        let mut found: Vec<&str> = schema["oneOf"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["properties"]["event"]["const"].as_str())
            .collect();
        expected.sort();
        found.sort();
        assert_eq!(found, expected);
        assert_eq!(found.len(), 45);
    }

    /// Every stage the runtime names is in the schema's list.
    #[test]
    fn every_stage_is_named() {
        let mut stages: Vec<RunStage> = Phase::ALL.into_iter().map(RunStage::Phase).collect();
        stages.extend([
            RunStage::Stream,
            RunStage::CommitStep,
            RunStage::Respond,
            RunStage::Tool,
            RunStage::Tools,
            RunStage::CommitToolResults,
            RunStage::BetweenSteps,
            RunStage::EpisodeEnd,
            RunStage::Resume,
            RunStage::OnOutput,
            RunStage::Runtime,
        ]);
        let schema = schemars::schema_for!(RunStage);
        let text = serde_json::to_string(&schema).unwrap_or_default();
        for s in stages {
            assert!(text.contains(&format!("\"{}\"", s.as_str())), "{s}");
        }
    }
}
