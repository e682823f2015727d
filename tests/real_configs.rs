//! Configurations shaped like the ones people run: a node-local Kubernetes
//! API balancer, a role-rendered web farm, a docker-compose broker stack,
//! orchestrator-rendered TLS ingresses, content switching, forward and
//! transparent proxies, userlist authentication, rate limits, a
//! sentinel-aware Redis front (tcp-check sequences, use-server on the
//! sentinels' vote), an ingress controller's skeleton (also in
//! master-worker mode) and a caching HTTPS edge
//! (`tests/configs/real/*.cfg`). Each uses the keywords
//! that public configs of its kind use; `haproxy -c` and `sluice -c` must
//! both accept every one.
//!
//! `tests/configs/real/pending/*.cfg` are the same kinds of configs that
//! HAProxy 2.6 accepts and sluice refuses today (one missing keyword
//! each): they are checked to stay valid for HAProxy, and move up a level
//! into the compared set when sluice takes their keyword.
//!
//! Files a config reads (a certificate, error pages, a Lua file, a server
//! state file) are in `tests/configs/real/fixtures/`; `@FIXTURES@` in a
//! config names a private copy of that directory, where the sockets and
//! pid files the configs name would go too (`-c` creates none of them).
//!
//! Required when `CI` is set (`.ci/run` installs haproxy); skipped with a
//! message otherwise.

mod support;

use std::path::{Path, PathBuf};

use support::TempDir;
use support::haproxy::{Differences, Haproxy, available, check_both};

fn real_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs/real")
}

/// The `.cfg` files of `dir`, sorted, as (file name, text).
fn configs(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cfg"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).expect("read config");
            (name, text)
        })
        .collect();
    out.sort();
    out
}

/// Copies `from` (files and subdirectories) into `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create fixture dir");
    for e in std::fs::read_dir(from).expect("read fixtures").flatten() {
        let dst = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).expect("copy fixture");
        }
    }
}

/// A private copy of the fixtures: the configs' `@FIXTURES@`.
fn fixtures() -> TempDir {
    let dir = TempDir::new("realfx");
    copy_tree(&real_dir().join("fixtures"), dir.path());
    dir
}

/// The first alert of a `-c` run, without its file and line prefix, or
/// "(accepted)". Only alerts are compared: warnings differ on purpose
/// (sluice names the keywords it takes and ignores, e.g. `option
/// prefer-last-server`) and do not change the exit code; the file names
/// differ too (each program reads its own copy), hence the cut at "] : ".
fn first_error(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.contains("[ALERT]"))
        .map(|l| l.rsplit_once("] : ").map_or(l, |(_, m)| m).to_string())
        .unwrap_or_else(|| "(accepted)".to_string())
}

#[test]
fn haproxy_and_sluice_accept_every_real_config() {
    if !available() {
        return;
    }
    let fx = fixtures();
    let cases = configs(&real_dir());
    assert!(
        cases.len() >= 10,
        "tests/configs/real holds {} configs",
        cases.len()
    );
    let mut diffs = Differences::default();
    for (name, text) in cases {
        let cfg = text.replace("@FIXTURES@", &fx.path().display().to_string());
        let ((hcode, herr), out) = check_both("real", &cfg);
        if hcode != Some(0) {
            diffs.push(format!(
                "{name}: haproxy -c exits {hcode:?}, the config is meant to be valid:\n{herr}"
            ));
            continue;
        }
        diffs.compare(format!("{name}: -c exit code"), &hcode, &out.code());
        diffs.compare(
            format!("{name}: -c first alert"),
            &first_error(&herr),
            &first_error(&out.stderr),
        );
    }
    diffs.assert_none();
}

#[test]
fn pending_configs_stay_valid_for_haproxy() {
    if !available() {
        return;
    }
    let fx = fixtures();
    let cases = configs(&real_dir().join("pending"));
    assert!(!cases.is_empty(), "tests/configs/real/pending is empty");
    let mut bad = Vec::new();
    for (name, text) in cases {
        let cfg = text.replace("@FIXTURES@", &fx.path().display().to_string());
        let (code, stderr) = Haproxy::check("realpend", &cfg);
        if code != Some(0) {
            bad.push(format!("{name}: haproxy -c exits {code:?}:\n{stderr}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
