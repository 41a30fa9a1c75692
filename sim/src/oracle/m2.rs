//! SPEC M2: a resolver's `next()` is memoized (called twice, the inner
//! chain runs once), and `next(base)` replaces the downstream leaf with
//! the base while the inner hooks still run over it.
//!
//! Judged from what a step's resolver chain leaves in the log: the context
//! leaf's event and each resolver's note, which come before the step's
//! `resolve_model_context`. Per step (of an episode, as a takeover begins
//! a step again): the leaf runs at most once, and each resolver decides at
//! most once (as often as the scenario composed a hook of that name); and
//! the leaf is a base exactly when a resolver that gives one
//! (`base_context`, compaction) decided in that step. A step that failed
//! or was cancelled before its `resolve_model_context` is not judged.

use std::collections::BTreeMap;

use pai_runtime::{Event, event::EventKind, hook::Phase};

use super::observed::{Observed, Violation};
use crate::hooks::HookSpec;
use crate::scenario::{OracleId, Scenario};

/// The name compaction's notes carry (the helper names itself).
const COMPACTION: &str = "compaction";

/// What one step's resolver chain left so far.
#[derive(Debug, Default)]
struct Chain<'a> {
    /// Each leaf the step ran: whether it was a base.
    leaves: Vec<bool>,
    /// How often each resolver decided.
    notes: BTreeMap<&'a str, usize>,
}

/// The scenario's resolvers: how many of each name, and which give a base.
#[derive(Debug, Default)]
struct Resolvers<'a> {
    count: BTreeMap<&'a str, usize>,
    bases: Vec<&'a str>,
    /// A registered resolver runs: whether a base was given is not known.
    unforeseen: bool,
}

fn resolvers(s: &Scenario) -> Resolvers<'_> {
    let mut r = Resolvers::default();
    for h in s
        .hooks
        .iter()
        .filter(|h| h.handles(Phase::ResolveModelContext))
    {
        let name = match h.library() {
            Some(HookSpec::Compaction(_)) => COMPACTION,
            _ => h.name.as_str(),
        };
        *r.count.entry(name).or_default() += 1;
        if matches!(
            h.library(),
            Some(HookSpec::BaseContext(_) | HookSpec::Compaction(_))
        ) {
            r.bases.push(name);
        }
        r.unforeseen |= h.is_user();
    }
    r
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    judge(o.events, &resolvers(o.scenario))
}

fn judge<'a>(events: &'a [Event], r: &Resolvers<'_>) -> Vec<Violation> {
    let mut open: BTreeMap<&str, Chain<'a>> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let run = e.run_id.as_str();
        match &e.kind {
            EventKind::ContextLeaf { base, .. } => {
                open.entry(run).or_default().leaves.push(*base);
            }
            EventKind::Hook(n) if n.phase == Phase::ResolveModelContext => {
                *open
                    .entry(run)
                    .or_default()
                    .notes
                    .entry(&n.hook)
                    .or_default() += 1;
            }
            EventKind::ResolveModelContext { step, .. } => {
                let chain = open.remove(run).unwrap_or_default();
                out.extend(step_chain(run, *step, &chain, r));
            }
            // A new episode, or a step that never resolved: start afresh.
            EventKind::LeaseAcquired { .. }
            | EventKind::TakenOver { .. }
            | EventKind::LeaseLost { .. }
            | EventKind::Failed { .. }
            | EventKind::Cancelled { .. }
            | EventKind::Ended { .. } => {
                open.remove(run);
            }
            _ => {}
        }
    }
    out
}

