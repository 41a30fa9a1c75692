//! Names a scenario file uses for things the simulator defines: oracles (in
//! `oracle = "..."`). Runtime events are named by the runtime's own
//! `pai_runtime::event::EventName`.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Declares the oracles once: their ids, the names files and reports use,
/// and what each judges.
macro_rules! oracles {
    ($($variant:ident = $name:literal [$($rule:literal),*]: $doc:literal;)*) => {
        /// An invariant oracle, by the name scenarios and reports use.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
        pub enum OracleId {
            $(#[doc = $doc] #[serde(rename = $name)] $variant,)*
        }

        impl OracleId {
            /// Every oracle, in the order reports list them.
            pub const ALL: &[OracleId] = &[$(OracleId::$variant,)*];

            /// The name scenario files (`oracle = "..."`) and transcripts use
            /// for this oracle.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(OracleId::$variant => $name,)*
                }
            }

            /// The SPEC rules this oracle judges on every run.
            pub fn judges(self) -> &'static [&'static str] {
                match self {
                    $(OracleId::$variant => &[$($rule),*],)*
                }
            }
        }
    };
}

oracles! {
    L14 = "L14" ["L14"]: "Every run's events follow the phase grammar of SPEC §1.";
    L1 = "L1" ["L1"]: "`prepare_run` is given the newest user message of its own run; each user message is answered by at most one run.";
    L4 = "L4" ["L4"]: "A hook failure fails its run with the hook's message; later hooks of that phase do not run; nothing uncommitted is stored.";
    L5 = "L5" ["L5"]: "`prepare_run` and `prepare_model_step` hooks run in composition order; a respond stops the chain.";
    L8 = "L8" ["L8"]: "`before_tool_call` hooks run in order, each seeing the last replacement; the first reject stops the chain.";
    L9 = "L9" ["L9"]: "`after_tool_result` hooks all run in order; the last replacement wins.";
    L10 = "L10" ["L10"]: "Every `after_step` hook is asked; the joined decision is the strongest.";
    L12 = "L12" ["L12"]: "A respond is stored as its canonical transform.";
    T1 = "T1" ["T1"]: "Every `before_tool_call` of a step finishes before any of its tools starts.";
    T2 = "T2" ["T2"]: "A step's tool results are committed in call order, within each tool message of the step.";
    T6 = "T6" ["T6"]: "An `on_output` handler runs for each successful output of its tool, and for nothing else.";
    L13 = "L13" ["L13"]: "A hidden lifecycle context message stays stored: context-visible, transcript-hidden, producer lifecycle.";
    T5 = "T5" ["T5"]: "No thrown detail reaches the model; a hook's replacement is what is stored and read.";
    T7 = "T7" ["T7"]: "A waiting run holds no lease: after its `wait` only answers and steers come until its next episode, and a run stored as waiting holds no lease and waits on calls. Approval is decided per call: no call whose tool needed approval for its input runs without one, and no call whose tool did not waits.";
    T8 = "T8" ["T8", "K3", "H6"]: "Once a run has ended, every tool call it committed has exactly one committed result on the stored thread; no call ever has two.";
    T9 = "T9" ["T9"]: "Every waiting call ends with exactly one final result, the one its answer asks for; answers name calls of the run's latest wait, once each, while it waits.";
    S1 = "S1" ["S1", "S2"]: "A step's stored assistant text is its provider's streamed text through the canonical stages: nothing lost, added or reordered (scripted deltas or a replayed recording, however chunked).";
    S3 = "S3" ["S3", "C3"]: "No stored, live or model-visible assistant text, and no compaction summary stored or sent to a model, matches a redaction pattern.";
    S4 = "S4" ["S4"]: "An aborted step stores its replacement only, with the abort's outcome and reason.";
    A2 = "A2" ["A2"]: "No run starts more steps than its limit.";
    A3 = "A3" ["A3"]: "Each transition follows the precedence complete > waiting > steering > next_step > natural, and the limit (a waiting step waits even at the limit).";
    A4 = "A4" ["A4"]: "Every steer is taken once, by the first step that starts after it is stored, or starts a run.";
    K1 = "K1" ["K1"]: "Runs of a thread start in arrival order, one at a time.";
    K2 = "K2" ["K2"]: "Fencing tokens only grow; every commit is made under the newest token of its thread; among workers, no write with a stale token lands and no run has two holders at once by the store's clock.";
    K2Steps = "K2-steps" ["K2"]: "No run's step is committed twice.";
    K3 = "K3" ["K3", "K5"]: "Among workers, a worker starts a tool only once a renewal of its lease was answered since it decided the call: a holder that cannot renew starts nothing more.";
    Lifecycle = "lifecycle" ["K3", "K6", "H5", "A1", "A2", "A3", "L12"]: "A reference state machine of each run, fed every worker's events in store order: nothing new after the run's transition ended it or after its holder heard of a delete (the phase then in flight may finish); no model call, tool, `prepare_run` or step commit after its holder heard of a cancel; no step before its predecessor's transition was decided in its episode (a taker decides the last committed step's transition first); no step committed after a cancel reached the store; no `before_tool_call` for a call after its answer was committed.";
    Liveness = "liveness" ["K3"]: "Once the last fault has healed, every run ends or waits for a client within the scenario's liveness bound.";
    K5 = "K5" ["K5"]: "No call's result is committed twice, a committed call never runs again, and every tool start carries the key run id + call id; what hooks write about a result commits with it, so a run-metadata count equals the committed results it counts.";
    K6 = "K6" ["K6"]: "A cancel reaches a run or says there was none; a run cancelled while queued never starts.";
    K4 = "K4" ["K4"]: "No trusted history rewrite commits while a run of its thread is active (leased, or waiting for a client); no regeneration while one is admitted and not ended.";
    H1 = "H1" ["H1"]: "Each commit bumps the version by one; watchers hear of every commit, in order.";
    H2 = "H2" ["H2"]: "Each mutation is one version, above every version its thread reported before and reported by no other commit; what it appended stays stored unless a rewrite or a deletion took it.";
    H3 = "H3" ["H3"]: "A mutation or regeneration with an expectation commits exactly when it holds against what the store held (the same version; the same private metadata, whatever else changed); a conflict reports the version it found.";
    H4 = "H4" ["H4"]: "A client's view of a thread is its stored metadata and transcript; no private metadata value reaches a client's view or a watcher.";
    H5 = "H5" ["H5"]: "After a thread is deleted, none of its runs commits, starts a tool, waits or is answered; each that had not ended ends once, cancelled with reason `deleted`.";
    H6 = "H6" ["H6"]: "In every context sent, each tool call has exactly one result after it.";
    M1 = "M1" ["M1"]: "No step's context holds a message stored after the step started.";
    M2 = "M2" ["M2"]: "A resolver's `next()` is memoized: per step the context leaf runs once and each resolver decides once, however often `next()` is called; the leaf is a base exactly when a resolver gave one with `next(base)`.";
    M3 = "M3" ["M3"]: "Every history read a hook makes returns only messages at or before its step's anchor, all of its run's incarnation.";
    C1 = "C1" ["C1"]: "Each compaction's summary request was sent every context-visible message after the previous cursor up to the new one (and the previous summary); its summary record is what that request answered, and the stored cursor names the last compaction's record and `through`.";
    C2 = "C2" ["C2"]: "Once compaction moved its cursor, a step's context begins with the summary and holds no context-visible message at or before the cursor.";
    P8 = "P8" ["P8", "P5"]: "Model-only overlays never outlive their episode (nor a step patch its step): each model call sends at most its episode's own overlay plus its step's appends.";
    P1P6 = "P1-P6" ["P1", "P2", "P3", "P4", "P5", "P6"]: "The route of every attempt equals an independent fold of the run, step and attempt patches.";
    X3 = "X3" ["X3"]: "Nothing committed is lost or reordered, whatever failed.";
    R1Kept = "R1-kept" ["R1", "H6"]: "A regeneration never removes a stored tool result whose call it keeps, and no step is sent the pairing's stand-in for a call whose result was committed before the step began.";
    RLost = "R-lost" ["R1"]: "Nothing committed is lost except what a later rewrite says it removed (or a deletion of its thread took).";
    Twin = "twin" ["K3", "K5", "K6", "H5"]: "A run with runtime faults (crashes, partitions, holds, pauses, lost requests) ends as the same scenario without them ends: its committed outcome (threads, runs, the messages each answered, metadata) equals its fault-free twin's but for what the rules allow (a cancel's or delete's lateness, fault-sensitive hook writes).";
    Request = "request" []: "Each request matches its scripted turn's `expect` table.";
    Check = "check" []: "Each timeline check holds: `expect_waiting` names what the thread waits on, `expect_error` the error an action gets.";
}

