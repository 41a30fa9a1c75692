//! SPEC T6: an `on_output` handler typed for the `search` tool cannot be
//! registered beside the `weather` tool: the compiler refuses it.

use pai_runtime::{Agent, ToolError, typed_tool};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct WeatherIn {
    city: String,
}

#[derive(Serialize, Deserialize)]
struct WeatherOut {
    celsius: i32,
}

#[derive(Deserialize)]
struct SearchIn {
    query: String,
}

#[derive(Serialize, Deserialize)]
struct SearchOut {
    hits: Vec<String>,
}

#[derive(Default, Serialize, Deserialize)]
struct Seen {
    hits: usize,
}

fn main() {
    let weather = typed_tool("weather", "today's weather", false, |_cx, i: WeatherIn| async move {
        Ok::<_, ToolError>(WeatherOut { celsius: i.city.len() as i32 })
    });
    let _agent = Agent::<()>::new("a", "m")
        .run_metadata::<Seen>()
        .typed_tool(&weather)
        .on_output(&weather, |seen: &mut Seen, input: &SearchIn, output: &SearchOut| {
            seen.hits += output.hits.len() + input.query.len();
            Ok(())
        });
}
