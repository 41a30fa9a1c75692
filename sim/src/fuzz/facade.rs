//! Generated thread-facade activity (SPEC D8 for H2–H5, K4, R1–R3, C1):
//! a trusted writer's reads and mutations (with expectations, some stale,
//! some failing), visibility rewrites, regenerations, deletes and
//! re-creations, at random times among the runs. Errors the runtime
//! answers (conflicts, a rewrite refused by an active run, a message that
//! is not there) are noted, never failures: the oracles judge.
//!
//! Among workers only reads, mutations and deletes are generated (and the
//! compaction hook is left out, but for the cases `near.rs` keeps it in
//! near a delete and a fault): rewrites among workers are not yet judged
//! by the cluster's store-log oracles.

use serde_json::json;

use super::draw::{Features, Gen};
use crate::hooks::HookSpec;
use crate::scenario::{
    CallRef, ExpectSpec, MutateSpec, ScenarioSpec, SubmitSpec, TimelineEntry, ToolEntry,
    VisibilitySpec,
};

/// A stream of the seed's rng apart from the other generators'.
const STREAM: u64 = 0x7ac4_de11_f00d_5eed;

/// Adds facade actions to most single-process cases.
pub(super) fn facade(seed: u64, features: Features, spec: &mut ScenarioSpec) {
    let mut g = Gen::new(seed ^ STREAM, features);
    if spec.cluster.is_some() {
        // Kept (or added) in a quarter of the cases, near a delete and a
        // fault (`near.rs`); rewrites are not generated among workers.
        if !super::near::compaction_near_delete(seed, features, spec) {
            spec.lifecycle
                .retain(|h| !matches!(h.library(), Some(HookSpec::Compaction(_))));
        }
        among_workers(&mut g, spec);
        return;
    }
    let slow_summary = spec
        .lifecycle
        .iter()
        .any(|h| matches!(h.library(), Some(HookSpec::Compaction(c)) if c.latency_ms > 0));
    if slow_summary && g.chance(70) {
        during_summaries(&mut g, spec);
    }
    if !g.chance(45) {
        return;
    }
    if g.chance(20) {
        across_incarnations(&mut g, spec);
    }
    if g.chance(15) {
        bound_across_incarnations(&mut g, spec);
    }
    for _ in 0..g.range(1, 4) {
        let base = TimelineEntry {
            at: g.range(0, 260),
            thread: match g.chance(15) {
                true => "side".into(),
                false => "main".into(),
            },
            ..TimelineEntry::default()
        };
        spec.timeline.push(action(&mut g, base));
    }
}

/// Among workers: reads, mutations with expectations and deletes (a
/// delete reaches a worker at its next renewal or write, H5), at times a
/// run is likely under way.
fn among_workers(g: &mut Gen, spec: &mut ScenarioSpec) {
    if !g.chance(35) {
        return;
    }
    for _ in 0..g.range(1, 3) {
        let base = TimelineEntry {
            at: g.range(20, 400),
            ..TimelineEntry::default()
        };
        let entry = match g.index(4) {
            0 => TimelineEntry {
                read_thread: true,
                ..base
            },
            1 => TimelineEntry {
                mutate: Some(mutation(g)),
                ..base
            },
            _ => TimelineEntry {
                delete_thread: true,
                ..base
            },
        };
        spec.timeline.push(entry);
    }
}

/// A trusted writer reads the thread, the thread is deleted and created
/// again, and the writer mutates expecting what it read: the expectation
/// names an incarnation that is gone, and conflicts even when the values
/// match (an empty private metadata read before and after, H3/H5).
fn across_incarnations(g: &mut Gen, spec: &mut ScenarioSpec) {
    let read = g.range(0, 200);
    let deleted = read + g.range(1, 60);
    let created = deleted + g.range(1, 60);
    let mutated = created + g.range(0, 60);
    let at = |at, entry: TimelineEntry| TimelineEntry { at, ..entry };
    if g.chance(50) {
        let answered = created + g.range(0, 80);
        answer_gone_call(g, spec, answered);
    }
    let expect = *g.pick(&[ExpectSpec::Version, ExpectSpec::Private]);
    let mut m = mutation(g);
    m.expect = expect;
    m.fail = false;
    let steps = [
        (
            read,
            TimelineEntry {
                read_thread: true,
                ..TimelineEntry::default()
            },
        ),
        (
            deleted,
            TimelineEntry {
                delete_thread: true,
                ..TimelineEntry::default()
            },
        ),
        (
            created,
            TimelineEntry {
                create_thread: true,
                ..TimelineEntry::default()
            },
        ),
        (
            mutated,
            TimelineEntry {
                mutate: Some(m),
                ..TimelineEntry::default()
            },
        ),
    ];
    spec.timeline
        .extend(steps.into_iter().map(|(t, e)| at(t, e)));
}

