//! `history_probe`: a resolver that reports what the history view reads
//! (SPEC M3) as one more system message: `collect`, `model_messages` and
//! `before` pages, all bounded by the step's anchor.

use pai_runtime::{ContextInput, HookFuture, HookResult, ModelMessage, hook};
use serde::{Deserialize, Serialize};

use super::shared::SimHook;

fn default_page() -> usize {
    2
}

/// Resolver: report what the history view reads, as a system message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryProbe {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "default_page")]
    pub page: usize,
}

/// Every read of the history view, as one line.
fn probe(input: &ContextInput<'_>, page: usize) -> HookResult<ModelMessage> {
    let h = input.history;
    let anchor = h.anchor();
    let all = h.collect(1, u64::MAX)?;
    let seqs: Vec<String> = all.iter().map(|m| format!("#{}", m.seq)).collect();
    let tail = h.model_messages(anchor.saturating_sub(1).max(1), anchor)?;
    let mut pages = Vec::new();
    let mut cursor = None;
    for _ in 0..8 {
        let p = h.before(cursor, page)?;
        let seqs: Vec<String> = p.messages.iter().map(|m| format!("#{}", m.seq)).collect();
        pages.push(format!("[{}]", seqs.join(" ")));
        match p.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    Ok(ModelMessage::system(format!(
        "history anchor=#{anchor} collect(1..)={} model_messages(last two)={} before(pages of {page})={}",
        seqs.join(" "),
        tail.len(),
        pages.join(" ")
    )))
}

impl HistoryProbe {
    pub(super) fn build(&self, name: &str) -> SimHook {
        let page = self.page;
        Box::new(hook::resolve_model_context(name, move |_, input, next| {
            HookFuture::new(async move {
                let mut out = next.run().await?;
                out.push(probe(input, page)?);
                Ok(out)
            })
        }))
    }
}
