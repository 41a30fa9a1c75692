//! The simulator's flow is one way: scenario → world → run → oracles →
//! transcript → suite, with no import cycle between its modules.

use std::path::Path;

#[path = "../../../runtime/tests/it/support/modgraph.rs"]
mod modgraph;

#[test]
fn simulator_modules_import_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = modgraph::graph(&src);
    assert!(files.len() > 30, "read {} modules", files.len());
    if let Some(c) = modgraph::cycle(&files) {
        panic!("import cycle between files: {}", c.join(" -> "));
    }
    let top = modgraph::top_level(&files);
    if let Some(c) = modgraph::cycle(&top) {
        panic!("import cycle between top-level modules: {}", c.join(" -> "));
    }
    // The world records and the oracles judge: never the other way round.
    for leaf in ["world", "scenario", "hooks", "format"] {
        let reaches: Vec<&String> = top[leaf].iter().filter(|m| *m == "oracle").collect();
        assert!(reaches.is_empty(), "{leaf} must not reach the oracles");
    }
}
