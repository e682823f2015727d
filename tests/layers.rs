//! The house rule that modules are layers: a module imports only from the
//! layers below it (or its own). Read from the source text, every
//! `crate::<module>` path of every file under src/ (imports and inline
//! paths alike, test modules left out), so an upward import fails here
//! before a reviewer has to find it. The map is ARCHITECTURE.md.
//!
//! `KNOWN_UPWARD` lists the upward edges the code still has, each with what
//! it uses; the list may only shrink: an edge that disappears from the code
//! must leave the list too, so it cannot come back unnoticed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top to bottom; modules on one line are one layer.
const LAYERS: &[&[&str]] = &[
    &["control"],
    &["peers"],
    &["frontend"],
    &["http", "tcp"],
    &["lua"],
    &["upstream"],
    &["observe"],
    &["snapshot"],
    &["state"],
    &["config"],
    &["acl"],
    &["sample"],
    &["wire", "tls", "loc", "haproxy26"],
    &["sys"],
];

/// (from, to): upward edges still in the code, to be removed. None is
/// left; an edge added must be removed, not listed here.
const KNOWN_UPWARD: &[(&str, &str)] = &[];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without its `#[cfg(test)]` tail (test modules sit at
/// the end of a file here) and without comments.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Top-level modules a piece of code names: `crate::x` and `use crate::{x, y::z}`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            // One level of braces is enough for the first segment names.
            let end = group.find('}').unwrap_or(group.len());
            let mut depth = 0;
            let mut start = 0;
            for (j, c) in group[..end].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(group[start..j].trim()));
                        start = j + 1;
                    }
                    _ => {}
                }
            }
            out.insert(ident(group[start..end].trim()));
        } else {
            out.insert(ident(after));
        }
        rest = after;
    }
    out.remove("");
    out
}

/// Every (from, to) pair of top-level modules, with the files that make it.
fn edges() -> BTreeMap<(String, String), BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().to_string();
        let top = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for m in named_modules(&code_of(&text)) {
            if m != top {
                edges
                    .entry((top.clone(), m))
                    .or_default()
                    .insert(rel.clone());
            }
        }
    }
    edges
}

#[test]
fn every_module_is_in_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    for line in lib.lines() {
        if let Some(name) = line.strip_prefix("pub mod ").or(line.strip_prefix("mod ")) {
            let name = name.trim_end_matches(';');
            assert!(
                rank(name).is_some(),
                "module `{name}` has no layer in tests/layers.rs"
            );
        }
    }
}

#[test]
fn imports_go_down_only() {
    let mut upward = Vec::new();
    let mut seen_known = BTreeSet::new();
    for ((from, to), files) in edges() {
        let (Some(rf), Some(rt)) = (rank(&from), rank(&to)) else {
            continue;
        };
        if rt < rf {
            if KNOWN_UPWARD.contains(&(from.as_str(), to.as_str())) {
                seen_known.insert((from, to));
            } else {
                upward.push(format!("{from} -> {to} (layer above it), in {files:?}"));
            }
        }
    }
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
    for (f, t) in KNOWN_UPWARD {
        assert!(
            seen_known.contains(&(f.to_string(), t.to_string())),
            "{f} -> {t} is gone from the code: remove it from KNOWN_UPWARD"
        );
    }
}

#[test]
fn no_cycle_between_top_level_modules() {
    let edges = edges();
    let mut cycles = Vec::new();
    for (from, to) in edges.keys() {
        if from < to && edges.contains_key(&(to.clone(), from.clone())) {
            let known = KNOWN_UPWARD.contains(&(from.as_str(), to.as_str()))
                || KNOWN_UPWARD.contains(&(to.as_str(), from.as_str()));
            if !known {
                cycles.push(format!(
                    "{from} <-> {to}: {:?} / {:?}",
                    edges[&(from.clone(), to.clone())],
                    edges[&(to.clone(), from.clone())]
                ));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "modules that import each other:\n{}",
        cycles.join("\n")
    );
}
