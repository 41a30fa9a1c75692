//! Scenario files: the format as written (`spec`), the checked model the
//! simulator runs (`checked`), the names a file uses for oracles and events,
//! and loading with positions (SPEC X1).

mod checked;
mod names;
mod position;
mod spec;

use std::path::{Path, PathBuf};

pub use checked::{
    Action, AgentDef, Behaviour, CheckError, Expectation, FieldPath, HookDef, Moment, Scenario,
    Segment, ToolDef,
};
pub use names::{EventName, OracleId};
pub use spec::{
    AgentSpec, CancelRun, CancelSpec, Expect, FaultSpec, ModelSpec, RequestExpect, ScenarioSpec,
    TimelineEntry, ToolCallSpec, ToolSpec, TurnSpec,
};

/// A scenario file that could not be loaded (SPEC X1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), location.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
pub struct ScenarioError {
    pub path: PathBuf,
    /// 1-based line and column, where the parser can tell.
    pub location: Option<(usize, usize)>,
    pub message: String,
}

impl ScenarioSpec {
    /// Parses scenario text; the format follows the file extension (JSON for `.json`).
    pub fn parse(path: &Path, text: &str) -> Result<ScenarioSpec, ScenarioError> {
        let err = |location, message: String| ScenarioError {
            path: path.to_path_buf(),
            location,
            message,
        };
        if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(text).map_err(|e| {
                let loc = (e.line() > 0).then(|| (e.line(), e.column()));
                err(loc, position::strip_json_position(&e.to_string()))
            })
        } else {
            toml::from_str(text).map_err(|e| {
                let loc = e
                    .span()
                    .map(|s| position::line_col(text, position::refine(text, s, e.message())));
                err(loc, e.message().trim().to_string())
            })
        }
    }
}

impl Scenario {
    /// Loads and checks a `.toml` or `.json` scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            path: path.to_path_buf(),
            location: None,
            message: format!("cannot read: {e}"),
        })?;
        Scenario::parse(path, &text)
    }

    /// Parses and checks scenario text.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let spec = ScenarioSpec::parse(path, text)?;
        Scenario::from_spec(spec).map_err(|e| ScenarioError {
            path: path.to_path_buf(),
            location: None,
            message: e.to_string(),
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
            "timeline[0]: expected exactly one of send, steer, cancel, watch"
        );
        let text = MINIMAL.replace(
            "rules = [\"L1\"]",
            "rules = [\"L1\"]\nexpect = \"violation\"",
        );
        let e = Scenario::parse(Path::new("a.toml"), &text).unwrap_err();
        assert!(
            e.message
                .starts_with("oracle: expect = \"violation\" needs"),
            "{e}"
        );
    }

    #[test]
    fn json_and_toml_share_one_model() {
        let t = ScenarioSpec::parse(Path::new("a.toml"), MINIMAL).unwrap();
        let j = serde_json::to_string(&t).unwrap();
        let back = ScenarioSpec::parse(Path::new("a.json"), &j).unwrap();
        assert_eq!(t, back);
    }
}
