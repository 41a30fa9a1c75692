//! How a composition folds its hooks' patches (SPEC L5, P1–P4): in place,
//! each patch's parts moved, never a message a hook returned cloned.

use std::borrow::Cow;

use super::input::StepInput;
use crate::message::ModelMessage;
use crate::patch::{Patch, Route, RoutePatch};

/// Folds one more hook's run patch into the composed patch and the route
/// the next hook sees (L5).
pub(super) fn fold_run(merged: &mut Patch, route: &mut Cow<'_, Route>, p: Patch) {
    if !p.route.is_empty() {
        route.to_mut().apply(&p.route);
    }
    merged.then(p);
}

/// A `prepare_model_step` composition between two hooks (L5): what the
/// next hook sees, and the patch composed so far, kept as one list of
/// messages so that an appended message is moved, never copied.
#[derive(Debug)]
pub(super) struct StepFold<'a> {
    step: u32,
    /// The step's route, as the composition was given it.
    base: &'a Route,
    /// Once a hook's patch routed: the route the next hook sees, and the
    /// composed routing patch. Boxed: rare, and kept out of the
    /// composition's future, which holds this fold.
    routed: Option<Box<(Route, RoutePatch)>>,
    /// The messages the next hook sees, but for `pending`.
    view: Cow<'a, [ModelMessage]>,
    /// Where the composed appends start in `view`: after the base
    /// messages, or after the replacing list.
    split: usize,
    /// Whether `view[..split]` is the composed patch's replacing list (P4).
    replaced: bool,
    /// Appends of the last hook, moved into `view` only when another hook
    /// is to see them.
    pending: Vec<ModelMessage>,
}

