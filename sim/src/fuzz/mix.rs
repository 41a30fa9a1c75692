//! A harness's hooks in generated cases (issue 28): each case of a
//! campaign with registered hooks gets some of them, each with a
//! configuration drawn from the case's seed, at random places in its
//! composition, beside the library's hooks the case drew.

use std::collections::BTreeMap;

use super::coverage::Coverage;
use crate::hooks::HookSpec;
use crate::registry::Registry;
use crate::scenario::{LifecycleEntry, ScenarioSpec, TimelineEntry, ToolEntry, UseSpec};
use crate::world::Rng;

/// Mixes the registry's drawn hooks into `spec`, the case of `case_seed`:
/// each with even odds, and at least one when there are any; and weaves
/// its words into what the case's users and models say. Fails with why a
/// configuration could not be drawn.
pub(crate) fn mix(
    case_seed: u64,
    registry: &Registry,
    spec: &mut ScenarioSpec,
) -> Result<(), String> {
    let mut rng = Rng::new(case_seed ^ 0x005E_ED0F_0A57_0F0E);
    if !registry.types().json_metadata() {
        without_json_metadata(spec);
    }
    weave(&mut rng, registry.words(), spec);
    mix_hooks(&mut rng, registry, spec)?;
    super::mix_tools::mix_tools(case_seed, registry, spec)
}

/// `spec` without what keeps the run metadata as the simulator's JSON map
/// (the library's metadata hooks, tools' `on_output`): a typed harness's
/// agent keeps the author's type, and its loader refuses them.
fn without_json_metadata(spec: &mut ScenarioSpec) {
    let json = |e: &LifecycleEntry| e.library().is_some_and(HookSpec::reads_json_metadata);
    spec.lifecycle.retain(|e| !json(e));
    for t in &mut spec.agent.tools {
        match t {
            ToolEntry::Scripted(t) => t.on_output = None,
            ToolEntry::User(u) => u.on_output = None,
        }
    }
}

