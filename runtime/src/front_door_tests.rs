//! The crate root stays a narrow front door (issue 26): every name a root
//! `pub use` exports is counted, cfg-gated ones included, and the count may
//! not grow past 40; no root name is exported again by a public module.

use std::collections::BTreeSet;

const LIMIT: usize = 40;

/// The names of the `pub use` statements at the top level of `code` (not
/// inside an inline module).
fn root_exports(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut stmt: Option<String> = None;
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("");
        if let Some(s) = stmt.as_mut() {
            s.push_str(line);
        } else if depth == 0 && line.trim_start().starts_with("pub use ") {
            stmt = Some(line.trim_start()["pub use ".len()..].to_string());
        }
        if stmt.is_none() {
            depth += line.matches('{').count();
            depth = depth.saturating_sub(line.matches('}').count());
        }
        if let Some(s) = stmt.take_if(|s| s.contains(';')) {
            names.extend(leaves(s.trim_end_matches(';')));
        }
    }
    names
}

/// The leaf names of one use tree: `a::{b, c::{d as e}}` gives `b`, `e`.
fn leaves(tree: &str) -> Vec<String> {
    tree.split([',', '{', '}'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .filter_map(|path| {
            let last = path.rsplit("::").next()?.trim();
            let name = last.rsplit(" as ").next()?.trim();
            (!name.is_empty() && !path.ends_with("::")).then(|| name.to_string())
        })
        .collect()
}

/// The names of the public items a module's own file defines.
fn defined(code: &str) -> Vec<String> {
    let kinds = ["struct", "enum", "trait", "fn", "type", "const"];
    code.lines()
        .filter_map(|l| l.strip_prefix("pub "))
        .filter_map(|l| {
            let (kind, rest) = l.split_once(' ')?;
            kinds.contains(&kind).then_some(rest)
        })
        .filter_map(|rest| {
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
            Some(rest[..end].to_string())
        })
        .collect()
}

#[test]
fn the_root_exports_at_most_40_names() {
    let names = root_exports(include_str!("lib.rs"));
    assert!(names.len() > 20, "the reader found only {names:?}");
    let unique: BTreeSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "a name twice: {names:?}");
    assert!(
        names.len() <= LIMIT,
        "the crate root exports {} names (at most {LIMIT}); move some into a \
         public module: {names:?}",
        names.len()
    );
}

#[test]
fn no_public_module_exports_a_root_name_again() {
    let root: BTreeSet<String> = root_exports(include_str!("lib.rs")).into_iter().collect();
    let lib = include_str!("lib.rs");
    let start = lib.find("pub mod hook {").expect("the hook module") + "pub mod hook {".len();
    let hook = &lib[start..start + lib[start..].find("\n}\n").expect("its end")];
    let modules = [
        ("hook", hook.to_string()),
        ("context", include_str!("context/mod.rs").to_string()),
        ("event", include_str!("event/mod.rs").to_string()),
        ("facade", include_str!("facade/mod.rs").to_string()),
        ("message", include_str!("message/mod.rs").to_string()),
        ("model", include_str!("model/mod.rs").to_string()),
        ("store", include_str!("store/mod.rs").to_string()),
        ("stream", include_str!("stream/mod.rs").to_string()),
        ("text", include_str!("text/mod.rs").to_string()),
        ("tool", include_str!("tool/mod.rs").to_string()),
    ];
    for (module, code) in modules {
        let mut names = root_exports(&code);
        names.extend(defined(&code));
        assert!(!names.is_empty(), "nothing read from {module}");
        for name in names {
            assert!(
                !root.contains(&name),
                "{name} is at the root and in {module}"
            );
        }
    }
}

#[test]
fn the_reader_reads_groups_aliases_and_gated_lines() {
    let code =
        "pub use a::B;\n#[cfg(x)]\npub use c::{D, e::{F as G}};\nmod m {\n    pub use h::I;\n}\n";
    assert_eq!(root_exports(code), ["B", "D", "G"]);
}