/// What is wrong with one step's chain.
fn step_chain(run: &str, step: u32, chain: &Chain<'_>, r: &Resolvers<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut flag = |message: String| {
        out.push(Violation::new(OracleId::M2, Some(run), message));
    };
    if chain.leaves.len() > 1 {
        flag(format!(
            "step {step}'s context leaf ran {} times: next() is memoized, the inner chain runs once",
            chain.leaves.len()
        ));
    }
    for (hook, n) in &chain.notes {
        let composed = r.count.get(hook).copied().unwrap_or(1);
        if *n > composed {
            flag(format!(
                "resolver {hook} decided {n} times in step {step}: next() is memoized, the inner chain runs once"
            ));
        }
    }
    let based = r.bases.iter().any(|b| chain.notes.contains_key(b));
    // A registered resolver may give a base or not: the leaf is not judged.
    let wrong = chain.leaves.iter().find(|b| !r.unforeseen && **b != based);
    if let Some(leaf) = wrong {
        let (was, want) = match leaf {
            true => ("a base", "the stored history: no resolver gave a base"),
            false => (
                "the stored history",
                "the base a resolver gave with next(base)",
            ),
        };
        flag(format!("step {step}'s leaf was {was}, not {want}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pai_runtime::hook::{HookNote, NoteDecision};

    fn ev(kind: EventKind) -> Event {
        super::super::facts::ev(kind)
    }

    fn leaf(base: bool) -> Event {
        ev(EventKind::ContextLeaf {
            step: 0,
            base,
            messages: 1,
        })
    }

    fn note(hook: &str) -> Event {
        ev(EventKind::Hook(HookNote {
            phase: Phase::ResolveModelContext,
            hook: hook.into(),
            decision: NoteDecision::Context { messages: 1 },
        }))
    }

    fn resolved() -> Event {
        ev(EventKind::ResolveModelContext {
            step: 0,
            anchor: 1,
            messages: 1,
        })
    }

    fn chain<'a>(count: &[(&'a str, usize)], bases: &[&'a str]) -> Resolvers<'a> {
        Resolvers {
            count: count.iter().copied().collect(),
            bases: bases.to_vec(),
            unforeseen: false,
        }
    }

    /// An outer resolver calling next() twice over one inner resolver:
    /// one leaf and one inner note per step.
    #[test]
    fn a_memoized_chain_is_quiet() {
        let r = chain(&[("outer", 1), ("inner", 1)], &[]);
        let found = judge(&[leaf(false), note("inner"), note("outer"), resolved()], &r);
        assert_eq!(found, vec![]);
    }

    /// A next() that runs the inner chain twice leaves two leaves and two
    /// notes of the inner resolver.
    #[test]
    fn an_inner_chain_run_twice_is_reported() {
        let r = chain(&[("outer", 1), ("inner", 1)], &[]);
        let events = [
            leaf(false),
            note("inner"),
            leaf(false),
            note("inner"),
            note("outer"),
            resolved(),
        ];
        let found = judge(&events, &r);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].message.contains("leaf ran 2 times"));
        assert!(found[1].message.contains("inner decided 2 times"));
    }

    /// next(base): the leaf is the base when a base-giving resolver decided,
    /// and the stored history otherwise.
    #[test]
    fn the_leaf_is_a_base_exactly_when_a_base_was_given() {
        let r = chain(&[("base", 1), ("window", 1)], &["base"]);
        let ok = judge(&[leaf(true), note("window"), note("base"), resolved()], &r);
        assert_eq!(ok, vec![]);
        let lost = judge(&[leaf(false), note("window"), note("base"), resolved()], &r);
        assert_eq!(lost.len(), 1, "{lost:?}");
        let r = chain(&[("window", 1)], &[]);
        let stray = judge(&[leaf(true), note("window"), resolved()], &r);
        assert_eq!(stray.len(), 1, "{stray:?}");
        // A registered resolver may have given the base: not judged.
        let r = Resolvers {
            unforeseen: true,
            ..chain(&[("mine", 1)], &[])
        };
        assert_eq!(judge(&[leaf(true), note("mine"), resolved()], &r), vec![]);
    }

    /// A step that failed before it resolved leaves nothing for the next.
    #[test]
    fn a_failed_step_is_not_carried_over() {
        let r = chain(&[("inner", 1)], &[]);
        let failed = ev(EventKind::Failed {
            phase: pai_runtime::event::RunStage::Phase(Phase::ResolveModelContext),
            message: "x".into(),
        });
        let events = [
            leaf(false),
            note("inner"),
            failed,
            leaf(false),
            note("inner"),
            resolved(),
        ];
        assert_eq!(judge(&events, &r), vec![]);
    }
}
