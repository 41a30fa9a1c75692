//! Which hooks the oracles can foresee: a registered hook (library mode)
//! in a context phase leaves the texts a request carries unforeseen.

use std::path::Path;

use pai_runtime::HookFuture;
use pai_runtime::hook::{Phase, StepDecision};
use pai_runtime::model::Patch;

use super::facts::{hook_written, registered_in, reshaped, reshapes_context};
use crate::hooks::{SimHook, UserHook};
use crate::registry::Registry;
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

/// A registered hook that declares the stream phase (its transform is the
/// default, unchanged stream: what matters is what it declares).
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Stream {}

struct StreamHook;

impl pai_runtime::Lifecycle<crate::hooks::SimContext> for StreamHook {
    fn phases(&self) -> pai_runtime::hook::Phases {
        pai_runtime::hook::Phases::only(Phase::TransformStepStream)
    }
}

impl UserHook for Stream {
    fn build(&self, _: &str) -> SimHook {
        Box::new(StreamHook)
    }
}

#[test]
fn a_registered_stream_hook_leaves_the_canonical_text_unforeseen() {
    let mut registry = Registry::default();
    registry.hook::<Stream>("stream");
    let load = |lifecycle: &str| {
        let text =
            format!("name = \"n\"\nrules = [\"L12\"]\n[[timeline]]\nsend = \"hi\"\n{lifecycle}");
        Scenario::parse_with(Path::new("x.toml"), &text, &registry).unwrap()
    };
    let upper = load("[[lifecycle]]\nhook = \"uppercase\"\n");
    assert_eq!(
        super::reference::canonical(&upper, "ab").as_deref(),
        Some("AB")
    );
    let mine = load("[[lifecycle]]\nhook = \"uppercase\"\n[[lifecycle]]\nuse = \"stream\"\n");
    assert_eq!(super::reference::canonical(&mine, "ab"), None);
    // A stream hook shapes no request: the texts stay foreseen.
    assert_eq!(hook_written(&mine), Some(vec![]));
}
