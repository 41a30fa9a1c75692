//! `stream_guard`: a guardrail on the model's output. It aborts the step with
//! a replacement, outcome and reason (SPEC S4) once the text so far contains
//! a phrase; buffering, it releases nothing before it has judged (S5).

use pai_runtime::{
    Part, hook,
    message::Outcome,
    stream::Abort,
    text::{Verdict, guard_text, inspect_text_deltas},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::SimHook;

/// Abort the step with `replacement` when the text so far contains
/// `contains` (case-insensitive). With `buffer = true` nothing is released
/// before the whole text is judged (S5); otherwise each delta is released at
/// once (S4: released chunks stay released).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamGuard {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The phrase that aborts the step (case-insensitive).
    #[schemars(length(min = 1))]
    pub contains: String,
    /// Release nothing before the whole text is judged (SPEC S5).
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    #[schemars(extend("default" = false))]
    pub buffer: bool,
    /// The run's outcome after the abort.
    pub outcome: Outcome,
    /// Why, as the abort records it.
    pub reason: String,
    /// The text stored instead of the step's.
    pub replacement: String,
}

impl StreamGuard {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let me = self.clone();
        Box::new(hook::transform_step_stream(name, move |_, _| {
            let needle = me.contains.to_lowercase();
            let abort = Abort {
                reason: me.reason.clone(),
                outcome: me.outcome,
                replacement: vec![Part::text(me.replacement.clone())],
            };
            Some(if me.buffer {
                guard_text(move |text, _done| {
                    if text.to_lowercase().contains(&needle) {
                        Verdict::Abort(abort.clone())
                    } else {
                        Verdict::Hold
                    }
                })
            } else {
                inspect_text_deltas(move |text| {
                    text.to_lowercase().contains(&needle).then(|| abort.clone())
                })
            })
        }))
    }
}