impl fmt::Display for OracleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who reported a violation: a built-in oracle, or one a harness
/// registered under a name ([`crate::Harness::oracle`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OracleName {
    /// A built-in oracle.
    Rule(OracleId),
    /// An oracle registered with a harness, by its name.
    User(std::sync::Arc<str>),
}

impl OracleName {
    /// The name reports and transcripts print.
    pub fn as_str(&self) -> &str {
        match self {
            OracleName::Rule(id) => id.as_str(),
            OracleName::User(name) => name,
        }
    }

    /// The built-in oracle, if it is one.
    pub fn rule(&self) -> Option<OracleId> {
        match self {
            OracleName::Rule(id) => Some(*id),
            OracleName::User(_) => None,
        }
    }
}

impl From<OracleId> for OracleName {
    fn from(id: OracleId) -> OracleName {
        OracleName::Rule(id)
    }
}

impl PartialEq<OracleId> for OracleName {
    fn eq(&self, other: &OracleId) -> bool {
        self.rule() == Some(*other)
    }
}

impl fmt::Display for OracleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `oracle = "..."` as a file writes it: a built-in oracle's name, or one
/// a harness registered ([`crate::Harness::oracle`]), told apart when the
/// scenario is checked against its registry. The published schema lists
/// the built-in names; a harness's schema adds its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OracleRef(pub String);

