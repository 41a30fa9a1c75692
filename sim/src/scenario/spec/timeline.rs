//! The timeline as written: client actions at virtual times, and the calls
//! an answer names.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::hooks::TransformSpec;

/// One client action at a virtual time (`at`), or right after a moment of
/// a run's life (`after`). Exactly one of `send`, `steer`,
/// `cancel`, `watch`, `approve`, `deny`, `submit_result`,
/// `expect_waiting`, or of the trusted writer's `read_thread`, `mutate`,
/// `delete_thread`, `create_thread`, `regenerate`, `set_visibility` and
/// `bind_thread`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::schema::checks::timeline_entry)]
pub struct TimelineEntry {
    /// Virtual milliseconds from the start.
    #[serde(default, skip_serializing_if = "crate::defaults::is_zero")]
    #[schemars(extend("default" = 0))]
    pub at: u64,
    /// Instead of `at`: act right after this moment of a run of the
    /// entry's thread, as the store applied it (a step committed, a wait,
    /// an end), however long the run took to get there. Entries are played
    /// in order: one placed `after` waits for its moment, and the entries
    /// after it wait for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<AfterSpec>,
    /// The client that acts.
    #[serde(
        default = "crate::defaults::default_client",
        skip_serializing_if = "crate::defaults::is_default_client"
    )]
    #[schemars(length(min = 1), extend("default" = crate::defaults::default_client()))]
    pub client: String,
    /// The thread it acts on.
    #[serde(
        default = "crate::defaults::default_thread",
        skip_serializing_if = "crate::defaults::is_default_thread"
    )]
    #[schemars(length(min = 1), extend("default" = crate::defaults::default_thread()))]
    pub thread: String,
    /// Send this text as a user message (a new run, queued behind an active one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<String>,
    /// Steer the active run with this text (SPEC A4); a `send` when none is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steer: Option<String>,
    /// Cancel a run (SPEC K6, T8): `true` for the thread's current run (active,
    /// else the oldest queued), or `{ run = N }` for the run of the thread's
    /// N-th `send` (from 1).
    #[serde(default, skip_serializing_if = "CancelSpec::is_none")]
    #[schemars(extend("default" = false))]
    pub cancel: CancelSpec,
    /// Start watching the thread live under this name (SPEC S2); names are
    /// unique (checked by the loader).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub watch: Option<String>,
    /// With `watch`: the watcher's own live transforms, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub live: Vec<TransformSpec>,
    /// Approve a waiting call of an approval tool (SPEC T7, T9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<CallRef>,
    /// Deny a waiting call of an approval tool; the model sees `reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny: Option<DenySpec>,
    /// Submit the output of a waiting client tool call (SPEC T7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_result: Option<SubmitSpec>,
    /// Check that the thread's current run waits on exactly these calls,
    /// unanswered, in order (`[]`: on none); a mismatch fails the run (the
    /// `check` oracle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_waiting: Option<Vec<CallRef>>,
    /// A trusted writer reads the thread: the snapshot a later `mutate`'s
    /// expectation is taken from (SPEC H3).
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    pub read_thread: bool,
    /// A second trusted writer's mutation (SPEC H2, H3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutate: Option<super::facade::MutateSpec>,
    /// Delete the thread (SPEC H5): its runs end cancelled, reason `deleted`.
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    pub delete_thread: bool,
    /// Create the thread for `client` (after a delete: a new incarnation, H5).
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    pub create_thread: bool,
    /// Regenerate from the thread's N-th stored user message, from 1 (SPEC R1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub regenerate: Option<usize>,
    /// A visibility rewrite of one stored message (SPEC R1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_visibility: Option<super::facade::VisibilitySpec>,
    /// A trusted writer binds a handle of this name to the thread's
    /// current incarnation (SPEC H5: `admin().bind`) and reads the thread
    /// through it; later `read_thread`, `mutate`, `delete_thread`,
    /// `regenerate` and `set_visibility` entries on the same thread act
    /// through it with `handle`. Names are unique (checked by the loader).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub bind_thread: Option<String>,
    /// With `read_thread`, `mutate`, `delete_thread`, `regenerate` or
    /// `set_visibility`: act through the handle an earlier `bind_thread` on
    /// the same thread bound, which is refused once its incarnation was
    /// deleted (SPEC H5), instead of a handle that finds whichever
    /// incarnation is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub handle: Option<String>,
    /// The action must fail with an error containing this text (checked by
    /// the `check` oracle); without it, an error is only noted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub expect_error: Option<String>,
}

