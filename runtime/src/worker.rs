//! How a runtime takes part among several workers sharing one store (SPEC
//! K2, K3): its name as a lease holder, how long its leases last and how
//! often it renews them, and whether its clients' sends are driven here.

use crate::clock::Millis;

/// How a runtime takes part among workers sharing a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerConfig {
    /// The name this runtime holds leases under and tags its events with;
    /// `None` for a runtime that is the only process on its store.
    pub name: Option<String>,
    /// How long a lease lasts unless renewed; `None`: leases never expire
    /// (one process owns the store).
    pub lease_ttl: Option<Millis>,
    /// How often a holder renews; default a third of `lease_ttl`.
    pub renew_every: Option<Millis>,
    /// Whether this runtime drives the runs its own clients send (one
    /// process), or leaves every run to workers calling [`crate::Runtime::work`].
    pub drive_sends: bool,
    /// How long [`crate::Runtime::work`] waits when there is nothing to claim.
    pub poll_every: Millis,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            name: None,
            lease_ttl: None,
            renew_every: None,
            drive_sends: true,
            poll_every: 50,
        }
    }
}

impl WorkerConfig {
    /// A worker named `name` whose leases last `lease_ttl` ms; sends are left
    /// to the workers.
    pub fn shared(name: impl Into<String>, lease_ttl: Millis) -> WorkerConfig {
        WorkerConfig {
            name: Some(name.into()),
            lease_ttl: Some(lease_ttl),
            drive_sends: false,
            ..WorkerConfig::default()
        }
    }

    /// The name leases are held under.
    pub(crate) fn holder(&self) -> &str {
        self.name.as_deref().unwrap_or("local")
    }

    pub(crate) fn drives_sends(&self) -> bool {
        self.drive_sends
    }
}
