//! The man pages under `packaging/man/` are generated (src/control/manpage.rs) from
//! `docs/configuration.md`, `packaging/man/sluice.1.md` and the usage text;
//! this test regenerates them and fails when the committed pages differ, so
//! they cannot drift. `SLUICE_BLESS_MAN=1 cargo test --test man_pages`
//! rewrites them. When groff is installed, it also renders them with every
//! warning enabled and fails on any warning.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Compares (or with SLUICE_BLESS_MAN=1 writes) one generated page.
fn check(rel: &str, generated: &str) -> PathBuf {
    let path = root().join(rel);
    if std::env::var_os("SLUICE_BLESS_MAN").is_some() {
        std::fs::write(&path, generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(generated.lines().count()));
        panic!(
            "{rel} is out of date (first difference at line {}); regenerate it with \
             SLUICE_BLESS_MAN=1 cargo test --test man_pages",
            line + 1
        );
    }
    path
}

/// `groff -man -ww`: no warning at all, and some text out.
fn renders_cleanly(page: &Path) {
    let Ok(out) = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(page)
        .output()
    else {
        // .ci/run installs it.
        assert!(std::env::var_os("CI").is_none(), "groff is needed on CI");
        eprintln!("groff not installed: rendering not checked");
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "{}: groff warnings:\n{stderr}",
        page.display()
    );
}

#[test]
fn sluice_1_is_generated_and_renders() {
    let page = sluice::control::manpage::sluice_1(&read("packaging/man/sluice.1.md"));
    // Every flag of the usage text is an OPTIONS entry.
    for flag in [
        "-f", "-c", "-q", "-vv", "-dW", "--dump", "-p", "-sf", "-x", "-Ws", "-L",
    ] {
        let roff = flag.replace('-', "\\-");
        assert!(
            page.contains(&format!(".TP\n\\fB{roff}")),
            "sluice.1 has no OPTIONS entry for {flag}"
        );
    }
    for section in ["SYNOPSIS", "OPTIONS", "SIGNALS", "EXIT STATUS", "FILES"] {
        assert!(page.contains(&format!("\n.SH {section}\n")), "no {section}");
    }
    renders_cleanly(&check("packaging/man/sluice.1", &page));
}

#[test]
fn sluice_cfg_5_is_generated_and_renders() {
    let page = sluice::control::manpage::sluice_cfg_5(&read("docs/configuration.md"));
    for section in [
        "FILES AND SYNTAX",
        "SECTIONS",
        "GLOBAL KEYWORDS",
        "PROXY KEYWORDS",
    ] {
        assert!(page.contains(&format!("\n.SH {section}\n")), "no {section}");
    }
    // Keyword entries come from the same page tests/config_docs.rs checks
    // against the parser's tables.
    for kw in sluice::config::keywords::GLOBAL_SUPPORTED {
        let roff = kw.replace('-', "\\-");
        assert!(
            page.contains(&format!("\n.SS {roff}\n")),
            "no entry for {kw}"
        );
    }
    renders_cleanly(&check("packaging/man/sluice.cfg.5", &page));
}