impl From<OracleId> for OracleRef {
    fn from(id: OracleId) -> OracleRef {
        OracleRef(id.as_str().to_string())
    }
}

impl OracleRef {
    /// The oracle named: a built-in one, or one of `registered`; else why
    /// not (with the closest name, when one is close).
    pub(crate) fn resolve<'a>(
        &self,
        registered: impl Iterator<Item = &'a str> + Clone,
    ) -> Result<OracleName, String> {
        let name = self.0.as_str();
        if let Some(id) = OracleId::ALL.iter().find(|o| o.as_str() == name) {
            return Ok(OracleName::Rule(*id));
        }
        if let Some(user) = registered.clone().find(|r| *r == name) {
            return Ok(OracleName::User(user.into()));
        }
        let known = OracleId::ALL
            .iter()
            .map(|o| o.as_str())
            .chain(registered.clone());
        let close = super::wording::closest(name, known)
            .map(|c| format!(": did you mean {c:?}?"))
            .unwrap_or_default();
        let mine: Vec<&str> = registered.collect();
        let theirs = match mine.is_empty() {
            true => " (a harness's own oracles are named by Harness::oracle)".to_string(),
            false => format!(", nor one this harness registered ({mine:?})"),
        };
        Err(format!(
            "no oracle is named {name:?}: not a built-in oracle{theirs}{close}"
        ))
    }
}

impl JsonSchema for OracleRef {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "OracleRef".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        generator.subschema_for::<OracleId>()
    }
}
