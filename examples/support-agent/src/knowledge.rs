//! Help-centre articles before the model's context.

use std::collections::BTreeMap;
use std::sync::Arc;

use pai_runtime::message::ModelMessage;
use pai_runtime::{HookFuture, Lifecycle, Role, hook};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Puts the articles whose keyword the customer's latest message names
/// (case-insensitive) before the context, as one system message. The
/// articles reach the model only; nothing is stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeBase {
    /// Keyword → article.
    pub articles: BTreeMap<String, String>,
}

impl KnowledgeBase {
    /// The hook, named `name` in the event log.
    pub fn hook<C: Send + Sync + 'static>(&self, name: &str) -> impl Lifecycle<C> + use<C> {
        let articles = Arc::new(self.articles.clone());
        hook::resolve_model_context(name, move |_, _, next| {
            let articles = Arc::clone(&articles);
            HookFuture::new(async move {
                let mut context = next.run().await?;
                let latest = context.iter().rev().find(|m| m.role == Role::User);
                let asked = latest.map(|m| m.text().to_lowercase()).unwrap_or_default();
                let found: Vec<&str> = articles
                    .iter()
                    .filter(|(k, _)| asked.contains(&k.to_lowercase()))
                    .map(|(_, a)| a.as_str())
                    .collect();
                if !found.is_empty() {
                    let text = format!("Help-centre articles:\n{}", found.join("\n\n"));
                    context.insert(0, ModelMessage::system(text));
                }
                Ok(context)
            })
        })
    }
}
