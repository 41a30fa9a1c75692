//! The thread facade's timeline actions as written (SPEC H2, H3, H5, R1,
//! K4): a trusted writer's mutation with its expectation, a snapshot read
//! the expectation is taken from, deletion and creation, regeneration and
//! visibility rewrites.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::hooks::ExpectSpec;

/// `mutate = { ... }`: a second trusted writer's staged writes, committed
/// as one change (SPEC H2) if the expectation holds (H3).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MutateSpec {
    /// Messages to append (system role, transcript and context visible).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub append: Vec<String>,
    /// Client-readable metadata keys to set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Value>,
    /// Private metadata keys to set (never sent to clients, H4).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub private: BTreeMap<String, Value>,
    /// The expectation.
    #[serde(default, skip_serializing_if = "crate::defaults::is_default")]
    pub expect: ExpectSpec,
    /// The staging closure fails after staging: nothing may commit (H2).
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    pub fail: bool,
    /// The staging closure panics after staging: nothing may commit (H2, X2).
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    pub panic: bool,
}

/// `set_visibility = { message = N, transcript = .., context = .. }`: a
/// visibility rewrite of the thread's N-th stored message (SPEC R1, K4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VisibilitySpec {
    /// The thread's N-th stored message, from 1.
    #[schemars(range(min = 1))]
    pub message: usize,
    /// Shown in the transcript.
    pub transcript: bool,
    /// Sent to the model.
    pub context: bool,
}