/// Some of the registry's drawn hooks, at random places of the
/// composition.
fn mix_hooks(rng: &mut Rng, registry: &Registry, spec: &mut ScenarioSpec) -> Result<(), String> {
    let drawers: Vec<_> = registry.drawers().collect();
    if drawers.is_empty() {
        return Ok(());
    }
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

/// Weaves the author's `words` into a third of the case's user messages
/// and scripted texts, each at a random place; a scripted text is then cut
/// anew into as many stream deltas as it had, at random characters, so a
/// word is often split across deltas (what a stream hook must survive).
fn weave(rng: &mut Rng, words: &[String], spec: &mut ScenarioSpec) {
    if words.is_empty() {
        return;
    }
    let pick = |rng: &mut Rng| words[rng.below(words.len() as u64) as usize].clone();
    for t in spec.timeline.iter_mut() {
        let Some(text) = t.send.as_mut() else {
            continue;
        };
        if rng.below(3) == 0 {
            let word = pick(rng);
            *text = insert(rng, text, &word);
        }
    }
    let scripts = std::iter::once(&mut spec.model).chain(spec.models.values_mut());
    for turn in scripts.flat_map(|m| m.turns.iter_mut()) {
        if turn.text.is_empty() || rng.below(3) != 0 {
            continue;
        }
        let word = pick(rng);
        let text = insert(rng, &turn.text.concat(), &word);
        turn.text = cut(rng, &text, turn.text.len().max(2));
    }
}

/// `text` with `word` inserted at a random word boundary, spaced.
fn insert(rng: &mut Rng, text: &str, word: &str) -> String {
    let spaces: Vec<usize> = text.match_indices(' ').map(|(i, _)| i).collect();
    let at = match spaces.len() {
        0 => text.len(),
        n => spaces[rng.below(n as u64) as usize],
    };
    format!("{} {word}{}", &text[..at], &text[at..])
}

/// `text` cut into `pieces` deltas at random characters (some may be
/// empty).
fn cut(rng: &mut Rng, text: &str, pieces: usize) -> Vec<String> {
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
    let mut cuts: Vec<usize> = (1..pieces)
        .map(|_| match bounds.len() {
            0 => text.len(),
            n => bounds[rng.below(n as u64) as usize],
        })
        .collect();
    cuts.sort_unstable();
    let mut out = Vec::with_capacity(pieces);
    let mut from = 0;
    for c in cuts.into_iter().chain([text.len()]) {
        out.push(text[from..c].to_string());
        from = c;
    }
    out
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

/// Per hook a harness registered, in name order: its [`CROSSINGS`] counts,
/// and the cases in which it made each kind of decision
/// ([`DECISIONS`](super::DECISIONS)).
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

    /// Counts one case's decisions: for each registered hook that made
    /// one, each kind it made, and `decided` once.
    pub(crate) fn decided(&mut self, decisions: &super::Decisions) {
        for (name, kinds) in decisions {
            let counts = self.0.entry(name.clone()).or_default();
            for k in kinds {
                *counts.entry(k).or_default() += 1;
            }
            *counts.entry("decided").or_default() += u64::from(!kinds.is_empty());
        }
    }

    /// How many cases with hook `name` reached `crossing` (or made the
    /// decision `crossing`, or any, `decided`).
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

    /// The table: a row per hook, a column per crossing; then a row per
    /// hook, a column per kind of decision (the cases in which it made
    /// one: a hook held in many cases that never decided was never put to
    /// the test).
    pub fn table(&self) -> String {
        let decided = ["cases", "decided"].iter().chain(super::DECISIONS);
        let mut out = String::new();
        for columns in [CROSSINGS.iter().collect::<Vec<_>>(), decided.collect()] {
            out.push_str(&format!("{:<24}", "hook"));
            for k in &columns {
                out.push_str(&format!(" {k:>12}"));
            }
            out.push('\n');
            for name in self.hooks() {
                out.push_str(&format!("{name:<24}"));
                for k in &columns {
                    out.push_str(&format!(" {:>12}", self.count_of(name, k)));
                }
                out.push('\n');
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_text_joins_back_whole_and_cuts_only_between_characters() {
        for seed in 0..200 {
            let mut rng = Rng::new(seed);
            let text = "Konto ACCT-4417 für Jörg 🙂 ok";
            let pieces = cut(&mut rng, text, 4);
            assert_eq!(pieces.len(), 4);
            assert_eq!(pieces.concat(), text);
        }
    }

    #[test]
    fn an_inserted_word_is_spaced_and_keeps_the_text() {
        let mut rng = Rng::new(1);
        let out = insert(&mut rng, "one two three", "ACCT-1");
        assert!(out.contains(" ACCT-1"), "{out}");
        assert_eq!(out.replace(" ACCT-1", ""), "one two three");
        assert_eq!(insert(&mut rng, "", "w"), " w");
    }

    #[test]
    fn words_reach_a_case_and_are_split_across_deltas_somewhere() {
        let mut registry = Registry::default();
        registry.add_words(["ACCT-4417".to_string()]);
        let (mut reached, mut split) = (0, 0);
        for seed in 0..60 {
            let mut spec = crate::fuzz::case(seed);
            mix(seed, &registry, &mut spec).unwrap();
            let turns = spec.model.turns.iter();
            for t in turns.filter(|t| t.text.concat().contains("ACCT-4417")) {
                reached += 1;
                split += usize::from(!t.text.iter().any(|d| d.contains("ACCT-4417")));
            }
        }
        assert!(reached > 5 && split > 0, "reached {reached}, split {split}");
    }

    #[test]
    fn words_reach_about_a_third_of_texts_and_never_a_turn_without_text() {
        let mut registry = Registry::default();
        registry.add_words(["ACCT-4417".to_string()]);
        let (mut texts, mut woven, mut sends, mut sent) = (0, 0, 0, 0);
        for seed in 0..300 {
            let before = crate::fuzz::case(seed);
            let mut after = before.clone();
            mix(seed, &registry, &mut after).unwrap();
            for (b, a) in before.model.turns.iter().zip(&after.model.turns) {
                if b.text.is_empty() {
                    assert!(a.text.is_empty(), "a turn without text got {:?}", a.text);
                    continue;
                }
                texts += 1;
                woven += usize::from(a.text.concat().contains("ACCT-4417"));
            }
            for (b, a) in before.timeline.iter().zip(&after.timeline) {
                if b.send.is_some() {
                    sends += 1;
                    sent += usize::from(a.send != b.send);
                }
            }
        }
        let third = |hit: usize, all: usize| (all / 5..all / 2).contains(&hit);
        assert!(third(woven, texts), "{woven} of {texts} texts");
        assert!(third(sent, sends), "{sent} of {sends} sends");
    }
}
