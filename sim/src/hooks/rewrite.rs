//! `rewrite_patch` and `rewrite_listener`: the history-rewrite phases
//! (SPEC L11, R2, R3). The first returns metadata patches committed with
//! every rewrite; the second hears rewrite facts after commit, possibly
//! slowly, possibly failing (best effort: the rewrite stays).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use pai_runtime::{
    HookCx, HookError, HookFuture, HookResult, Lifecycle,
    hook::{Phase, Phases, RewriteFact, RewriteInput, RewritePatch},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::shared::{SimContext, SimHook};

/// `prepare_history_rewrite`: sets these keys in the rewrite's own
/// transaction; `kind_key` (when given) records the rewrite's kind.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RewritePatchSpec {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// Client-readable metadata keys to set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, Value>,
    /// Private metadata keys to set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub private: BTreeMap<String, Value>,
    /// A metadata key set to the rewrite's kind (`regenerate`, `visibility`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind_key: Option<String>,
    /// Fail instead: the rewrite is refused and nothing commits (L11).
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    pub fail: bool,
}

/// `history_rewritten`: hears the facts after `delay_ms`, then succeeds or fails.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RewriteListener {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// Virtual milliseconds each delivery takes.
    #[serde(default, skip_serializing_if = "crate::defaults::is_zero")]
    pub delay_ms: u64,
    /// Fail every delivery (the rewrite stays: best effort, R3).
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    pub fail: bool,
}

struct Patcher {
    name: String,
    spec: RewritePatchSpec,
}

struct Listener {
    name: String,
    spec: RewriteListener,
}

impl fmt::Debug for Patcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl Lifecycle<SimContext> for Patcher {
    fn name(&self) -> &str {
        &self.name
    }

    fn phases(&self) -> Phases {
        Phases::only(Phase::PrepareHistoryRewrite)
    }

    fn prepare_history_rewrite<'a>(
        &'a self,
        _cx: &'a HookCx<'_, SimContext>,
        input: &'a RewriteInput<'_>,
    ) -> HookFuture<'a, HookResult<RewritePatch>> {
        if self.spec.fail {
            let e = format!("{} refuses every rewrite", self.name);
            return HookFuture::ready(Err(HookError::new(e)));
        }
        let mut p = RewritePatch::default();
        for (k, v) in &self.spec.set {
            p = p.set(k.clone(), v.clone());
        }
        for (k, v) in &self.spec.private {
            p = p.set_private(k.clone(), v.clone());
        }
        if let Some(k) = &self.spec.kind_key {
            p = p.set(k.clone(), Value::from(input.kind.name()));
        }
        HookFuture::ready(Ok(p))
    }
}

impl Lifecycle<SimContext> for Listener {
    fn name(&self) -> &str {
        &self.name
    }

    fn phases(&self) -> Phases {
        Phases::only(Phase::HistoryRewritten)
    }

    fn history_rewritten<'a>(
        &'a self,
        _cx: &'a HookCx<'_, SimContext>,
        facts: &'a [RewriteFact],
    ) -> HookFuture<'a, HookResult<()>> {
        HookFuture::new(async move {
            if self.spec.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(self.spec.delay_ms)).await;
            }
            match self.spec.fail {
                true => Err(HookError::new(format!(
                    "{} failed on {} facts",
                    self.name,
                    facts.len()
                ))),
                false => Ok(()),
            }
        })
    }
}

impl RewritePatchSpec {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        Box::new(Patcher {
            name: name.to_string(),
            spec: self.clone(),
        })
    }
}

impl RewriteListener {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        Box::new(Listener {
            name: name.to_string(),
            spec: self.clone(),
        })
    }
}
