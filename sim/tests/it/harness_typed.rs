//! Issue 39, item 3: a harness of the author's own agent types. The hook
//! `tally` is written against the author's context (`Desk`) and typed run
//! metadata (`Tally`); the scenarios in `sim/tests/harness_typed/` run it
//! across a wait for approval and a resume, and among workers when the
//! first crashes as its results' commit is lost (what the hook staged
//! about the result is lost with it, K5). The harness's oracle judges
//! the typed metadata against the thread; a scenario entry that keeps the
//! metadata as the simulator's JSON map is refused at load, at its line.

use std::collections::BTreeSet;

use pai_runtime::hook::{
    Phase, Phases, RunDecision, RunInput, ToolCallDecision, ToolCallInput, ToolResultDecision,
    ToolResultInput,
};
use pai_runtime::message::ToolStatus;
use pai_runtime::{HookCx, HookFuture, HookResult, Lifecycle, Part, hook};
use pai_sim::Harness;
use pai_sim::hooks::UserHook;
use pai_sim::observe::{Finding, Observation};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const DIR: &str = "tests/harness_typed/scenarios";

/// The author's context: which desk the agent works for, and how many
/// successful calls of a tool a run may make.
struct Desk {
    name: String,
    limit: u32,
}

/// The author's run metadata.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct Tally {
    /// Episodes begun (a resume and a takeover each begin one).
    episodes: u32,
    /// The calls whose successful results the hook counted, by call id.
    counted: Vec<String>,
    /// The desk that counted the last one.
    desk: String,
}

/// Counts a tool's successful results in the typed metadata, and refuses
/// its calls once the desk's limit is reached.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TallyHook {
    tool: String,
}

impl UserHook<Desk, Tally> for TallyHook {
    fn build(&self, name: &str) -> Box<dyn Lifecycle<Desk>> {
        Box::new(Tallying {
            name: name.to_string(),
            tool: self.tool.clone(),
        })
    }
}

/// The built hook: three phases, each reading `cx.context` as a `Desk`
/// and the run metadata as a `Tally`.
struct Tallying {
    name: String,
    tool: String,
}

impl Lifecycle<Desk> for Tallying {
    fn name(&self) -> &str {
        &self.name
    }

    fn phases(&self) -> Phases {
        Phases::only(Phase::PrepareRun)
            .with(Phase::BeforeToolCall)
            .with(Phase::AfterToolResult)
    }

    fn prepare_run<'a>(
        &'a self,
        cx: &'a HookCx<'_, Desk>,
        _: &'a RunInput<'_>,
    ) -> HookFuture<'a, HookResult<RunDecision>> {
        HookFuture::new(async move {
            cx.update_run_metadata(|t: &mut Tally| t.episodes += 1)
                .await?;
            Ok(RunDecision::default())
        })
    }

    fn before_tool_call<'a>(
        &'a self,
        cx: &'a HookCx<'_, Desk>,
        input: &'a ToolCallInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolCallDecision>> {
        HookFuture::new(async move {
            let t: Tally = cx.run_metadata().await?;
            let desk = cx.context;
            if input.tool == self.tool && t.counted.len() as u32 >= desk.limit {
                let message = format!("desk {} allows {} calls", desk.name, desk.limit);
                return Ok(ToolCallDecision::Reject { message });
            }
            Ok(ToolCallDecision::Continue)
        })
    }

    fn after_tool_result<'a>(
        &'a self,
        cx: &'a HookCx<'_, Desk>,
        input: &'a ToolResultInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolResultDecision>> {
        HookFuture::new(async move {
            let r = input.result;
            if r.tool == self.tool && r.status == ToolStatus::Output {
                cx.update_run_metadata(|t: &mut Tally| {
                    t.counted.push(r.call_id.to_string());
                    t.desk = cx.context.name.clone();
                })
                .await?;
            }
            Ok(ToolResultDecision::Continue)
        })
    }
}

fn harness() -> Harness<Desk, Tally> {
    let mut h = Harness::<Desk, Tally>::with_context(|| Desk {
        name: "north".into(),
        limit: 2,
    });
    h.hook::<TallyHook>("tally")
        .oracle("tally_counts_each_committed_result_once", tally_matches);
    h
}

