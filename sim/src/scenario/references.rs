//! What a scenario names of its own (SPEC X1): every tool a hook, a route,
//! a request expectation or a timeline answer names is one of the agent's
//! tools, and every call an answer names is one a script makes. A typo
//! here would otherwise pass quietly: a hook that never matches, an answer
//! that finds no call and leaves its run waiting.

use std::collections::BTreeMap;

use pai_runtime::model::ToolChoice;

use super::field::{CheckError, Segment, fail};
use super::names::OracleId;
use super::spec::{ModelSpec, TimelineEntry, ToolCallSpec};
use super::wording::closest;
use crate::hooks::{HookSpec, Route};

/// The scenario's parts that name tools and calls, checked against its
/// tools (`tools`, by name) and its scripts.
#[derive(Debug)]
pub(super) struct Named<'a> {
    pub tools: Vec<&'a str>,
    /// The library hooks, each at its place in the lifecycle (a
    /// registered hook's configuration is its own type's to check).
    pub hooks: Vec<Option<&'a HookSpec>>,
    pub model: &'a ModelSpec,
    pub models: &'a BTreeMap<String, ModelSpec>,
    pub timeline: &'a [TimelineEntry],
    /// The oracle the scenario expects to report a violation, if any: a
    /// check it means to fail is not refused.
    pub violation: Option<OracleId>,
}

impl<'a> Named<'a> {
    /// Load warnings (issue 39 item 7): each script's call of a tool the
    /// agent does not have, unless `agent.unknown_tools` names it (a
    /// tool entry named after its `use` while the script calls another
    /// name makes every call an unknown-tool error, and the run quiet).
    pub(super) fn warnings(&self, unknown_ok: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for (at, m) in self.scripts() {
            for (t, turn) in m.turns.iter().enumerate() {
                for (c, call) in turn.tool_calls.iter().enumerate() {
                    let name = call.tool.as_str();
                    if self.tools.contains(&name) || unknown_ok.iter().any(|u| u == name) {
                        continue;
                    }
                    let mut at = at.clone();
                    at.extend([
                        Segment::Key("turns"),
                        Segment::Index(t),
                        Segment::Key("tool_calls"),
                        Segment::Index(c),
                        Segment::Key("tool"),
                    ]);
                    let close = closest(name, self.tools.iter().copied())
                        .map(|c| format!(" (did you mean {c:?}?)"))
                        .unwrap_or_default();
                    out.push(format!(
                        "{}: the script calls {name:?}, which the agent does not have{close}: each such call gets an unknown-tool error; list it in `agent.unknown_tools` if that is meant",
                        super::field::FieldPath::at(&at)
                    ));
                }
            }
        }
        out
    }

    pub(super) fn check(&self) -> Result<(), CheckError> {
        for (i, hook) in self.hooks.iter().enumerate() {
            if let Some(hook) = hook {
                self.hook(i, hook)?;
            }
        }
        if self.violation != Some(OracleId::Request) {
            self.expected_requests()?;
        }
        for (i, entry) in self.timeline.iter().enumerate() {
            if entry.expect_error.is_none() {
                self.answer(i, entry)?;
            }
        }
        Ok(())
    }

    /// `name` must be a tool of the agent or one a script calls (a call of
    /// a tool the agent lacks gets a typed error, which hooks see too);
    /// `at` is where it is named.
    fn tool(&self, name: &str, at: &[Segment], prefix: &str) -> Result<(), CheckError> {
        let mut known = self.tools.clone();
        for c in self.calls() {
            if !known.contains(&c.tool.as_str()) {
                known.push(&c.tool);
            }
        }
        if name.is_empty() || known.contains(&name) {
            return Ok(());
        }
        fail(at, format!("{prefix}{}", unknown_tool(name, &known)))
    }

    /// Every tool call the scripted turns make.
    fn calls(&self) -> impl Iterator<Item = &ToolCallSpec> {
        self.scripts()
            .flat_map(|(_, m)| &m.turns)
            .flat_map(|t| &t.tool_calls)
    }

    fn hook(&self, i: usize, hook: &HookSpec) -> Result<(), CheckError> {
        let at =
            |more: &[Segment]| [&[Segment::Key("lifecycle"), Segment::Index(i)], more].concat();
        let prefix = format!("{}: ", hook.kind());
        let named = match hook {
            HookSpec::RejectTool(h) => &h.tool,
            HookSpec::ReplaceToolInput(h) => &h.tool,
            HookSpec::ReplaceToolOutput(h) => &h.tool,
            HookSpec::Route(r) => return self.route(r, &at, &prefix),
            _ => return Ok(()),
        };
        self.tool(named, &at(&[Segment::Key("tool")]), &prefix)
    }

    /// A route's `tools` and `tool_choice = { tool = ... }` (a provider
    /// tool of the same route may be chosen by its `name` or `type` too).
    fn route(
        &self,
        r: &Route,
        at: &dyn Fn(&[Segment]) -> Vec<Segment>,
        prefix: &str,
    ) -> Result<(), CheckError> {
        for (j, name) in r.tools.iter().flatten().enumerate() {
            self.tool(
                name,
                &at(&[Segment::Key("tools"), Segment::Index(j)]),
                prefix,
            )?;
        }
        let Some(ToolChoice::Tool(name)) = &r.tool_choice else {
            return Ok(());
        };
        let provider = r.provider_tools.iter().flatten().any(|t| {
            ["name", "type"]
                .iter()
                .any(|k| t.get(k).and_then(|v| v.as_str()) == Some(name))
        });
        match provider {
            true => Ok(()),
            false => self.tool(name, &at(&[Segment::Key("tool_choice")]), prefix),
        }
    }

