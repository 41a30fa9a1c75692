//! What the suite reports when a store diverges from the model.

use std::fmt;

use crate::ops::Op;

/// A store that did not behave as the SPEC says: the (shrunk) sequence of
/// requests that shows it, the step that diverged, what the model expected
/// and what the store did.
#[derive(Debug, Clone, thiserror::Error)]
pub struct Failure {
    /// The SPEC rule the divergence breaks (`"K2"`, `"H3"`, ...).
    pub rule: &'static str,
    /// Where it showed: the reply to the step's request, or a field of a
    /// thread as `Inspect` returned it after the step.
    pub what: String,
    /// The index in `trace` of the step that diverged.
    pub step: usize,
    /// What the model expected there.
    pub expected: String,
    /// What the store answered or stored.
    pub got: String,
    /// Every step of the case up to the divergence, as sent, with the
    /// store's answer.
    pub trace: Vec<String>,
    /// The generated operations, for [`replay`](crate::replay).
    pub ops: Vec<Op>,
    /// Set when the case was shrunk and the shrunk case, run again, passed
    /// (a store that does not answer the same requests the same way).
    pub flaky: Option<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "store conformance failure: rule {} ({}), at step {} of {}",
            self.rule,
            self.what,
            self.step + 1,
            self.trace.len()
        )?;
        writeln!(f, "  expected: {}", self.expected)?;
        writeln!(f, "  got:      {}", self.got)?;
        if let Some(flaky) = &self.flaky {
            writeln!(f, "  note: {flaky}")?;
        }
        writeln!(f, "the requests, as sent, and the store's answers:")?;
        for (i, line) in self.trace.iter().enumerate() {
            let mark = if i == self.step { ">>" } else { "  " };
            writeln!(f, "{mark}{:>3}. {line}", i + 1)?;
        }
        let ops = serde_json::to_string(&self.ops).unwrap_or_else(|e| format!("({e})"));
        write!(
            f,
            "replay with pai_store_check::replay and these ops (JSON): {ops}"
        )
    }
}
