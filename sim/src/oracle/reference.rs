//! References the oracles judge against, written again on the simulator's
//! side (SPEC D7): redaction by the `regex` crate, the canonical stages of a
//! scenario applied to a whole text, and the route merge of P1–P3.

use std::collections::BTreeMap;

use pai_runtime::model::{Route, RoutePatch};
use regex::Regex;
use serde_json::{Value, json};

use crate::hooks::{HookSpec, RedactPattern};
use crate::scenario::Scenario;

/// One redaction stage as a regular expression: the patterns as
/// alternatives, in order (the first that matches at a position wins,
/// greedily), and the replacement.
#[derive(Debug, Clone)]
pub(super) struct Redaction {
    pub(super) regex: Regex,
    pub(super) replacement: String,
}

/// A pattern (`literal prefix` + optional trailing `[class]+`) as a regex.
fn regex_of(source: &str) -> String {
    let mut out = String::new();
    let mut chars = source.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str(&regex::escape(
                &chars.next().map(String::from).unwrap_or_default(),
            )),
            '[' => {
                out.push('[');
                let mut prev_escaped = false;
                for c in chars.by_ref() {
                    match c {
                        ']' if !prev_escaped => break,
                        '\\' if !prev_escaped => {
                            prev_escaped = true;
                            continue;
                        }
                        '-' if !prev_escaped => out.push('-'),
                        c => out.push_str(&regex::escape(&c.to_string())),
                    }
                    prev_escaped = false;
                }
                out.push_str("]+");
                break;
            }
            c => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    out
}

impl Redaction {
    pub(super) fn new(patterns: &[RedactPattern], replacement: &str) -> Option<Redaction> {
        let alternatives: Vec<String> = patterns
            .iter()
            .map(|p| format!("(?:{})", regex_of(&p.pattern().to_string())))
            .collect();
        let regex = Regex::new(&alternatives.join("|")).ok()?;
        Some(Redaction {
            regex,
            replacement: replacement.to_string(),
        })
    }

    pub(super) fn apply(&self, text: &str) -> String {
        self.regex
            .replace_all(text, regex::NoExpand(&self.replacement))
            .into_owned()
    }
}

/// The scenario's canonical redactions, in hook order.
pub(super) fn redactions(s: &Scenario) -> Vec<Redaction> {
    s.hooks
        .iter()
        .filter_map(|h| match h.library()? {
            HookSpec::Redact(r) => Redaction::new(&r.patterns, &r.replacement),
            _ => None,
        })
        .collect()
}

/// A finished text (a response or a replacement) through the scenario's
/// canonical stages, in order: redaction, upper-casing; a guard passes
/// finished text through (it cannot abort it). `None` when a registered
/// hook transforms streams too: what it makes of a text is not known.
pub(super) fn canonical(s: &Scenario, text: &str) -> Option<String> {
    let stream = [pai_runtime::hook::Phase::TransformStepStream];
    if super::facts::registered_in(s, &stream) {
        return None;
    }
    let mut out = text.to_string();
    for h in &s.hooks {
        match h.library() {
            Some(HookSpec::Redact(r)) => {
                if let Some(red) = Redaction::new(&r.patterns, &r.replacement) {
                    out = red.apply(&out);
                }
            }
            Some(HookSpec::Uppercase(_)) => out = out.to_uppercase(),
            _ => {}
        }
    }
    Some(out)
}

/// A route as the reference sees it: a flat map from field to value.
pub(super) type FlatRoute = BTreeMap<String, Value>;

/// The flat form of a runtime route: a fresh route with its fields.
pub(super) fn flatten(r: &Route) -> FlatRoute {
    let mut flat = FlatRoute::new();
    apply(
        &mut flat,
        &RoutePatch {
            model: Some(r.model.clone()),
            settings: r.settings.clone(),
            provider_options: r.provider_options.clone(),
            provider_tools: r.provider_tools.clone(),
            tool_choice: r.tool_choice.clone(),
            tools: r.tools.clone(),
        },
    );
    flat
}

/// P1–P3: a model starts a fresh route (only the tool selection survives);
/// settings merge by field, provider options by provider; provider tools,
/// tool choice and tools replace as whole values.
pub(super) fn apply(flat: &mut FlatRoute, p: &RoutePatch) {
    if let Some(m) = &p.model {
        flat.retain(|k, _| k == "tools");
        flat.insert("model".into(), json!(m));
    }
    if let Ok(Value::Object(settings)) = serde_json::to_value(&p.settings) {
        for (k, v) in settings {
            flat.insert(format!("settings.{k}"), v);
        }
    }
    for (provider, o) in &p.provider_options {
        flat.insert(format!("options.{provider}"), Value::Object(o.clone()));
    }
    if let Some(t) = &p.provider_tools {
        flat.insert("provider_tools".into(), json!(t));
    }
    if let Some(c) = &p.tool_choice {
        flat.insert(
            "tool_choice".into(),
            serde_json::to_value(c).unwrap_or_default(),
        );
    }
    if let Some(t) = &p.tools {
        flat.insert("tools".into(), json!(t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(s: &str) -> RedactPattern {
        RedactPattern::try_from(s.to_string()).expect("pattern")
    }

    #[test]
    fn redaction_reference_matches_the_documented_shapes() {
        let r = Redaction::new(&[pattern("sk-[A-Za-z0-9_-]+"), pattern("password")], "[R]")
            .expect("regex");
        assert_eq!(r.apply("key sk-ab_9 and password!"), "key [R] and [R]!");
        assert_eq!(r.apply("sk- alone"), "sk- alone");
        let digits = Redaction::new(&[pattern("[0-9]+")], "#").expect("regex");
        assert_eq!(digits.apply("a1b22"), "a#b#");
        let escaped = Redaction::new(&[pattern("a\\[b")], "x").expect("regex");
        assert_eq!(escaped.apply("a[b a.b"), "x a.b");
    }
}
