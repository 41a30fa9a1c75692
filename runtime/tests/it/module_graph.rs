//! No import cycle among the runtime's modules: the step loop depends on the
//! leaves, never the other way round (ARCHITECTURE.md).

use std::path::Path;

#[path = "support/modgraph.rs"]
mod modgraph;

#[test]
fn runtime_modules_import_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = modgraph::graph(&src);
    assert!(files.len() > 20, "read {} modules", files.len());
    assert!(
        files["step_loop::step"].contains("step_loop::exec"),
        "the reader sees sibling imports: {:?}",
        files["step_loop::step"]
    );
    if let Some(c) = modgraph::cycle(&files) {
        panic!("import cycle between files: {}", c.join(" -> "));
    }
    let top = modgraph::top_level(&files);
    if let Some(c) = modgraph::cycle(&top) {
        panic!("import cycle between top-level modules: {}", c.join(" -> "));
    }
}

/// The reader finds a cycle when there is one.
#[test]
fn the_cycle_finder_finds_a_planted_cycle() {
    let dir = std::env::temp_dir().join(format!("pai-modgraph-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("b")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a; mod b;").unwrap();
    std::fs::write(dir.join("a.rs"), "use crate::b::Thing;").unwrap();
    std::fs::write(dir.join("b/mod.rs"), "mod c;\npub use c::Thing;").unwrap();
    std::fs::write(dir.join("b/c.rs"), "pub struct Thing(crate::a::Other);").unwrap();
    let files = modgraph::graph(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let found = modgraph::cycle(&files).expect("a -> b::c -> a");
    assert!(
        found.contains(&"a".to_string()) && found.contains(&"b::c".to_string()),
        "{found:?}"
    );
}