    /// The tools each scripted turn expects its request to offer.
    fn expected_requests(&self) -> Result<(), CheckError> {
        for (script, m) in self.scripts() {
            for (k, turn) in m.turns.iter().enumerate() {
                let offered = turn.expect.iter().flat_map(|e| e.tools.iter().flatten());
                for (j, name) in offered.enumerate() {
                    let mut at = script.clone();
                    at.extend([
                        Segment::Key("turns"),
                        Segment::Index(k),
                        Segment::Key("expect"),
                        Segment::Key("tools"),
                        Segment::Index(j),
                    ]);
                    self.tool(name, &at, "")?;
                }
            }
        }
        Ok(())
    }

    /// Every script with the path that names it, the default first.
    fn scripts(&self) -> impl Iterator<Item = (Vec<Segment>, &'a ModelSpec)> + '_ {
        let named = self.models.iter().map(|(n, m)| {
            let at = vec![Segment::Key("models"), Segment::Name(n.clone())];
            (at, m)
        });
        std::iter::once((vec![Segment::Key("model")], self.model)).chain(named)
    }

    /// The tools and calls the `i`th timeline entry's answers name.
    fn answer(&self, i: usize, e: &TimelineEntry) -> Result<(), CheckError> {
        let at = |more: &[Segment]| [&[Segment::Key("timeline"), Segment::Index(i)], more].concat();
        let answers = [
            (
                "approve",
                e.approve.as_ref().map(|c| (&c.tool, c.nth, &c.call)),
            ),
            ("deny", e.deny.as_ref().map(|c| (&c.tool, c.nth, &c.call))),
            (
                "submit_result",
                e.submit_result.as_ref().map(|c| (&c.tool, c.nth, &c.call)),
            ),
        ];
        for (field, named) in answers {
            let Some((tool, nth, call)) = named else {
                continue;
            };
            if let Some(tool) = tool {
                self.tool(tool, &at(&[Segment::Key(field), Segment::Key("tool")]), "")?;
            }
            self.call(
                &at(&[Segment::Key(field)]),
                tool.as_deref(),
                nth,
                call.as_deref(),
            )?;
        }
        if self.violation == Some(OracleId::Check) {
            return Ok(());
        }
        for (j, c) in e.expect_waiting.iter().flatten().enumerate() {
            if let Some(tool) = &c.tool {
                let at = at(&[
                    Segment::Key("expect_waiting"),
                    Segment::Index(j),
                    Segment::Key("tool"),
                ]);
                self.tool(tool, &at, "")?;
            }
        }
        Ok(())
    }

    /// An answer's call must be one the scripts make: the `nth` call of
    /// `tool`, or `call = "#N"` among all calls. Recordings and registered
    /// models may make any calls, so a scenario with one is not judged.
    fn call(
        &self,
        at: &[Segment],
        tool: Option<&str>,
        nth: Option<usize>,
        call: Option<&str>,
    ) -> Result<(), CheckError> {
        if self
            .scripts()
            .any(|(_, m)| !m.replay.is_empty() || m.use_.is_some())
        {
            return Ok(());
        }
        let nth_given = nth.is_some();
        let why = "give `expect_error` if a refused answer is the point";
        match (tool, nth.unwrap_or(1), call) {
            (Some(tool), nth, None) if nth >= 1 => {
                let made = self.calls().filter(|c| c.tool == tool).count();
                if nth <= made {
                    return Ok(());
                }
                let message = match made {
                    0 => format!(
                        "no script calls `{tool}`, so no answer can find a call of it ({why})"
                    ),
                    n => format!(
                        "the scripts call `{tool}` only {}, so no answer can find its call nth = {nth} ({why})",
                        times(n)
                    ),
                };
                let mut at = at.to_vec();
                if nth_given {
                    at.push(Segment::Key("nth"));
                }
                fail(&at, message)
            }
            (None, _, Some(id)) => {
                let Some(n) = id.strip_prefix('#').and_then(|n| n.parse::<usize>().ok()) else {
                    return Ok(());
                };
                let made = self.calls().count();
                if n == 0 || n <= made {
                    return Ok(());
                }
                let mut at = at.to_vec();
                at.push(Segment::Key("call"));
                let calls = match made {
                    1 => "1 tool call".to_string(),
                    n => format!("{n} tool calls"),
                };
                let message = format!(
                    "the scripts make {calls} in all, so no answer can find call #{n} ({why})"
                );
                fail(&at, message)
            }
            _ => Ok(()),
        }
    }
}

fn times(n: usize) -> String {
    match n {
        1 => "once".into(),
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}

/// Why `name` is no tool of the agent, with the closest of `tools`.
fn unknown_tool(name: &str, tools: &[&str]) -> String {
    if tools.is_empty() {
        return format!("the agent has no tools: `{name}` needs an [[agent.tools]] entry");
    }
    match closest(name, tools.iter().copied()) {
        Some(near) => format!("the agent has no tool `{name}`: did you mean `{near}`?"),
        None => {
            let all: Vec<String> = tools.iter().map(|t| format!("`{t}`")).collect();
            format!(
                "the agent has no tool `{name}` (tools here: {})",
                all.join(", ")
            )
        }
    }
}

#[cfg(test)]
#[path = "references_tests.rs"]
mod tests;
