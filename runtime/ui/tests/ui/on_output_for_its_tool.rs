//! An `on_output` handler typed with its own tool's input and output compiles.

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

#[derive(Default, Serialize, Deserialize)]
struct Seen {
    readings: Vec<i32>,
}

fn main() {
    let weather = typed_tool("weather", "today's weather", false, |_cx, i: WeatherIn| async move {
        Ok::<_, ToolError>(WeatherOut { celsius: i.city.len() as i32 })
    });
    let _agent = Agent::<()>::new("a", "m")
        .run_metadata::<Seen>()
        .typed_tool(&weather)
        .on_output(&weather, |seen: &mut Seen, _input: &WeatherIn, output: &WeatherOut| {
            seen.readings.push(output.celsius);
            Ok(())
        });
}
