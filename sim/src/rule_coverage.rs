//! What checks each rule: scenarios that name it, oracles that judge it on
//! every run, and tests that name it (in their function name, `k2_...`, or
//! in a `SPEC K2` comment right above them).

use std::path::PathBuf;

use crate::rules::{Rule, rule, rules};
use crate::scenario::OracleId;

/// A test function, by file and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TestRef {
    /// The source file, as the caller named it (a path relative to the
    /// repository root, such as `sim/tests/it/k2.rs`).
    pub file: String,
    /// The test function's name.
    pub name: String,
}

/// One rule and everything that checks it.
#[derive(Debug, Clone)]
pub struct RuleCoverage {
    /// The rule, from the catalogue.
    pub rule: &'static Rule,
    /// The scenario files that name the rule in their `rules = [...]`, in the
    /// order given.
    pub scenarios: Vec<PathBuf>,
    /// The oracles that judge the rule on every run.
    pub oracles: Vec<OracleId>,
    /// The tests whose name or `SPEC` comment names the rule.
    pub tests: Vec<TestRef>,
}

impl RuleCoverage {
    /// Nothing checks this rule yet.
    pub fn unchecked(&self) -> bool {
        self.scenarios.is_empty() && self.oracles.is_empty() && self.tests.is_empty()
    }
}

/// Every rule, in catalogue order, with the scenarios (path and the rule ids
/// they name) and tests (from [`tests_in`]) that check it.
pub fn coverage(
    scenarios: &[(PathBuf, Vec<String>)],
    tests: &[(TestRef, Vec<String>)],
) -> Vec<RuleCoverage> {
    rules()
        .iter()
        .map(|r| RuleCoverage {
            rule: r,
            scenarios: scenarios
                .iter()
                .filter(|(_, ids)| ids.contains(&r.id))
                .map(|(p, _)| p.clone())
                .collect(),
            oracles: OracleId::ALL
                .iter()
                .copied()
                .filter(|o| o.judges().contains(&r.id.as_str()))
                .collect(),
            tests: tests
                .iter()
                .filter(|(_, ids)| ids.contains(&r.id))
                .map(|(t, _)| t.clone())
                .collect(),
        })
        .collect()
}

/// The tests of one Rust source file and the rule ids each names. A test is
/// a function under `#[test]` or inside a `proptest!` block.
pub fn tests_in(file: &str, text: &str) -> Vec<(TestRef, Vec<String>)> {
    let mut out = Vec::new();
    let mut above: Vec<&str> = Vec::new(); // comments and attributes just above
    let mut proptest_depth: Option<i64> = None;
    let mut in_raw_string = false;
    for line in text.lines() {
        let t = line.trim_start();
        // Source text quoted inside a raw string is not code.
        if in_raw_string {
            in_raw_string = !line.contains("\"#");
            continue;
        }
        if let Some(i) = line.find("r#\"") {
            in_raw_string = !line[i + 3..].contains("\"#");
        }
        if let Some(depth) = proptest_depth.as_mut() {
            *depth += braces(t);
            if *depth <= 0 {
                proptest_depth = None;
            }
        } else if t.contains("proptest!") && t.contains('{') {
            proptest_depth = Some(braces(t));
        }
        if t.starts_with("//") || t.starts_with("#[") {
            above.push(t);
            continue;
        }
        if let Some(name) = fn_name(t) {
            let is_test =
                proptest_depth.is_some() || above.iter().any(|a| a.starts_with("#[test]"));
            let ids = ids_of(name, &above);
            if is_test && !ids.is_empty() {
                let test = TestRef {
                    file: file.to_string(),
                    name: name.to_string(),
                };
                out.push((test, ids));
            }
        }
        above.clear();
    }
    out
}

fn braces(line: &str) -> i64 {
    line.chars().fold(0, |n, c| match c {
        '{' => n + 1,
        '}' => n - 1,
        _ => n,
    })
}

/// `fn name(` or `fn name<`, after any qualifiers.
fn fn_name(line: &str) -> Option<&str> {
    let rest = line.split_once("fn ")?.1;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    let before = &line[..line.len() - rest.len() - 3];
    let qualifiers = before.split_whitespace().all(|w| {
        matches!(
            w,
            "pub" | "pub(crate)" | "pub(super)" | "async" | "const" | "unsafe"
        )
    });
    (qualifiers && end > 0).then(|| &rest[..end])
}

/// Rule ids a test names: leading `k2_` segments of its name, and ids after
/// `SPEC` in the comments above it. Only catalogued ids count.
fn ids_of(name: &str, above: &[&str]) -> Vec<String> {
    let mut ids: Vec<String> = name
        .split('_')
        .take_while(|seg| looks_like_id(seg))
        .map(str::to_ascii_uppercase)
        .collect();
    for comment in above.iter().filter(|a| a.starts_with("//")) {
        let Some((_, after)) = comment.split_once("SPEC ") else {
            continue;
        };
        let words = after.split(|c: char| !c.is_ascii_alphanumeric());
        ids.extend(
            words
                .filter(|w| looks_like_id(w))
                .map(str::to_ascii_uppercase),
        );
    }
    ids.retain(|id| rule(id).is_some());
    ids.sort();
    ids.dedup();
    ids
}

fn looks_like_id(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && (2..=3).contains(&word.len())
        && chars.all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_tests_by_name_and_by_spec_comment() {
        let src = r#"
/// SPEC K6: cancel reaches a queued run.
#[test]
fn cancels_reach_queued_runs() {}

#[test]
fn l1_p4_both_named() {}

fn k2_helper_not_a_test() {}

proptest! {
    #[test]
    fn s3_any_cut(x in 0..3u8) {
        let _ = x;
    }
}

#[test]
fn x99_unknown_rule_is_ignored() {}
"#;
        let found = tests_in("a.rs", src);
        let names: Vec<(&str, Vec<String>)> = found
            .iter()
            .map(|(t, ids)| (t.name.as_str(), ids.clone()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("cancels_reach_queued_runs", vec!["K6".to_string()]),
                ("l1_p4_both_named", vec!["L1".into(), "P4".into()]),
                ("s3_any_cut", vec!["S3".into()]),
            ]
        );
    }

    #[test]
    fn coverage_lists_checkers_and_gaps() {
        let scenarios = vec![(PathBuf::from("a.toml"), vec!["K1".to_string()])];
        let tests = vec![(
            TestRef {
                file: "t.rs".into(),
                name: "k2_x".into(),
            },
            vec!["K2".to_string()],
        )];
        let all = coverage(&scenarios, &tests);
        let of = |id: &str| all.iter().find(|c| c.rule.id == id).unwrap();
        assert_eq!(of("K1").scenarios, vec![PathBuf::from("a.toml")]);
        assert_eq!(of("K1").oracles, vec![OracleId::K1]);
        assert_eq!(of("K2").tests[0].name, "k2_x");
        assert!(of("R3").unchecked());
        assert_eq!(of("P3").oracles, vec![OracleId::P1P6]);
    }
}
