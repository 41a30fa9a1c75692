//! What the scenario's hooks make of the committed outcome depend on
//! faults, as the rules allow, and so leave out of the twin's comparison:
//! read off the library hooks' configurations (a registered hook, whose
//! writes no oracle foresees, makes the run not judged instead).
//!
//! - A count a `patch_metadata` hook keeps in `prepare_run` (once per
//!   episode, L1: a takeover is an episode) or in `prepare_model_step`,
//!   `before_tool_call` or `after_step` (phases of a step a taker makes
//!   again when its holder committed nothing of it, K3). What hooks write
//!   about a tool result (`after_tool_result`, `on_output`) commits with
//!   that result and stays compared (K5).
//! - What `set_metadata` and `context_message` write in a run's first
//!   episode only: a first episode cut off before it committed leaves a
//!   taker a resumed one (K3), which writes nothing.
//! - The thread metadata a `mutate_thread` hook writes under an
//!   expectation: whether a lease renewal falls between its read and its
//!   write is timing, which faults move (H3 counts renewals).
//! - What compaction makes, with a `context_message` hook beside it: the
//!   first-episode message a taker does not store again changes how many
//!   messages a compaction summarizes and whether it compacts at all, so
//!   its summary records and cursor are left out.
//! - The visibility of user and system messages, with a `hide_message`
//!   hook of those roles: it hides the thread's n-th message of its role
//!   stored when its step runs, and whether a client's send landed before
//!   that step or after is timing (R1: the rewrite sees what is stored).

use std::collections::BTreeSet;

use crate::hooks::{HookSpec, MessageRole, MetadataPhase};
use crate::scenario::{ExpectSpec, Scenario};

/// The compaction helper's private key (its cursor), written again here.
pub(crate) const COMPACTION_KEY: &str = "pai.compaction";

/// What the comparison leaves out, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Mask {
    /// Run metadata keys.
    pub(crate) run_keys: BTreeSet<String>,
    /// Client-readable thread metadata keys.
    pub(crate) thread_keys: BTreeSet<String>,
    /// Private thread metadata keys.
    pub(crate) private_keys: BTreeSet<String>,
    /// Texts of hidden context messages stored in a run's first episode only.
    pub(crate) first_episode_texts: BTreeSet<String>,
    /// Whether the visibility of the messages clients store (user, system)
    /// is left out.
    pub(crate) client_visibility: bool,
    /// Whether compaction's summary records and cursor are left out.
    pub(crate) compaction: bool,
    /// What was left out, each with the hook and rule that allow it.
    pub(crate) why: Vec<String>,
}

impl Mask {
    /// The mask of `s`'s library hooks.
    pub(crate) fn of(s: &Scenario) -> Mask {
        let mut m = Mask::default();
        for h in &s.hooks {
            let Some(spec) = h.library() else { continue };
            m.add(&h.name, spec);
        }
        let compacts = s
            .hooks
            .iter()
            .find(|h| matches!(h.library(), Some(HookSpec::Compaction(_))));
        if let Some(c) = compacts.filter(|_| !m.first_episode_texts.is_empty()) {
            m.compaction = true;
            m.private_keys.insert(COMPACTION_KEY.to_string());
            m.why.push(format!(
                "{}'s summaries and cursor (a context message stored in a run's first episode only changes what it summarizes, K3)",
                c.name
            ));
        }
        m
    }

    fn add(&mut self, hook: &str, spec: &HookSpec) {
        match spec {
            HookSpec::PatchMetadata(p) if p.phase != MetadataPhase::AfterToolResult => {
                if let Some(key) = &p.count {
                    self.run_keys.insert(key.clone());
                    self.why.push(format!(
                        "run metadata `{key}` ({hook} counts a phase a taker may run again, L1, K3)"
                    ));
                }
            }
            HookSpec::SetMetadata(set) => {
                for key in set.values.keys() {
                    self.run_keys.insert(key.clone());
                    self.why.push(format!(
                        "run metadata `{key}` ({hook} writes it in a run's first episode only, K3)"
                    ));
                }
            }
            HookSpec::ContextMessage(c) => {
                self.first_episode_texts.insert(c.text.clone());
                self.why.push(format!(
                    "the context message of {hook} (stored in a run's first episode only, K3)"
                ));
            }
            HookSpec::HideMessage(h) if h.role != MessageRole::Assistant => {
                if !self.client_visibility {
                    self.why.push(format!(
                        "the visibility of user and system messages ({hook} hides the n-th one stored when its step runs, R1)"
                    ));
                }
                self.client_visibility = true;
            }
            HookSpec::MutateThread(t) if t.expect != ExpectSpec::Nothing => {
                for key in t.metadata.keys() {
                    self.thread_keys.insert(key.clone());
                    self.why.push(format!(
                        "thread metadata `{key}` ({hook}'s expectation meets renewals by timing, H3)"
                    ));
                }
                for key in t.private.keys() {
                    self.private_keys.insert(key.clone());
                    self.why.push(format!(
                        "private metadata `{key}` ({hook}'s expectation meets renewals by timing, H3)"
                    ));
                }
            }
            _ => {}
        }
    }
}
