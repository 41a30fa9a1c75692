//! What hooks and summaries write, and whether it persists (issue 38):
//! crossings the main draw rarely reaches.
//!
//! - **A hook's write cut off from its result.** Among workers, a backend
//!   tool the script calls (made to echo its input, or added with a turn
//!   that calls it) gets an `on_output` handler counting its outputs
//!   under a key no other hook writes, often beside a
//!   `patch_metadata` counting every result in `after_tool_result`;
//!   workers crash or are held at their second or third append (often a
//!   step's results' commit), the request often lost. What the hooks staged must be
//!   lost with the result, and a call run again counted once (K5;
//!   `cross.hook_write_cut_off`).
//! - **A summary through the redactor.** A redactor and a compaction
//!   helper with a low threshold whose summaries repeat a secret the
//!   redactor masks, and sends enough to pass the threshold (C3;
//!   `cross.summary_redacted`); among workers, often crashes or holds at
//!   the workers' first compaction writes
//!   (`cross.summary_redacted_cut_off`).
//!
//! Drawn from its own stream of the seed, after the other generators, so
//! the cases they draw stay as they were.

use super::draw::{Features, Gen};
use crate::hooks::{CompactionSpec, HookSpec, MetadataPhase, PatchMetadata, Redact, RedactPattern};
use serde_json::json;

use crate::scenario::{
    FaultSpec, LifecycleEntry, OnOutputSpec, RequestAt, ScenarioSpec, TimelineEntry, ToolCallSpec,
    ToolEntry, ToolSpec, TurnSpec,
};

/// A stream of the seed's rng apart from the other generators'.
const STREAM: u64 = 0x5eed_c3c3_0438_0005;

/// The key a cut-off case's `on_output` counts under (no other generated
/// hook writes it, so the K5 oracle judges it).
pub(super) const BOOKED: &str = "booked";

/// The key a cut-off case's `after_tool_result` counts every result under.
pub(super) const RESULTS: &str = "results_seen";

/// Secrets a summary repeats, each with a pattern that masks it.
const SECRETS: &[(&str, &str)] = &[
    ("sk-Sum9_k2", "sk-[A-Za-z0-9_-]+"),
    ("ghp_Sum4", "ghp_[A-Za-z0-9]+"),
    ("key-5e7a", "key-[a-f0-9]+"),
    ("password", "password"),
];

/// Adds the hook-write and summary crossings to some cases.
pub(super) fn persist(seed: u64, features: Features, spec: &mut ScenarioSpec) {
    let mut g = Gen::new(seed ^ STREAM, features);
    if !spec.workers.is_empty() && g.chance(50) {
        hook_writes(&mut g, spec);
    }
    if g.chance(7) {
        summaries(&mut g, spec);
    }
}

/// The backend tools the scripts call.
fn called_backend(spec: &ScenarioSpec) -> Vec<String> {
    let called = |name: &str| {
        std::iter::once(&spec.model)
            .chain(spec.models.values())
            .flat_map(|m| &m.turns)
            .flat_map(|t| &t.tool_calls)
            .any(|c| c.tool == name)
    };
    spec.agent
        .tools
        .iter()
        .filter_map(|t| t.scripted())
        .filter(|t| t.approval.is_never() && !t.client && called(&t.name))
        .map(|t| t.name.clone())
        .collect()
}

/// A tool the scripts call that echoes its input: one of the called
/// backend tools made to, or a new one the script's first turn calls
/// (none when the model replays recordings and calls no such tool).
fn booking_tool(g: &mut Gen, spec: &mut ScenarioSpec) -> Option<String> {
    let called = called_backend(spec);
    if called.is_empty() && !spec.model.replay.is_empty() {
        return None;
    }
    let name = match called.is_empty() {
        true => "booker".to_string(),
        false => g.pick(&called).clone(),
    };
    if called.is_empty() {
        spec.agent.tools.push(ToolEntry::from(ToolSpec {
            name: name.clone(),
            ..ToolSpec::default()
        }));
        let turn = TurnSpec {
            latency_ms: g.range(0, 40),
            tool_calls: vec![ToolCallSpec {
                tool: name.clone(),
                input: json!({ "room": g.range(1, 99) }),
            }],
            ..TurnSpec::default()
        };
        spec.model.turns.insert(0, turn);
    }
    if let Some(t) = spec
        .agent
        .tools
        .iter_mut()
        .filter_map(|t| t.scripted_mut())
        .find(|t| t.name == name)
        .filter(|t| !t.echo && t.output.is_none())
    {
        (t.fail, t.throw, t.panic) = (None, None, None);
        t.echo = true;
    }
    Some(name)
}

