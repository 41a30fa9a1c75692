//! Which hooks the oracles can foresee: a registered hook (library mode)
//! in a context phase leaves the texts a request carries unforeseen.

use std::path::Path;

use pai_runtime::HookFuture;
use pai_runtime::hook::{Phase, StepDecision};
use pai_runtime::model::Patch;

use super::facts::{hook_written, registered_in, reshaped, reshapes_context};
use crate::hooks::{Registry, SimHook, UserHook};
use crate::scenario::Scenario;

/// A registered prepare_model_step hook: a system note.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

impl UserHook for Note {
    fn build(&self, name: &str) -> SimHook {
        let text = self.text.clone();
        Box::new(pai_runtime::hook::prepare_model_step(name, move |_, _| {
            let patch = Patch::append_system(text.clone());
            HookFuture::ready(Ok(StepDecision::Continue(patch)))
        }))
    }
}

fn scenario(lifecycle: &str) -> Scenario {
    let mut registry = Registry::default();
    registry.hook::<Note>("note");
    let text = format!("name = \"n\"\nrules = [\"M1\"]\n[[timeline]]\nsend = \"hi\"\n{lifecycle}");
    Scenario::parse_with(Path::new("x.toml"), &text, &registry).unwrap()
}

const CONTEXT: [Phase; 4] = [
    Phase::PrepareRun,
    Phase::PrepareModelStep,
    Phase::ResolveModelContext,
    Phase::AroundModelCall,
];

#[test]
fn library_hooks_are_foreseen_and_a_registered_context_hook_is_not() {
    let plain = scenario("");
    assert_eq!(hook_written(&plain), Some(vec![]));
    assert!(!reshapes_context(&plain) && !reshaped(&plain));
    let library = scenario(
        "[[lifecycle]]\nhook = \"base_context\"\nmessages = [{ role = \"user\", text = \"b\" }]\n",
    );
    assert!(!registered_in(&library, &CONTEXT));
    assert_eq!(hook_written(&library), Some(vec!["b"]));
    assert!(reshapes_context(&library) && reshaped(&library));
    let replaced = scenario(
        "[[lifecycle]]\nhook = \"replace_messages\"\nat = \"step\"\nmessages = [{ role = \"user\", text = \"r\" }]\n",
    );
    assert_eq!(hook_written(&replaced), Some(vec!["r"]));
    let mine = scenario("[[lifecycle]]\nuse = \"note\"\ntext = \"t\"\n");
    assert!(registered_in(&mine, &CONTEXT));
    assert!(!registered_in(&mine, &[Phase::TransformStepStream]));
    assert_eq!(hook_written(&mine), None);
    assert!(reshapes_context(&mine) && reshaped(&mine));
}
