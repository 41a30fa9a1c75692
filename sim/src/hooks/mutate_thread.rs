//! `mutate_thread`: after a step, the run reads its thread, waits, then
//! writes thread metadata through its own mutation (SPEC H2, H7) with an
//! expectation taken from that read (H3). A trusted writer that commits in
//! between makes a `version` expectation conflict, and a `private` one
//! only when it changed the private metadata: the refusal is logged
//! (`mutation_refused ... conflict=true` under the run) and the run goes
//! on, as a best-effort writer that lost the race would.

use std::collections::BTreeMap;
use std::time::Duration;

use pai_runtime::{HookError, HookFuture, hook, hook::AfterStepDecision, store::Expect};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::shared::{SimHook, applies_at};

/// Set thread metadata (client-readable) and private metadata keys after
/// every step, or after `step` only, expecting what the hook read `wait_ms`
/// before. At least one key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::schema::checks::mutate_thread)]
pub struct MutateThread {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// Only after this step (from 0, as the event log numbers steps); after
    /// every step when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// Client-readable thread metadata keys to set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Value>,
    /// Private metadata keys to set (server side only, H4).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub private: BTreeMap<String, Value>,
    /// What the mutation expects of the thread the hook read: `"nothing"`,
    /// `"version"` (any change since conflicts) or `"private"` (only a
    /// private metadata change since conflicts), as a timeline `mutate`.
    #[serde(default, skip_serializing_if = "crate::defaults::is_default")]
    pub expect: ExpectSpec,
    /// Virtual milliseconds between the hook's read and its mutation: the
    /// window in which another writer may commit.
    #[serde(default, skip_serializing_if = "crate::defaults::is_zero")]
    #[schemars(extend("default" = 0))]
    pub wait_ms: u64,
}

impl MutateThread {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let spec = self.clone();
        Box::new(hook::after_step(name, move |cx, input| {
            let step = input.step;
            let spec = spec.clone();
            HookFuture::new(async move {
                if !applies_at(spec.step, step) {
                    return Ok(AfterStepDecision::Natural);
                }
                let fail = |e: pai_runtime::facade::MutateError| HookError::new(e.to_string());
                let seen = cx.read_thread().await.map_err(fail)?;
                if spec.wait_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(spec.wait_ms)).await;
                }
                let expect = match spec.expect {
                    ExpectSpec::Nothing => Expect::Nothing,
                    ExpectSpec::Version => Expect::version_of(&seen),
                    ExpectSpec::Private => Expect::private_metadata_of(&seen),
                };
                let done = cx
                    .mutate(expect, move |s| {
                        for (k, v) in spec.metadata {
                            s.set_metadata(k, v);
                        }
                        for (k, v) in spec.private {
                            s.set_private(k, v);
                        }
                        Ok(())
                    })
                    .await;
                match done {
                    Ok(_) => Ok(AfterStepDecision::Natural),
                    // Lost the race to another writer: logged, and the run goes on.
                    Err(e) if e.is_conflict() => Ok(AfterStepDecision::Natural),
                    Err(e) => Err(fail(e)),
                }
            })
        }))
    }
}

/// What a `mutate` expects of the stored thread (SPEC H3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExpectSpec {
    /// Commit whatever changed.
    #[default]
    Nothing,
    /// The version of the thread's last `read_thread` (now, if none): any
    /// change since conflicts.
    Version,
    /// The private metadata of the thread's last `read_thread` (now, if
    /// none): only a private metadata change since conflicts.
    Private,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::scenario::Scenario;

    fn parse(hook: &str) -> Result<Scenario, crate::scenario::ScenarioError> {
        let text = format!(
            "name = \"x\"\nrules = [\"H3\"]\n[[timeline]]\nsend = \"hi\"\n[[lifecycle]]\nhook = \"mutate_thread\"\n{hook}\n"
        );
        Scenario::parse(Path::new("a.toml"), &text)
    }

    #[test]
    fn h3_mutate_thread_takes_an_expectation_and_a_window() {
        let s = parse("private = { cursor = 1 }\nexpect = \"private\"\nwait_ms = 20").unwrap();
        assert_eq!(
            s.hooks[0].library().map(|h| h.kind()),
            Some("mutate_thread")
        );
    }

    #[test]
    fn h3_a_mutate_thread_that_changes_nothing_is_refused_where_it_stands() {
        let e = parse("expect = \"version\"").unwrap_err();
        assert_eq!(
            e.message,
            "lifecycle[0].metadata: mutate_thread: needs metadata or private keys: it would change nothing"
        );
        assert!(e.location.is_some(), "{e}");
        let e = parse("private = { cursor = 1 }\nexpect = \"sometimes\"").unwrap_err();
        assert!(e.message.contains("unknown variant `sometimes`"), "{e}");
    }
}