/// A counting `on_output` (and often a counting `after_tool_result`), and
/// workers cut off at their second or third append (a step's results'
/// commit, or the next step's).
fn hook_writes(g: &mut Gen, spec: &mut ScenarioSpec) {
    let Some(tool) = booking_tool(g, spec) else {
        return;
    };
    if let Some(t) = spec
        .agent
        .tools
        .iter_mut()
        .filter_map(|t| t.scripted_mut())
        .find(|t| t.name == tool)
    {
        t.on_output = Some(OnOutputSpec {
            count: Some(BOOKED.into()),
            keep: g.maybe(30, |_| "last_booked".to_string()),
        });
        t.latency_ms = t.latency_ms.max(g.range(10, 120));
    }
    if g.chance(60) {
        let count = HookSpec::PatchMetadata(PatchMetadata {
            name: None,
            phase: MetadataPhase::AfterToolResult,
            count: Some(RESULTS.into()),
            set: Default::default(),
        });
        spec.lifecycle.push(LifecycleEntry::from(count));
    }
    cut_off(g, spec, "append", (2, 3));
}

/// A redactor, a compaction helper whose summaries repeat a secret, and
/// sends enough to pass its threshold; among workers, often a fault at
/// the compaction's write.
fn summaries(g: &mut Gen, spec: &mut ScenarioSpec) {
    let (secret, pattern) = *g.pick(SECRETS);
    let Ok(pattern) = RedactPattern::try_from(pattern.to_string()) else {
        return;
    };
    let texts: Vec<String> = (0..g.range(1, 3))
        .map(|_| format!("{} {secret} {}", g.text(3), g.text(2)))
        .collect();
    let existing = spec.lifecycle.iter_mut().find_map(|h| match h {
        LifecycleEntry::Library(HookSpec::Compaction(c)) => Some(c),
        _ => None,
    });
    match existing {
        Some(c) => c.summaries = texts,
        None => {
            let threshold = g.range(2, 4) as usize;
            let compaction = HookSpec::Compaction(CompactionSpec {
                name: None,
                threshold,
                keep: g.index(threshold),
                summaries: texts,
                fail_at: Vec::new(),
                latency_ms: g.maybe(40, |g| g.range(1, 60)).unwrap_or(0),
            });
            spec.lifecycle.push(LifecycleEntry::from(compaction));
        }
    }
    let redact = HookSpec::Redact(Redact {
        name: None,
        patterns: vec![pattern],
        replacement: "[hidden]".into(),
    });
    spec.lifecycle.push(LifecycleEntry::from(redact));
    let thread = spec
        .timeline
        .iter()
        .find(|e| e.send.is_some())
        .map_or_else(|| "main".to_string(), |e| e.thread.clone());
    let mut at = g.range(0, 40);
    for _ in 0..g.range(3, 5) {
        spec.timeline.push(TimelineEntry {
            at,
            thread: thread.clone(),
            send: Some(g.text(4)),
            ..TimelineEntry::default()
        });
        at += g.range(5, 120);
    }
    if !spec.workers.is_empty() && g.chance(60) {
        cut_off(g, spec, "mutate", (1, 2));
    }
}

/// Faults at the workers' own requests of kind `request` (the `nth` of
/// each, in `nth`'s range): each worker, or at least one, is crashed or
/// held there, the request often lost, so whichever worker holds the run
/// when it makes that request is cut off then.
fn cut_off(g: &mut Gen, spec: &mut ScenarioSpec, request: &str, nth: (u64, u64)) {
    let workers: Vec<String> = spec.workers.iter().map(|w| w.name.clone()).collect();
    let first = g.index(workers.len());
    for (i, worker) in workers.into_iter().enumerate() {
        if i != first && !g.chance(50) {
            continue;
        }
        let at = Some(RequestAt {
            worker: None,
            request: request.to_string(),
            nth: g.range(nth.0, nth.1) as usize,
            lost: g.chance(75),
        });
        let lasts = g.range(50, 900);
        spec.faults.push(match g.chance(75) {
            true => FaultSpec::Crash {
                worker,
                at_ms: None,
                at,
                restart_after_ms: Some(lasts),
            },
            false => FaultSpec::Hold {
                worker,
                at_ms: None,
                at,
                release_after_ms: lasts,
            },
        });
    }
}
