//! A harness's hooks in generated cases (issue 28): each case of a
//! campaign with registered hooks gets some of them, each with a
//! configuration drawn from the case's seed, at random places in its
//! composition, beside the library's hooks the case drew.

use std::collections::BTreeMap;

use super::coverage::Coverage;
use crate::hooks::HookSpec;
use crate::registry::Registry;
use crate::scenario::{LifecycleEntry, ScenarioSpec, TimelineEntry, UseSpec};
use crate::world::Rng;

/// Mixes the registry's drawn hooks into `spec`, the case of `case_seed`:
/// each with even odds, and at least one when there are any; or why a
/// configuration could not be drawn.
pub(crate) fn mix(
    case_seed: u64,
    registry: &Registry,
    spec: &mut ScenarioSpec,
) -> Result<(), String> {
    let drawers: Vec<_> = registry.drawers().collect();
    if drawers.is_empty() {
        return Ok(());
    }
    let mut rng = Rng::new(case_seed ^ 0x005E_ED0F_0A57_0F0E);
    let mut chosen: Vec<usize> = (0..drawers.len()).filter(|_| rng.below(2) == 0).collect();
    if chosen.is_empty() {
        chosen.push(rng.below(drawers.len() as u64) as usize);
    }
    for i in chosen {
        let (name, draw) = drawers[i];
        let config = draw(rng.next_u64())
            .map_err(|e| format!("cannot draw a configuration of {name:?}: {e}"))?;
        let at = rng.below(spec.lifecycle.len() as u64 + 1) as usize;
        let entry = UseSpec {
            use_: name.to_string(),
            name: None,
            config,
        };
        spec.lifecycle.insert(at, LifecycleEntry::User(entry));
    }
    Ok(())
}

/// The features a harness's hook met in the cases it was mixed into: how
/// many of those cases reached each one (SPEC D8; issue 28 asks each
/// crossing of a user's hook to be reached, and counted).
pub const CROSSINGS: &[&str] = &[
    "cases",
    "waiting",
    "steering",
    "queueing",
    "cancel",
    "delete",
    "rewrites",
    "compaction",
    "workers",
    "faults",
];

/// Per hook a harness registered, in name order: its [`CROSSINGS`] counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MixCoverage(BTreeMap<String, BTreeMap<&'static str, u64>>);

impl MixCoverage {
    /// Counts one case: for each registered hook its composition holds,
    /// what the case reached.
    pub(crate) fn count(&mut self, spec: &ScenarioSpec, c: &Coverage) {
        let reached = reached(spec, c);
        let mut names: Vec<&str> = spec
            .lifecycle
            .iter()
            .filter_map(|e| match e {
                LifecycleEntry::User(u) => Some(u.use_.as_str()),
                LifecycleEntry::Library(_) => None,
            })
            .collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let counts = self.0.entry(name.to_string()).or_default();
            for (key, hit) in CROSSINGS.iter().zip(reached) {
                *counts.entry(key).or_default() += u64::from(hit);
            }
        }
    }

    /// How many cases with hook `name` reached `crossing`.
    pub fn count_of(&self, name: &str, crossing: &str) -> u64 {
        let counts = self.0.get(name);
        counts.and_then(|c| c.get(crossing)).copied().unwrap_or(0)
    }

    /// The hooks counted, in name order.
    pub fn hooks(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The crossings no case with hook `name` reached.
    pub fn blind_spots(&self, name: &str) -> Vec<&'static str> {
        let crossings = CROSSINGS.iter().copied();
        crossings.filter(|k| self.count_of(name, k) == 0).collect()
    }

    /// Adds another campaign's counts.
    pub fn merge(&mut self, other: &MixCoverage) {
        for (name, counts) in &other.0 {
            let mine = self.0.entry(name.clone()).or_default();
            for (k, n) in counts {
                *mine.entry(k).or_default() += n;
            }
        }
    }

    /// The table: a row per hook, a column per crossing.
    pub fn table(&self) -> String {
        let mut out = format!("{:<24}", "hook");
        for k in CROSSINGS {
            out.push_str(&format!(" {k:>10}"));
        }
        out.push('\n');
        for name in self.hooks() {
            out.push_str(&format!("{name:<24}"));
            for k in CROSSINGS {
                out.push_str(&format!(" {:>10}", self.count_of(name, k)));
            }
            out.push('\n');
        }
        out
    }
}

/// What one case reached, in the order of [`CROSSINGS`].
fn reached(spec: &ScenarioSpec, c: &Coverage) -> [bool; 10] {
    let hit = |k: &str| c.count(k) > 0;
    let entry = |f: fn(&TimelineEntry) -> bool| spec.timeline.iter().any(f);
    let rewrites = |t: &TimelineEntry| {
        t.mutate.is_some() || t.regenerate.is_some() || t.set_visibility.is_some()
    };
    let library = spec.lifecycle.iter().filter_map(LifecycleEntry::library);
    let rewrite_hook =
        |h: &HookSpec| matches!(h, HookSpec::RewritePatch(_) | HookSpec::RewriteListener(_));
    let (rewrite_hooks, compaction) = library.fold((false, false), |(r, c), h| {
        (
            r || rewrite_hook(h),
            c || matches!(h, HookSpec::Compaction(_)),
        )
    });
    [
        true,
        hit("transition.wait"),
        hit("steer.stored"),
        hit("queue.overlap") || hit("queue.behind_waiting"),
        hit("cancel.queued") || hit("cancel.active") || hit("cancel.waiting"),
        entry(|t| t.delete_thread),
        entry(rewrites) || rewrite_hooks,
        compaction,
        hit("workers.case"),
        crate::fuzz::COVERAGE_KEYS
            .iter()
            .any(|k| k.starts_with("fault.") && hit(k)),
    ]
}
