//! Scenario files: the format as written (`spec`), the checked model the
//! simulator runs (`checked`), the names a file uses for oracles and events,
//! and loading with positions (SPEC X1).

mod checked;
mod cluster;
mod field;
mod handles;
mod hooks;
mod models;
mod names;
mod play_order;
mod position;
pub(crate) mod predicate;
mod references;
mod replay;
mod spec;
mod timeline;
mod tools;
mod wording;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};

use crate::registry::Registry;

pub use checked::{AgentDef, DEFAULT_TIME_LIMIT_MS, Expectation, Scenario};
pub use cluster::{Cluster, FaultAction, Placed, StoreBugs, Timed};
pub use field::{CheckError, FieldPath, Segment};
pub use hooks::{HookDef, HookSource};
pub use models::RegisteredModels;
pub use names::{OracleId, OracleName, OracleRef};
pub use predicate::Predicate;
pub use replay::{BUILT_IN, Recording, RecordingKind, Replay};
pub use spec::{
    AfterEvent, AfterSpec, AgentSpec, ApprovalSpec, CallRef, CancelRun, CancelSpec, ClusterSpec,
    DenySpec, Expect, ExpectSpec, FaultSpec, HostOrder, LifecycleEntry, ModelSpec, MutateSpec,
    OnOutputSpec, ReplayFormat, RequestAt, RequestExpect, ScenarioSpec, SubmitSpec, TimelineEntry,
    ToolCallSpec, ToolEntry, ToolSpec, TurnSpec, UseSpec, UseToolSpec, VisibilitySpec, WhenSpec,
    WorkerSpec,
};
pub use timeline::{Action, After, CallName, Moment};
pub use tools::{Approval, Behaviour, ToolDef};

/// A scenario file that could not be loaded (SPEC X1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), self.place())]
pub struct ScenarioError {
    /// The file that could not be loaded, as the caller named it.
    pub path: PathBuf,
    /// 1-based line and column, where the file can tell.
    pub location: Option<(usize, usize)>,
    /// For a JSON file, whose values keep no position after parsing: the
    /// JSON pointer of the field at fault.
    pub pointer: Option<String>,
    /// What is wrong, in words; the `Display` form prefixes the path and
    /// position.
    pub message: String,
    /// The source text and the byte range at fault, for [`Self::render`].
    source_span: Option<Box<(Arc<str>, Range<usize>)>>,
}

impl ScenarioError {
    /// An error about a whole file.
    pub fn new(path: &Path, message: String) -> ScenarioError {
        ScenarioError {
            path: path.to_path_buf(),
            location: None,
            pointer: None,
            message,
            source_span: None,
        }
    }

    /// Points the error at `span` of `text`.
    fn at_span(mut self, text: &str, span: Range<usize>) -> ScenarioError {
        self.location = Some(position::line_col(text, span.start));
        self.source_span = Some(Box::new((Arc::from(text), span)));
        self
    }

    fn place(&self) -> String {
        match (&self.location, &self.pointer) {
            (Some((l, c)), _) => format!(":{l}:{c}"),
            (None, Some(p)) => format!(" (at {p})"),
            (None, None) => String::new(),
        }
    }

    /// The error as rustc shows one: the message, the file, line and column,
    /// and the source line with the place at fault underlined.
    pub fn render(&self, color: bool) -> String {
        let Some((text, span)) = self.source_span.as_deref() else {
            return format!("error: {self}");
        };
        let path = format!("{}", self.path.display());
        let span =
            span.start.min(text.len())..span.end.min(text.len()).max(span.start.min(text.len()));
        let report = &[Level::ERROR.primary_title(&self.message).element(
            Snippet::source(&**text)
                .path(&path)
                .annotation(AnnotationKind::Primary.span(span)),
        )];
        let renderer = if color {
            Renderer::styled()
        } else {
            Renderer::plain()
        };
        renderer.render(report).to_string()
    }
}

