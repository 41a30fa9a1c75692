//! The README cannot drift from the format: every TOML block in it is a
//! whole scenario that loads and passes, and its reference names every
//! hook, fault kind, event and top-level field the loader knows.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md exists")
}

/// The fenced blocks of one language, with the line each starts on.
fn blocks(text: &str, lang: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start();
        match open.as_mut() {
            Some((_, body)) if fence.starts_with("```") => {
                let body = std::mem::take(body);
                out.push((open.take().map_or(0, |(l, _)| l), body));
            }
            Some((_, body)) => {
                // Blocks inside list items are indented; take the indent off.
                body.push_str(line.strip_prefix("   ").unwrap_or(line));
                body.push('\n');
            }
            None if fence == format!("```{lang}") => open = Some((i + 1, String::new())),
            None => {}
        }
    }
    out
}

#[test]
fn every_toml_block_is_a_scenario_that_passes() {
    let text = readme();
    let found = blocks(&text, "toml");
    assert!(found.len() >= 2, "README has scenario blocks");
    for (line, body) in found {
        let name = format!("README.md:{line}.toml");
        let s = pai_sim::Scenario::parse(Path::new(&name), &body)
            .unwrap_or_else(|e| panic!("{}", e.render(false)));
        let (_, problems) = pai_sim::check(&s, s.seed).expect("runs");
        assert!(problems.is_empty(), "{name}: {problems:?}");
    }
}

/// The names serde expects where `bad` stands, from its error message
/// ("expected one of `a`, `b`").
fn expected_names(toml_text: &str) -> Vec<String> {
    let err = toml::from_str::<pai_sim::ScenarioSpec>(toml_text).expect_err("refused");
    let message = err.message().to_string();
    let list = message
        .split_once("expected one of ")
        .unwrap_or_else(|| panic!("no list in {message:?}"))
        .1;
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

const BASE: &str = "name = \"x\"\nrules = [\"X1\"]\n[[timeline]]\nsend = \"hi\"\n";

#[test]
fn the_reference_names_every_hook_fault_event_and_field() {
    let text = readme();
    let hooks = expected_names(&format!("{BASE}[[lifecycle]]\nhook = \"nope\"\n"));
    let faults = expected_names(&format!("{BASE}[[faults]]\nkind = \"nope\"\n"));
    let events = expected_names(&format!(
        "{BASE}[[faults]]\nkind = \"drop\"\nevent = \"nope\"\n"
    ));
    let fields = expected_names(&format!("nope = 1\n{BASE}"));
    let timeline = expected_names("name = \"x\"\nrules = [\"X1\"]\n[[timeline]]\nnope = 1\n");
    assert!(hooks.len() > 15 && faults.len() > 5 && events.len() > 15);
    let all = [hooks, faults, events, fields, timeline].concat();
    let missing: Vec<&String> = all
        .iter()
        .filter(|n| {
            let forms = [
                format!("`{n}`"),
                format!("`{n} "),
                format!("`[{n}"),
                format!("`[[{n}"),
            ];
            !forms.iter().any(|f| text.contains(f.as_str()))
        })
        .collect();
    assert!(missing.is_empty(), "README does not document {missing:?}");
}