/// `after = { run = N, event = "...", step = K }`: a moment of the life of
/// the run of the thread's N-th `send`, as the store applied it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::schema::checks::after)]
pub struct AfterSpec {
    /// The run of the entry's thread's N-th `send`, from 1.
    #[schemars(range(min = 1))]
    pub run: usize,
    /// The moment: `commit_step` (the commit of step `step`), `wait` (the
    /// run's `nth` wait recorded) or `end` (the run's end recorded).
    pub event: AfterEvent,
    /// With `commit_step`: the step, from 0 as the event log numbers steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// With `wait`: which of the run's waits, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 1))]
    pub nth: Option<usize>,
}

/// A moment of a run's life an entry may be placed after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AfterEvent {
    /// The store committed the run's model step `step`.
    CommitStep,
    /// The store recorded the run's wait (its lease released).
    Wait,
    /// The store recorded the run's end.
    End,
}

/// A tool call named by its tool and its order among that tool's calls on
/// the thread (from 1), since call ids come from the seed; or by `call`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::schema::checks::call_ref)]
pub struct CallRef {
    /// The tool called (with `nth`); or name the call with `call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub tool: Option<String>,
    /// With `tool`: which of its calls on the thread, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 1))]
    pub nth: Option<usize>,
    /// Instead of `tool`: the call by its id. `"#N"` is the N-th call
    /// the thread stored as the timeline saw it (sampled before each of
    /// the thread's entries, any incarnation, regenerated-away messages
    /// included), the same under every seed; any other text is a call id
    /// as the runtime wrote it (the seed's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub call: Option<String>,
}

/// `deny = { tool = "...", nth = N, reason = "..." }` (or `call = "..."`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::schema::checks::call_ref)]
pub struct DenySpec {
    /// The tool called (with `nth`); or name the call with `call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub tool: Option<String>,
    /// With `tool`: which of its calls on the thread, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 1))]
    pub nth: Option<usize>,
    /// Instead of `tool`: the call by its id. `"#N"` is the N-th call
    /// the thread stored as the timeline saw it (sampled before each of
    /// the thread's entries, any incarnation, regenerated-away messages
    /// included), the same under every seed; any other text is a call id
    /// as the runtime wrote it (the seed's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub call: Option<String>,
    /// What the model is told.
    #[serde(default = "default_denial")]
    #[schemars(extend("default" = default_denial()))]
    pub reason: String,
}

fn default_denial() -> String {
    "denied by the user".into()
}

/// `submit_result = { tool = "...", nth = N, output = ... }` (or `call = "..."`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::schema::checks::call_ref)]
pub struct SubmitSpec {
    /// The tool called (with `nth`); or name the call with `call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub tool: Option<String>,
    /// With `tool`: which of its calls on the thread, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 1))]
    pub nth: Option<usize>,
    /// Instead of `tool`: the call by its id. `"#N"` is the N-th call
    /// the thread stored as the timeline saw it (sampled before each of
    /// the thread's entries, any incarnation, regenerated-away messages
    /// included), the same under every seed; any other text is a call id
    /// as the runtime wrote it (the seed's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub call: Option<String>,
    /// The output the client's tool produced.
    pub output: Value,
}

impl Default for TimelineEntry {
    /// Nothing yet, at time 0, by the default client on the default thread.
    fn default() -> Self {
        TimelineEntry {
            at: 0,
            after: None,
            client: crate::defaults::default_client(),
            thread: crate::defaults::default_thread(),
            send: None,
            steer: None,
            cancel: CancelSpec::default(),
            watch: None,
            live: Vec::new(),
            approve: None,
            deny: None,
            submit_result: None,
            expect_waiting: None,
            read_thread: false,
            mutate: None,
            delete_thread: false,
            create_thread: false,
            regenerate: None,
            set_visibility: None,
            bind_thread: None,
            handle: None,
            expect_error: None,
        }
    }
}

/// What a timeline entry cancels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CancelSpec {
    /// `cancel = true`: the thread's current run; `false`: nothing.
    Current(bool),
    /// `cancel = { run = N }`: the run of the thread's N-th send.
    Run(CancelRun),
}

/// `cancel = { run = N }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelRun {
    /// The thread's N-th `send`, from 1.
    #[schemars(range(min = 1))]
    pub run: usize,
}

impl CancelSpec {
    /// `cancel = false`: nothing to cancel.
    pub fn is_none(&self) -> bool {
        *self == CancelSpec::Current(false)
    }
}

impl Default for CancelSpec {
    fn default() -> Self {
        CancelSpec::Current(false)
    }
}
