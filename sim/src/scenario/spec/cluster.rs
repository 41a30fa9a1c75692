//! Several workers on one store, as written (SPEC K2, K3, K5): the
//! workers, the lease and network settings, and the faults the simulator
//! injects at virtual times.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One worker: a runtime instance on its own turmoil host, sharing the
/// store with the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerSpec {
    /// The worker's host name; unique, and not `store` or `client`.
    #[schemars(pattern(r"^[a-z][a-z0-9_-]*$"))]
    pub name: String,
    /// When the worker starts looking for work (virtual ms): a later start
    /// lets a scenario say which worker claims a run first.
    #[serde(default, skip_serializing_if = "crate::defaults::is_zero")]
    #[schemars(extend("default" = 0))]
    pub start_ms: u64,
}

/// Lease and network settings of a scenario with workers. Every field has
/// a default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// How long a lease lasts unless renewed (virtual ms).
    #[serde(default = "default_lease_ms")]
    #[schemars(range(min = 3), extend("default" = default_lease_ms()))]
    pub lease_ms: u64,
    /// How often a holder renews; a third of `lease_ms` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub renew_ms: Option<u64>,
    /// How long a worker waits for the store's answer before it gives the
    /// request up and reconnects.
    #[serde(default = "default_request_timeout_ms")]
    #[schemars(range(min = 1), extend("default" = default_request_timeout_ms()))]
    pub request_timeout_ms: u64,
    /// How long an idle worker waits before it looks for work again.
    #[serde(default = "default_poll_ms")]
    #[schemars(range(min = 1), extend("default" = default_poll_ms()))]
    pub poll_ms: u64,
    /// The most a message takes between two hosts (turmoil draws each
    /// message's latency from the seed, up to this).
    #[serde(default = "default_latency_ms")]
    #[schemars(extend("default" = default_latency_ms()))]
    pub max_latency_ms: u64,
    /// Liveness bound: after the last fault heals (and the last timeline
    /// entry), every run must be over or waiting within this many ms.
    #[serde(default = "default_liveness_ms")]
    #[schemars(range(min = 1), extend("default" = default_liveness_ms()))]
    pub liveness_ms: u64,
    /// In what order the hosts run within one tick, which decides ties
    /// (two claims in one tick): drawn from the seed at every tick
    /// (`seeded`, the default), or the order the workers are declared in
    /// (`declared`, which keeps a regression scenario's interleaving).
    #[serde(default, skip_serializing_if = "HostOrder::is_seeded")]
    pub host_order: HostOrder,
}

/// In what order the hosts run within one simulated tick.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostOrder {
    /// A new order drawn from the seed at every tick: who wins a tie is
    /// the seed's choice.
    #[default]
    Seeded,
    /// The store first, then the workers in file order, then the client.
    Declared,
}

impl HostOrder {
    fn is_seeded(&self) -> bool {
        *self == HostOrder::Seeded
    }
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec {
            lease_ms: default_lease_ms(),
            renew_ms: None,
            request_timeout_ms: default_request_timeout_ms(),
            poll_ms: default_poll_ms(),
            max_latency_ms: default_latency_ms(),
            liveness_ms: default_liveness_ms(),
            host_order: HostOrder::Seeded,
        }
    }
}

fn default_lease_ms() -> u64 {
    300
}
fn default_request_timeout_ms() -> u64 {
    100
}
fn default_poll_ms() -> u64 {
    20
}
fn default_latency_ms() -> u64 {
    2
}
fn default_liveness_ms() -> u64 {
    5_000
}
