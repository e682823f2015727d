//! `sluice -vv`: what a bug report needs, laid out as `haproxy -vv`.

mod support;

use support::*;

#[test]
fn vv_prints_the_build_facts() {
    let out = run_sluice(&["-vv"], None);
    assert_eq!(out.code(), Some(0), "stderr:\n{}", out.stderr);
    let text = &out.stdout;
    let line = |prefix: &str| -> String {
        text.lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .unwrap_or_else(|| panic!("no '{prefix}' line in:\n{text}"))
            .to_string()
    };
    assert!(line("sluice version ").contains(env!("CARGO_PKG_VERSION")));
    // Built from a checkout: the revision names one of its commits (not
    // necessarily HEAD: a commit made during the build moves HEAD).
    let rev = line("Git revision: ");
    let word = rev["Git revision: ".len()..]
        .split(' ')
        .next()
        .unwrap_or_default();
    let hash = word.rsplit("-g").next().unwrap_or(word);
    let in_git = std::process::Command::new("git")
        .args(["rev-parse", "--git-dir"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .is_ok_and(|o| o.status.success());
    if in_git {
        let known = std::process::Command::new("git")
            .args(["cat-file", "-e", &format!("{hash}^{{commit}}")])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            hash.len() >= 12 && known,
            "{rev:?}: not a commit of this repository"
        );
    } else {
        assert!(!word.is_empty(), "{rev:?}");
    }
    assert!(line("Running on: ").contains("Linux"));
    line("Build options :");
    assert!(line("TARGET  = ").contains("linux"));
    assert!(line("PROFILE = ").contains("opt-level"));
    assert!(line("RUSTC   = ").contains("rustc "));
    // The features `.if feature(...)` sees.
    let features = line("Feature list : ");
    for f in [
        "+EPOLL", "+THREAD", "+PROMEX", "+SYSTEMD", "+OPENSSL", "+LUA", "-QUIC",
    ] {
        assert!(
            features.split(' ').any(|w| w == f),
            "{f} not in {features:?}"
        );
    }
    let tls = line("Built with TLS : ");
    assert!(
        tls.ends_with(": none") || tls.contains("rustls 0."),
        "{tls:?}"
    );
    assert!(line("Built with HTTP/2 : ").contains(": yes (h2 0."));
    assert!(line("Built with the Prometheus exporter").ends_with("yes"));
    assert!(line("Built with systemd notify support : ").contains("yes"));
}

#[test]
fn v_prints_only_the_version() {
    let out = run_sluice(&["-v"], None);
    assert_eq!(out.code(), Some(0));
    assert_eq!(out.stdout.lines().count(), 1, "{:?}", out.stdout);
    assert!(out.stdout.starts_with("sluice version "));
}
