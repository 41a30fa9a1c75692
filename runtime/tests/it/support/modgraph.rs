//! The import graph of a crate's modules, read from its source files, and a
//! cycle finder. Shared by the runtime's and the simulator's module tests.
//!
//! Each `.rs` file is a node (`lib.rs` is the root and takes no part). An
//! edge `a -> b` means a file of module `a` names something of module `b`
//! through a `crate::` or `super::` path outside its test module. A name a
//! folder's `mod.rs` only re-exports (`pub use child::Name`) is resolved to
//! the child that defines it, so a folder's facade does not fake cycles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`step_loop::tools`) → its source, without comments and tests.
fn sources(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("source folder")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(root, &path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(root).expect("below root");
        let mut parts: Vec<String> = rel
            .iter()
            .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if parts
            .last()
            .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
        {
            parts.pop();
        }
        let text = std::fs::read_to_string(&path).expect("readable source");
        out.insert(parts.join("::"), strip(&text));
    }
}

/// The code of a file before its `#[cfg(test)]` module, without comments.
fn strip(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    code.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `::`-separated path starting with `crate` or `super`, including the
/// paths inside `use a::{b, c::{d}}` groups, as lists of segments.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let at_word = i == 0 || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_');
        let rest: String = bytes[i..bytes.len().min(i + 7)].iter().collect();
        if at_word && (rest.starts_with("crate::") || rest.starts_with("super::")) {
            let (list, end) = read_path(&bytes, i);
            out.extend(list);
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// Reads the path at `start` (with `{...}` groups expanded).
fn read_path(c: &[char], start: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix: Vec<String> = Vec::new();
    let mut i = start;
    loop {
        let s = i;
        while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
            i += 1;
        }
        prefix.push(c[s..i].iter().collect());
        if i + 1 < c.len() && c[i] == ':' && c[i + 1] == ':' {
            i += 2;
            if i < c.len() && c[i] == '{' {
                let (items, end) = read_group(c, i + 1);
                let all = items
                    .into_iter()
                    .map(|mut tail| {
                        let mut p = prefix.clone();
                        p.append(&mut tail);
                        p
                    })
                    .collect();
                return (all, end);
            }
            continue;
        }
        return (vec![prefix], i);
    }
}

/// Reads `a, b::c, d::{e}` up to the closing brace.
fn read_group(c: &[char], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut items = Vec::new();
    while i < c.len() {
        match c[i] {
            '}' => return (items, i + 1),
            ch if ch.is_alphanumeric() || ch == '_' => {
                let (mut more, end) = read_path(c, i);
                items.append(&mut more);
                i = end;
            }
            _ => i += 1,
        }
    }
    (items, i)
}

/// `pub use child::{A, B}` lines of a folder facade: name → child module.
fn reexports(module: &str, code: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stmt in code.split(';') {
        let stmt = stmt.trim();
        let Some(body) = stmt
            .strip_prefix("pub use ")
            .or_else(|| stmt.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let chars: Vec<char> = format!("self::{}", body.trim()).chars().collect();
        let (list, _) = read_path(&chars, 0);
        for p in list {
            if p.len() >= 3 {
                let child = format!("{module}::{}", p[1])
                    .trim_start_matches("::")
                    .to_string();
                out.insert(p[p.len() - 1].clone(), child);
            }
        }
    }
    out
}

/// The module a path names: the longest known module prefix, followed
/// through a facade's re-export when the next segment is one.
fn resolve(
    from: &str,
    path: &[String],
    modules: &BTreeSet<String>,
    facades: &BTreeMap<String, BTreeMap<String, String>>,
) -> Option<String> {
    let mut base: Vec<String> = if path[0] == "crate" {
        Vec::new()
    } else {
        let mut m: Vec<String> = from.split("::").map(str::to_string).collect();
        m.pop();
        m
    };
    let mut rest = &path[1..];
    while rest.first().is_some_and(|s| s == "super") {
        base.pop();
        rest = &rest[1..];
    }
    let mut best: Option<String> = None;
    let mut cur = base.clone();
    for (k, seg) in rest.iter().enumerate() {
        cur.push(seg.clone());
        let name = cur.join("::");
        if modules.contains(&name) {
            best = Some(name.clone());
            if let Some(next) = rest.get(k + 1)
                && let Some(child) = facades.get(&name).and_then(|f| f.get(next))
            {
                best = Some(child.clone());
            }
        }
    }
    best.or_else(|| (!base.is_empty()).then(|| base.join("::")))
}

/// The import graph: module → the modules it names.
pub fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = sources(src);
    let modules: BTreeSet<String> = files.keys().filter(|m| !m.is_empty()).cloned().collect();
    let facades: BTreeMap<String, BTreeMap<String, String>> = files
        .iter()
        .map(|(m, code)| (m.clone(), reexports(m, code)))
        .collect();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in &files {
        if module.is_empty() {
            continue;
        }
        let edges = out.entry(module.clone()).or_default();
        for p in paths(code) {
            if let Some(to) = resolve(module, &p, &modules, &facades)
                && to != *module
            {
                edges.insert(to);
            }
        }
        // A folder's own file naming its children by relative paths.
        for child in modules.iter().filter(|c| is_child(module, c)) {
            let name = child.rsplit("::").next().unwrap_or(child);
            if names_relative(code, name) {
                edges.insert(child.clone());
            }
        }
    }
    out
}

fn is_child(parent: &str, module: &str) -> bool {
    module
        .strip_prefix(parent)
        .and_then(|r| r.strip_prefix("::"))
        .is_some_and(|r| !r.contains("::"))
}

/// Whether `code` uses `name::...` as a relative path (not `x::name::`).
fn names_relative(code: &str, name: &str) -> bool {
    let needle = format!("{name}::");
    code.match_indices(&needle).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        !before.is_some_and(|b| b.is_alphanumeric() || b == '_' || b == ':')
    })
}

/// The same graph with every module folded into its top-level module.
pub fn top_level(g: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let top = |m: &str| m.split("::").next().unwrap_or(m).to_string();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in g {
        let edges = out.entry(top(from)).or_default();
        for to in tos {
            if top(to) != top(from) {
                edges.insert(top(to));
            }
        }
    }
    out
}

/// One cycle of the graph, if it has any (depth-first search).
pub fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        node: &str,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(k) = stack.iter().position(|s| s == node) {
            let mut c = stack[k..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in g.get(node).into_iter().flatten() {
            if let Some(c) = visit(g, next, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in g.keys() {
        if let Some(c) = visit(g, node, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}
