//! Build facts for `sluice -vv` (so bug reports carry them): the git
//! revision, the compiler, the target and profile, and the TLS library
//! compiled in. Everything has a fallback: a build from a tarball (no git,
//! or `SLUICE_GIT_REV` set by the packager) still works.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let out = |args: &[&str], cmd: &str| -> Option<String> {
        let o = Command::new(cmd).args(args).output().ok()?;
        let s = String::from_utf8(o.stdout).ok()?;
        (o.status.success() && !s.trim().is_empty()).then(|| s.trim().to_string())
    };
    let git = |args: &[&str]| out(args, "git");

    println!("cargo:rerun-if-env-changed=SLUICE_GIT_REV");
    let rev = match std::env::var("SLUICE_GIT_REV") {
        Ok(v) if !v.is_empty() => v,
        _ => {
            let describe = git(&["describe", "--tags", "--always", "--abbrev=12"]);
            let date = git(&["log", "-1", "--format=%cs"]);
            watch_git_head(&git);
            match (describe, date) {
                (Some(d), Some(t)) => format!("{d} ({t})"),
                (Some(d), None) => d,
                _ => "unknown (not built from a git checkout)".to_string(),
            }
        }
    };
    println!("cargo:rustc-env=SLUICE_GIT_REV={rev}");

    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = out(&["-V"], &rustc).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SLUICE_RUSTC_VERSION={rustc_version}");
    for (var, name) in [("TARGET", "SLUICE_TARGET"), ("PROFILE", "SLUICE_PROFILE")] {
        let v = std::env::var(var).unwrap_or_else(|_| "unknown".into());
        println!("cargo:rustc-env={name}={v}");
    }
    let opt = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "?".into());
    let debug = std::env::var("DEBUG").unwrap_or_else(|_| "?".into());
    println!("cargo:rustc-env=SLUICE_OPT_LEVEL={opt}");
    println!("cargo:rustc-env=SLUICE_DEBUGINFO={debug}");

    // The TLS library linked in, with its exact version, from the lock file
    // (empty when the build has none).
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let tls = match locked_version(&lock, "rustls") {
        None => String::new(),
        Some(v) => {
            // rustls's crypto provider: aws-lc-rs when it is in the build
            // at all, else ring.
            let provider = if locked_version(&lock, "aws-lc-rs").is_some() {
                "aws-lc-rs"
            } else {
                "ring"
            };
            format!("rustls {v} ({provider} provider)")
        }
    };
    println!("cargo:rustc-env=SLUICE_TLS={tls}");
    let h2 = locked_version(&lock, "h2").map_or(String::new(), |v| format!("h2 {v}"));
    println!("cargo:rustc-env=SLUICE_H2={h2}");
}

/// Rebuilds when HEAD moves (a commit, a checkout), without rebuilding on
/// every build: watches HEAD and the branch it points to.
fn watch_git_head(git: &dyn Fn(&[&str]) -> Option<String>) {
    let Some(dir) = git(&["rev-parse", "--git-dir"]).map(PathBuf::from) else {
        return;
    };
    let common = git(&["rev-parse", "--git-common-dir"])
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.clone());
    let watch = |p: &Path| {
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    };
    watch(&dir.join("HEAD"));
    watch(&common.join("packed-refs"));
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(&common.join(branch));
    }
}

/// The version of package `name` in a Cargo.lock.
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let wanted = format!("name = \"{name}\"");
    let mut lines = lock.lines();
    while let Some(l) = lines.next() {
        if l.trim() == wanted {
            let v = lines.next()?.trim().strip_prefix("version = \"")?;
            return Some(v.trim_end_matches('"').to_string());
        }
    }
    None
}
