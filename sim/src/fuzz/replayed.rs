//! Replayed provider streams in generated cases (issue 29's crossings):
//! about one case in eight has its default model replay one to three of
//! the recordings compiled into `pai-providers` (`pai-providers:<path>`),
//! all in one format, cut into chunks of a few bytes now and then, so a
//! real provider's byte stream (text cut inside characters, tool-call
//! arguments in fragments, usage and finish events, errors mid-stream and
//! error bodies) meets the case's hooks, waiting, steering, queueing,
//! cancels, rewrites, compaction, workers and faults. The tools the
//! recordings call are given to the agent, sometimes needing approval.
//! From a stream of its own, so the other draws of a case stay as they
//! were.

use pai_providers::SAMPLES;

use crate::scenario::{BUILT_IN, ModelSpec, ReplayFormat, ScenarioSpec, ToolSpec};
use crate::world::Rng;

/// The tools the built-in recordings call.
const RECORDED_TOOLS: &[&str] = &["get_weather", "get_time"];

const FORMATS: [ReplayFormat; 3] = [
    ReplayFormat::OpenAiChat,
    ReplayFormat::OpenAiResponses,
    ReplayFormat::Anthropic,
];

/// Makes the case of `seed` replay recordings, one case in eight.
pub(super) fn replayed(seed: u64, spec: &mut ScenarioSpec) {
    let mut rng = Rng::new(seed ^ 0x0005_EED5_7EA3_0F11);
    if rng.below(8) != 0 {
        return;
    }
    let format = FORMATS[rng.below(3) as usize];
    let samples: Vec<&str> = SAMPLES
        .iter()
        .filter(|s| s.format == format.decoder())
        .map(|s| s.path)
        .collect();
    let replay = (0..1 + rng.below(3))
        .map(|_| {
            format!(
                "{BUILT_IN}{}",
                samples[rng.below(samples.len() as u64) as usize]
            )
        })
        .collect();
    spec.model = ModelSpec {
        replay,
        format: Some(format),
        latency_ms: (rng.below(2) == 0).then(|| rng.below(40)),
        delta_ms: (rng.below(3) == 0).then(|| 1 + rng.below(4)),
        chunk: (rng.below(2) == 0).then(|| 1 + rng.below(7)),
        ..ModelSpec::default()
    };
    for name in RECORDED_TOOLS {
        if spec.agent.tools.iter().any(|t| t.name() == *name) {
            continue;
        }
        let tool = ToolSpec {
            name: name.to_string(),
            echo: true,
            approval: (rng.below(3) == 0).into(),
            latency_ms: rng.below(20),
            ..ToolSpec::default()
        };
        spec.agent.tools.push(tool.into());
    }
}