impl<'a> StepFold<'a> {
    pub(super) fn new(input: &'a StepInput<'a>) -> StepFold<'a> {
        StepFold {
            step: input.step,
            base: input.route,
            routed: None,
            view: Cow::Borrowed(input.messages),
            split: input.messages.len(),
            replaced: false,
            pending: Vec::new(),
        }
    }

    /// The input of the next hook, `later` hooks coming after it: the base
    /// with the earlier hooks' patches applied.
    pub(super) fn input(&mut self, later: usize) -> StepInput<'_> {
        if !self.pending.is_empty() {
            if let Cow::Borrowed(base) = self.view {
                // Room for as many appends again from this hook and each later one.
                let room = base.len() + self.pending.len() * (later + 2);
                let mut owned = Vec::with_capacity(room);
                owned.extend_from_slice(base);
                self.view = Cow::Owned(owned);
            }
            self.view.to_mut().append(&mut self.pending);
        }
        StepInput {
            step: self.step,
            route: self.routed.as_ref().map_or(self.base, |r| &r.0),
            messages: &self.view,
        }
    }

    /// Folds one more hook's patch in, taking its parts: applying the
    /// result equals applying the patches one by one (P1–P4).
    pub(super) fn absorb(&mut self, p: &mut Patch) {
        // Moved only when it routes: most patches only add messages.
        if !p.route.is_empty() {
            self.route(std::mem::take(&mut p.route));
        }
        let append = std::mem::take(&mut p.append_model_messages);
        if let Some(list) = p.replace_model_messages.take() {
            self.split = list.len();
            self.view = Cow::Owned(list);
            self.replaced = true;
            self.pending = append;
        } else if self.pending.is_empty() {
            self.pending = append;
        } else {
            self.pending.extend(append);
        }
    }

    /// Folds a routing patch into the route the next hook sees and the
    /// composed routing patch (P1–P3).
    fn route(&mut self, route: RoutePatch) {
        match &mut self.routed {
            Some(routed) => {
                routed.0.apply(&route);
                routed.1.then(&route);
            }
            None => {
                let mut seen = self.base.clone();
                seen.apply(&route);
                // Folded into nothing, a patch is itself.
                self.routed = Some(Box::new((seen, route)));
            }
        }
    }

    /// The composed patch.
    pub(super) fn finish(self) -> Patch {
        let StepFold {
            routed,
            view,
            split,
            replaced,
            mut pending,
            ..
        } = self;
        let (replace, mut append) = match view {
            Cow::Borrowed(_) => (None, Vec::new()),
            Cow::Owned(mut list) if replaced => {
                let tail = list.split_off(split);
                (Some(list), tail)
            }
            Cow::Owned(mut list) => {
                list.drain(..split);
                (None, list)
            }
        };
        if append.is_empty() {
            append = pending;
        } else {
            append.append(&mut pending);
        }
        Patch {
            route: routed.map(|r| r.1).unwrap_or_default(),
            append_model_messages: append,
            replace_model_messages: replace,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::ModelSettings;

    fn warm(t: f64) -> RoutePatch {
        RoutePatch {
            settings: ModelSettings {
                temperature: Some(t),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// The composed patch as the fold was first written: the first
    /// non-empty patch, then each later one folded in by cloning.
    fn reference(patches: &[Patch]) -> Patch {
        let mut merged: Option<Patch> = None;
        for p in patches.iter().filter(|p| !p.is_empty()).cloned() {
            let Some(m) = &mut merged else {
                merged = Some(p);
                continue;
            };
            m.route.then(&p.route);
            if p.replace_model_messages.is_some() {
                m.replace_model_messages = p.replace_model_messages;
                m.append_model_messages = p.append_model_messages;
            } else {
                m.append_model_messages.extend(p.append_model_messages);
            }
        }
        merged.unwrap_or_default()
    }

    fn cases() -> Vec<Vec<Patch>> {
        let replace = Patch {
            replace_model_messages: Some(vec![ModelMessage::user("r")]),
            append_model_messages: vec![ModelMessage::system("after r")],
            ..Patch::default()
        };
        let model = Patch::route(RoutePatch {
            model: Some("other".into()),
            tools: Some(vec!["t".into()]),
            ..Default::default()
        });
        let empty_replace = Patch {
            replace_model_messages: Some(Vec::new()),
            ..Patch::default()
        };
        let a = || Patch::append_system("a");
        let b = || Patch::append_system("b");
        vec![
            vec![],
            vec![Patch::default()],
            vec![a()],
            vec![a(), b()],
            vec![a(), Patch::default(), b(), a()],
            vec![Patch::route(warm(0.5)), a()],
            vec![a(), replace.clone(), b()],
            vec![replace.clone()],
            vec![replace, a(), Patch::route(warm(0.1))],
            vec![
                Patch::route(warm(0.5)),
                model.clone(),
                Patch::route(warm(0.7)),
            ],
            vec![model, a(), Patch::route(warm(0.7))],
            vec![a(), empty_replace.clone(), b(), Patch::default()],
            vec![a(), empty_replace],
        ]
    }

    /// Folding through `StepFold` or `Patch::then` gives the reference
    /// patch, and every hook sees the base with the earlier patches applied
    /// (L5, P1–P4).
    #[test]
    fn l5_step_fold_equals_patches_applied_in_order() {
        let base = vec![ModelMessage::user("hello")];
        let route = Route::new("m");
        for patches in cases() {
            let input = StepInput {
                step: 3,
                route: &route,
                messages: &base,
            };
            let mut fold = StepFold::new(&input);
            let (mut then, mut sent, mut seen) = (Patch::default(), base.clone(), route.clone());
            for (n, p) in patches.iter().enumerate() {
                let sub = fold.input(patches.len() - n - 1);
                assert_eq!(sub.step, 3);
                assert_eq!(sub.messages, &sent[..], "{patches:?}");
                assert_eq!(*sub.route, seen, "{patches:?}");
                p.apply_messages(&mut sent);
                seen.apply(&p.route);
                then.then(p.clone());
                fold.absorb(&mut p.clone());
            }
            let got = fold.finish();
            assert_eq!(got, reference(&patches), "{patches:?}");
            assert_eq!(then, got, "{patches:?}");
            let mut applied = base.clone();
            got.apply_messages_owned(&mut applied);
            assert_eq!(applied, sent, "{patches:?}");
        }
    }
}