/// A trusted handle bound to the thread's incarnation, the thread deleted
/// and (mostly) created again, and the handle used after: its reads and
/// writes must be refused (SPEC H5). Sometimes it is used before the
/// delete too, where it must work.
fn bound_across_incarnations(g: &mut Gen, spec: &mut ScenarioSpec) {
    let bound = g.range(0, 200);
    let deleted = bound + g.range(1, 60);
    let mut steps = vec![
        (
            bound,
            TimelineEntry {
                bind_thread: Some("h".into()),
                ..TimelineEntry::default()
            },
        ),
        (
            deleted,
            TimelineEntry {
                delete_thread: true,
                ..TimelineEntry::default()
            },
        ),
    ];
    if g.chance(80) {
        let created = TimelineEntry {
            create_thread: true,
            ..TimelineEntry::default()
        };
        steps.push((deleted + g.range(1, 40), created));
    }
    if g.chance(30) {
        steps.push((g.range(bound, deleted), through_handle(g)));
    }
    for _ in 0..g.range(1, 3) {
        steps.push((deleted + g.range(0, 80), through_handle(g)));
    }
    // Stable order: a use at the time of its bind or delete stays after it.
    steps.sort_by_key(|(t, _)| *t);
    spec.timeline
        .extend(steps.into_iter().map(|(at, e)| TimelineEntry { at, ..e }));
}

/// An answer naming a call by `call = "#N"` after the thread was deleted
/// and created again: the call (if the timeline saw one) belongs to the
/// deleted incarnation and must be refused (SPEC T9, H5).
fn answer_gone_call(g: &mut Gen, spec: &mut ScenarioSpec, at: u64) {
    let waiting: Vec<(String, bool)> = spec
        .agent
        .tools
        .iter()
        .filter_map(ToolEntry::scripted)
        .filter(|t| t.approval.may_wait() || t.client)
        .map(|t| (t.name.clone(), t.client))
        .collect();
    // `#N` among the calls the scripts make: the loader refuses any other.
    let scripted = std::iter::once(&spec.model)
        .chain(spec.models.values())
        .flat_map(|m| &m.turns)
        .map(|t| t.tool_calls.len())
        .sum::<usize>();
    if waiting.is_empty() || scripted == 0 {
        return;
    }
    let (_, client) = g.pick(&waiting).clone();
    let call = Some(format!("#{}", g.range(1, scripted.min(3) as u64)));
    let entry = match client {
        true => TimelineEntry {
            submit_result: Some(SubmitSpec {
                tool: None,
                nth: None,
                call,
                output: json!({}),
            }),
            ..TimelineEntry::default()
        },
        false => TimelineEntry {
            approve: Some(CallRef {
                tool: None,
                nth: None,
                call,
            }),
            ..TimelineEntry::default()
        },
    };
    spec.timeline.push(TimelineEntry { at, ..entry });
}

/// Trusted mutations spread over the runs' time, some landing while a
/// slow compaction summary is produced (SPEC C1, H3).
fn during_summaries(g: &mut Gen, spec: &mut ScenarioSpec) {
    for _ in 0..g.range(2, 5) {
        spec.timeline.push(TimelineEntry {
            at: g.range(0, 800),
            mutate: Some(mutation(g)),
            ..TimelineEntry::default()
        });
    }
}

/// An action through the handle `h`.
fn through_handle(g: &mut Gen) -> TimelineEntry {
    let base = TimelineEntry {
        handle: Some("h".into()),
        ..TimelineEntry::default()
    };
    match g.index(4) {
        0 => TimelineEntry {
            read_thread: true,
            ..base
        },
        1 => TimelineEntry {
            delete_thread: true,
            ..base
        },
        _ => {
            let mut m = mutation(g);
            m.expect = ExpectSpec::Nothing;
            TimelineEntry {
                mutate: Some(m),
                ..base
            }
        }
    }
}

fn action(g: &mut Gen, base: TimelineEntry) -> TimelineEntry {
    match g.index(12) {
        0 | 1 => TimelineEntry {
            read_thread: true,
            ..base
        },
        2..=5 => TimelineEntry {
            mutate: Some(mutation(g)),
            ..base
        },
        6 | 7 => TimelineEntry {
            set_visibility: Some(VisibilitySpec {
                message: g.range(1, 6) as usize,
                transcript: g.chance(70),
                context: g.chance(50),
            }),
            ..base
        },
        8 | 9 => TimelineEntry {
            regenerate: Some(g.range(1, 3) as usize),
            ..base
        },
        10 => TimelineEntry {
            delete_thread: true,
            ..base
        },
        _ => TimelineEntry {
            create_thread: true,
            ..base
        },
    }
}

fn mutation(g: &mut Gen) -> MutateSpec {
    let mut m = MutateSpec {
        expect: *g.pick(&[
            ExpectSpec::Nothing,
            ExpectSpec::Version,
            ExpectSpec::Private,
        ]),
        fail: g.chance(10),
        ..MutateSpec::default()
    };
    if g.chance(50) {
        m.append.push(g.text(3));
    }
    if g.chance(50) {
        m.metadata.insert("topic".into(), json!(g.range(0, 9)));
    }
    if g.chance(50) || m.append.is_empty() && m.metadata.is_empty() {
        m.private.insert("cursor".into(), json!(g.range(0, 9)));
    }
    m
}
