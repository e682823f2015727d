//! Every fetch and converter sluice supports is compared with haproxy
//! 2.6: each one the docs table calls supported (the table is the
//! registry's, `sample::tests::the_docs_table_is_the_registry` keeps the
//! two equal) must be named in a test that runs haproxy beside sluice (a
//! file of `tests/` using `support::haproxy`). A fetch or converter added
//! to the registry without such a comparison fails here. Names a test
//! makes up (`format!`) are listed literally in it for this reason.

use std::path::Path;

/// The names the docs table says sluice supports.
fn supported(page: &str) -> Vec<String> {
    let start = page
        .find("<!-- sample-table: generated from src/sample, do not edit -->")
        .expect("the sample table's marker in docs/configuration.md");
    page[start..]
        .lines()
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with('|'))
        .filter(|l| l.ends_with("| supported |"))
        .filter_map(|l| {
            let name = l.strip_prefix("| `")?.split('`').next()?;
            Some(name.to_string())
        })
        .collect()
}

/// Whether `name` occurs in `text` as a word of the sample language: not
/// as part of a longer name (`src` in `src_port`, `len` in `req.len`).
fn names(text: &str, name: &str) -> bool {
    let is_name_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].bytes().next_back();
        let after = text[at + name.len()..].bytes().next();
        !before.is_some_and(|b| is_name_byte(b) || b == b'.') && !after.is_some_and(is_name_byte)
    })
}

#[test]
fn every_supported_sample_is_compared_with_haproxy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/configuration.md")).expect("docs");
    let supported = supported(&page);
    // Not vacuous: the table has its hundreds of rows.
    assert!(supported.len() > 400, "{} supported", supported.len());
    let mut differential = String::new();
    for entry in std::fs::read_dir(root.join("tests")).expect("tests/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("test file");
            if text.contains("support::haproxy") || text.contains("haproxy::{") {
                differential.push_str(&text);
            }
        }
    }
    let missing: Vec<&String> = supported
        .iter()
        .filter(|n| !names(&differential, n))
        .collect();
    assert!(
        missing.is_empty(),
        "supported but compared with haproxy nowhere: {missing:?}"
    );
}

#[test]
fn names_are_found_as_words() {
    assert!(names("x src,lower", "src"));
    assert!(!names("x src_port", "src"));
    assert!(!names("req.len", "len"));
    assert!(names("\"req.len\"", "req.len"));
    assert!(!names("map_str_int(", "map_str"));
}