impl ScenarioSpec {
    /// Parses scenario text; the format follows the file extension (JSON for `.json`).
    pub fn parse(path: &Path, text: &str) -> Result<ScenarioSpec, ScenarioError> {
        if is_json(path) {
            serde_json::from_str(text).map_err(|e| {
                let message = position::strip_json_position(&e.to_string());
                let at = position::offset(text, e.line(), e.column());
                let key = at.and_then(|at| wording::json_key_at(text, at));
                let err = ScenarioError::new(path, wording::reword(&message, key));
                match at {
                    Some(at) => err.at_span(text, at..at),
                    None => err,
                }
            })
        } else {
            toml::from_str(text).map_err(|e| {
                let message = e.message().trim();
                let key = e
                    .span()
                    .and_then(|s| wording::toml_key_before(text, s.start));
                let err = ScenarioError::new(path, wording::reword(message, key));
                match e.span() {
                    Some(s) => err.at_span(text, position::refine(text, s, e.message())),
                    None => err,
                }
            })
        }
    }
}

fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

impl Scenario {
    /// Loads and checks a `.toml` or `.json` scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(path, &Registry::default())
    }

    /// [`Scenario::load`] with the hooks `registry` knows by name.
    pub fn load_with(path: &Path, registry: &Registry) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError::new(path, format!("cannot read: {e}")))?;
        Scenario::parse_with(path, &text, registry)
    }

    /// Parses and checks scenario text. A check that fails after parsing
    /// still names the line and column (TOML) or the JSON pointer (JSON) of
    /// the field at fault.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_with(path, text, &Registry::default())
    }

    /// [`Scenario::parse`] with the hooks `registry` knows by name.
    pub fn parse_with(
        path: &Path,
        text: &str,
        registry: &Registry,
    ) -> Result<Scenario, ScenarioError> {
        let spec = ScenarioSpec::parse(path, text)?;
        let dir = path.parent().unwrap_or(Path::new(""));
        Scenario::from_spec_with(spec, dir, registry).map_err(|e| {
            let err = ScenarioError::new(path, e.to_string());
            if is_json(path) {
                let pointer = position::json_pointer(e.at.segments());
                return ScenarioError {
                    pointer: Some(if pointer.is_empty() {
                        "/".into()
                    } else {
                        pointer
                    }),
                    ..err
                };
            }
            match position::toml_span(text, e.at.segments()) {
                Some(span) => err.at_span(text, span),
                None => err.at_span(text, 0..0),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "x"
rules = ["L1"]
[[timeline]]
send = "hi"
"#;

    #[test]
    fn minimal_scenario_parses_with_defaults() {
        let s = Scenario::parse(Path::new("a.toml"), MINIMAL).unwrap();
        assert_eq!(s.seed, 1);
        assert_eq!(s.agent.model, "small");
        assert_eq!(s.timeline[0].thread, "main");
        assert_eq!(s.timeline[0].action, Action::Send("hi".into()));
    }

    #[test]
    fn x1_unknown_field_names_line_and_column() {
        let text = MINIMAL.replace("send = \"hi\"", "send = \"hi\"\nsned = 3");
        let e = Scenario::parse(Path::new("a.toml"), &text).unwrap_err();
        assert_eq!(e.location, Some((6, 1)), "{e}");
        assert!(e.message.contains("unknown field `sned`"), "{e}");
        assert!(e.to_string().starts_with("a.toml:6:1: "), "{e}");
    }

    #[test]
    fn x1_wrong_type_names_line_and_column() {
        let text = MINIMAL.replace("rules = [\"L1\"]", "rules = [\"L1\"]\nseed = \"seven\"");
        let e = Scenario::parse(Path::new("a.toml"), &text).unwrap_err();
        assert_eq!(e.location.map(|l| l.0), Some(4), "{e}");
        assert!(e.message.contains("invalid type"), "{e}");
    }

    #[test]
    fn x1_json_errors_have_positions_too() {
        let e =
            Scenario::parse(Path::new("a.json"), "{\"name\": \"x\",\n \"rules\": 3}").unwrap_err();
        assert_eq!(e.location, Some((2, 11)), "{e}");
        assert!(e.message.contains("invalid type"), "{e}");
    }

    /// SPEC X1: a number of the wrong kind is said in the format's words,
    /// a time as a time (JSON too, whose errors point past the value).
    #[test]
    fn x1_wrong_numbers_are_said_in_words() {
        let text = "{\"name\": \"x\", \"rules\": [\"X1\"], \"seed\": \"s\",\n \"timeline\": [{\"send\": \"hi\"}]}";
        let e = Scenario::parse(Path::new("a.json"), text).unwrap_err();
        let expected = "invalid type: string \"s\", expected a whole number, 0 or more";
        assert_eq!(e.message, expected);
        let text = "{\"name\": \"x\", \"rules\": [\"X1\"],\n \"timeline\": [{\"at\": -5, \"send\": \"hi\"}]}";
        let e = Scenario::parse(Path::new("a.json"), text).unwrap_err();
        let expected = "invalid value: integer `-5`, expected a time in virtual ms, 0 or more";
        assert_eq!(e.message, expected);
        let text = MINIMAL.replace("send = \"hi\"", "send = \"hi\"\nat = 1.5");
        let e = Scenario::parse(Path::new("a.toml"), &text).unwrap_err();
        let expected =
            "invalid type: floating point `1.5`, expected a time in virtual ms, 0 or more";
        assert_eq!(e.message, expected);
    }

    #[test]
    fn x1_a_bad_redaction_pattern_is_a_load_error() {
        let text = format!(
            "{MINIMAL}\n[[lifecycle]]\nhook = \"redact\"\npatterns = [\"a(b\"]\nreplacement = \"x\"\n"
        );
        let e = Scenario::parse(Path::new("a.toml"), &text).unwrap_err();
        assert!(e.message.contains("only a literal prefix"), "{e}");
        assert!(e.location.is_some(), "{e}");
    }

    #[test]
    fn checks_name_the_field() {
        let text = MINIMAL.replace("send = \"hi\"", "send = \"hi\"\ncancel = true");
        let e = Scenario::parse(Path::new("a.toml"), &text).unwrap_err();
        assert_eq!(
            e.message,
            "timeline[0]: expected exactly one of send, steer, cancel, watch, approve, deny, submit_result, expect_waiting, read_thread, mutate, delete_thread, create_thread, regenerate, set_visibility, bind_thread"
        );
        assert_eq!(e.location, Some((4, 1)), "the [[timeline]] header: {e}");
        let text = MINIMAL.replace(
            "rules = [\"L1\"]",
            "rules = [\"L1\"]\nexpect = \"violation\"",
        );
        let e = Scenario::parse(Path::new("a.toml"), &text).unwrap_err();
        assert!(
            e.message
                .starts_with("expect: \"violation\" needs `oracle`"),
            "{e}"
        );
    }

    /// `on_resume` where no episode can resume is refused at its field.
    #[test]
    fn on_resume_without_a_wait_is_refused_where_it_stands() {
        let hook = "\n[[lifecycle]]\nhook = \"fail\"\nphase = \"prepare_run\"\nmessage = \"m\"\non_resume = true\n";
        let text = format!("{MINIMAL}{hook}");
        let e = Scenario::parse(Path::new("a.toml"), &text).unwrap_err();
        assert!(
            e.message.starts_with("lifecycle[0].on_resume: no episode"),
            "{e}"
        );
        assert!(e.location.is_some(), "{e}");
        let tool = "\n[[agent.tools]]\nname = \"ask\"\nclient = true\n";
        let ok = format!("{MINIMAL}{hook}{tool}");
        assert!(Scenario::parse(Path::new("a.toml"), &ok).is_ok());
    }

    #[test]
    fn json_and_toml_share_one_model() {
        let t = ScenarioSpec::parse(Path::new("a.toml"), MINIMAL).unwrap();
        let j = serde_json::to_string(&t).unwrap();
        let back = ScenarioSpec::parse(Path::new("a.json"), &j).unwrap();
        assert_eq!(t, back);
    }
}
