//! `uppercase`: a canonical stage that upper-cases text, to show that the
//! order of stages matters (SPEC L7).

use pai_runtime::{hook, stream::StreamTransform};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::SimHook;
use super::stages::UppercaseStage;

/// A canonical stage that upper-cases text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Uppercase {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
}

impl Uppercase {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        Box::new(hook::transform_step_stream(name, |_, _| {
            Some(Box::new(UppercaseStage) as Box<dyn StreamTransform>)
        }))
    }
}