/// Each run's typed tally names exactly the calls of the tallied tool
/// whose successful results the thread holds for that run: none counted
/// twice, none counted that was never committed, none missed.
fn tally_matches(obs: &Observation<'_>) -> Result<(), Finding> {
    let tools: BTreeSet<String> = obs
        .configs("tally")
        .filter_map(|c| c.get("tool")?.as_str().map(str::to_string))
        .collect();
    for thread in obs.threads() {
        for run in &thread.runs {
            let Some(stored) = &run.metadata else {
                continue;
            };
            let tally: Tally = serde_json::from_value(stored.clone())
                .map_err(|e| Finding::in_run(&run.id, format!("unreadable tally: {e}")))?;
            let committed: Vec<String> = thread
                .messages
                .iter()
                .filter(|m| m.pai.run_id.as_ref() == Some(&run.id))
                .flat_map(|m| &m.parts)
                .filter_map(|p| match p {
                    Part::ToolResult {
                        call_id,
                        tool,
                        status: ToolStatus::Output,
                        ..
                    } if tools.contains(tool) => Some(call_id.to_string()),
                    _ => None,
                })
                .collect();
            if tally.counted != committed {
                let message = format!(
                    "the tally counts {:?}, the thread holds results of {committed:?}",
                    tally.counted
                );
                return Err(Finding::in_run(&run.id, message));
            }
        }
    }
    Ok(())
}

/// Every typed scenario passes every oracle, the harness's own too, and
/// matches its snapshot.
#[test]
fn a_hook_of_the_authors_types_keeps_its_tally_across_waits_and_takeovers() {
    harness().run_dir(DIR);
}

/// The snapshot of the wait shows the typed metadata: the hook's count
/// staged with the approved call's result, and committed with it at the
/// resume, by the context's desk.
#[test]
fn the_typed_tally_commits_with_the_results_it_counts() {
    let path = format!("{DIR}/a_typed_tally_across_a_wait_for_approval.toml");
    let shown = harness().show(&path, None).unwrap();
    assert_eq!(shown.verdict, Ok(()));
    let t = &shown.transcript;
    assert!(t.contains("+ run metadata"), "{t}");
    assert!(t.contains(r#""desk":"north""#), "{t}");
    assert!(t.contains("desk north allows 2 calls"), "{t}");
}

/// A scenario entry that keeps the run metadata as the simulator's JSON
/// map cannot run with an agent that keeps `Tally`: refused at load, at
/// its line, naming both.
#[test]
fn json_map_metadata_entries_are_refused_at_load_with_a_typed_agent() {
    let hook = r#"
name = "x"
rules = ["K5"]
[[lifecycle]]
use = "tally"
tool = "t"
[[lifecycle]]
hook = "patch_metadata"
phase = "after_step"
count = "steps"
[[model.turns]]
text = ["hi"]
[[timeline]]
send = "hi"
"#;
    let e = harness().parse("x.toml", hook).unwrap_err();
    let text = e.render(false);
    assert_eq!(
        e.message,
        "lifecycle[1].hook: patch_metadata reads and writes the run metadata as a JSON map, but this harness's agent keeps `it::harness_typed::Tally` (Harness::with_context): keep the metadata with the harness's own hooks"
    );
    assert!(text.contains("x.toml:8"), "{text}");
    let tool = r#"
name = "x"
rules = ["K5"]
[[agent.tools]]
name = "t"
output = 1
on_output = { count = "n" }
[[model.turns]]
text = ["hi"]
[[timeline]]
send = "hi"
"#;
    let e = harness().parse("x.toml", tool).unwrap_err();
    assert!(
        e.message.starts_with(
            "agent.tools[0].on_output: on_output reads and writes the run metadata as a JSON map"
        ),
        "{}",
        e.message
    );
    // The same entries load with the simulator's own metadata.
    assert!(Harness::new().parse("x.toml", tool).is_ok());
}

/// The oracle is no stub: a tally that counts a result the thread does
/// not hold is reported (here the hook counts every result, a failed one
/// too, so it names a call with no successful result).
#[test]
fn the_tally_oracle_reports_a_count_the_thread_does_not_hold() {
    let text = std::fs::read_to_string(format!(
        "{DIR}/a_typed_tally_across_a_wait_for_approval.toml"
    ))
    .unwrap();
    let mut h = Harness::<Desk, Tally>::with_context(|| Desk {
        name: "south".into(),
        limit: 9,
    });
    h.hook::<Sloppy>("tally")
        .oracle("tally_counts_each_committed_result_once", tally_matches);
    let s = h.parse("sloppy.toml", &text).unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    let verdict = pai_sim::verdict(&s, &report);
    let err = verdict.unwrap_err();
    assert!(
        err.contains("tally_counts_each_committed_result_once"),
        "{err}"
    );
}

/// A tally hook that counts every result, whatever its status.
#[derive(Debug, Deserialize, JsonSchema)]
struct Sloppy {
    #[allow(dead_code)]
    tool: String,
}

impl UserHook<Desk, Tally> for Sloppy {
    fn build(&self, name: &str) -> Box<dyn Lifecycle<Desk>> {
        Box::new(hook::after_tool_result(name, |cx, input| {
            let call = input.result.call_id.to_string();
            HookFuture::new(async move {
                cx.update_run_metadata(|t: &mut Tally| t.counted.push(call))
                    .await?;
                Ok(ToolResultDecision::Continue)
            })
        }))
    }
}
