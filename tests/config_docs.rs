//! `docs/configuration.md` must document every keyword in the parser's
//! tables: a `### \`keyword\`` heading in the matching part of the page.

use sluice::config::keywords as kw;

fn page() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/configuration.md"
    ))
    .expect("docs/configuration.md")
}

/// The text of `## <title>` up to the next `## ` heading.
fn part<'a>(page: &'a str, title: &str) -> &'a str {
    let head = format!("\n## {title}\n");
    let start = page
        .find(&head)
        .unwrap_or_else(|| panic!("docs/configuration.md has no '## {title}'"));
    let rest = &page[start + head.len()..];
    match rest.find("\n## ") {
        Some(end) => &rest[..end],
        None => rest,
    }
}

fn assert_documented(page: &str, title: &str, keywords: &[&str], prefix: &str) {
    let text = part(page, title);
    let missing: Vec<&&str> = keywords
        .iter()
        .filter(|k| !text.contains(&format!("\n### `{prefix}{k}`\n")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/configuration.md, '## {title}': no '### `{prefix}<keyword>`' entry for {missing:?}"
    );
}

#[test]
fn every_supported_keyword_is_documented() {
    let p = page();
    assert_documented(&p, "Sections", kw::SECTIONS, "");
    assert_documented(&p, "Global keywords", kw::GLOBAL_SUPPORTED, "");
    assert_documented(&p, "Proxy keywords", kw::PROXY_SUPPORTED, "");
    assert_documented(&p, "Options", kw::OPTIONS_SUPPORTED, "option ");
    assert_documented(&p, "Server options", kw::SERVER_SUPPORTED, "");
    assert_documented(&p, "Bind options", kw::BIND_SUPPORTED, "");
    assert_documented(
        &p,
        "http-request actions",
        kw::HTTP_REQUEST_SUPPORTED,
        "http-request ",
    );
    assert_documented(
        &p,
        "http-response actions",
        kw::HTTP_RESPONSE_SUPPORTED,
        "http-response ",
    );
    assert_documented(&p, "Directives", kw::DIRECTIVES, "");
    assert_documented(&p, "Legacy keywords", kw::PROXY_LEGACY, "");
}

#[test]
fn every_documented_entry_has_an_example() {
    let p = page();
    for entry in p.split("\n### ").skip(1) {
        let name = entry.lines().next().unwrap_or_default();
        assert!(
            entry.contains("Example"),
            "docs/configuration.md: '{name}' has no example"
        );
    }
}
