//! The agent's own context and typed run metadata: the support desk a
//! deployment runs the agent for, and a ledger of the refunds each run
//! made, kept by a hook (and surviving waits for approval and takeovers
//! among workers, as all run metadata does).

use pai_runtime::hook::{
    Phase, Phases, ToolCallDecision, ToolCallInput, ToolResultDecision, ToolResultInput,
};
use pai_runtime::message::ToolStatus;
use pai_runtime::{HookCx, HookFuture, HookResult, Lifecycle};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the agent's deployment hands every hook: the desk it answers for.
#[derive(Debug, Clone, PartialEq)]
pub struct SupportContext {
    /// The desk's name, as a rejection tells the model.
    pub desk: String,
    /// The most a run may refund in all, in whole dollars.
    pub refund_cap: u64,
}

/// The run metadata of the agent: the refunds the run made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RefundLedger {
    /// Dollars refunded by the run, in all.
    pub refunded: u64,
    /// The orders refunded, in the order their results came.
    pub orders: Vec<u64>,
}

/// Keeps the run's [`RefundLedger`]: each successful result of `tool`
/// (`{"order": N, "refunded": amount}`) adds its refund, and a call of
/// `tool` that would take the run's refunds past the desk's
/// `refund_cap` is rejected before it runs. What it writes about a
/// result commits with that result (SPEC K5), so a refund run again after
/// a crash is counted once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LedgerKeeper {
    /// The refund tool's name.
    pub tool: String,
}

impl LedgerKeeper {
    /// The hook, named `name` in the event log.
    pub fn hook(&self, name: &str) -> Keeper {
        Keeper {
            name: name.to_string(),
            tool: self.tool.clone(),
        }
    }
}

/// The built [`LedgerKeeper`] hook.
#[derive(Debug)]
pub struct Keeper {
    name: String,
    tool: String,
}

impl Lifecycle<SupportContext> for Keeper {
    fn name(&self) -> &str {
        &self.name
    }

    fn phases(&self) -> Phases {
        Phases::only(Phase::BeforeToolCall).with(Phase::AfterToolResult)
    }

    fn before_tool_call<'a>(
        &'a self,
        cx: &'a HookCx<'_, SupportContext>,
        input: &'a ToolCallInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolCallDecision>> {
        HookFuture::new(async move {
            if input.tool != self.tool {
                return Ok(ToolCallDecision::Continue);
            }
            let ledger: RefundLedger = cx.run_metadata().await?;
            let amount = input.input.get("amount").and_then(|a| a.as_u64());
            let desk = cx.context;
            match amount {
                Some(a) if ledger.refunded.saturating_add(a) > desk.refund_cap => {
                    let message = format!(
                        "the {} desk refunds at most ${} a conversation; ${} refunded already",
                        desk.desk, desk.refund_cap, ledger.refunded
                    );
                    Ok(ToolCallDecision::Reject { message })
                }
                _ => Ok(ToolCallDecision::Continue),
            }
        })
    }

    fn after_tool_result<'a>(
        &'a self,
        cx: &'a HookCx<'_, SupportContext>,
        input: &'a ToolResultInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolResultDecision>> {
        HookFuture::new(async move {
            let r = input.result;
            if r.tool != self.tool || r.status != ToolStatus::Output {
                return Ok(ToolResultDecision::Continue);
            }
            let field = |k: &str| r.output.get(k).and_then(|v| v.as_u64());
            if let (Some(order), Some(amount)) = (field("order"), field("refunded")) {
                cx.update_run_metadata(|l: &mut RefundLedger| {
                    l.refunded += amount;
                    l.orders.push(order);
                })
                .await?;
            }
            Ok(ToolResultDecision::Continue)
        })
    }
}
