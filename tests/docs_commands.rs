//! The commands of the operator docs run as written: every `sh` block of
//! `docs/operations.md` and `docs/migrating-from-haproxy.md`, in order,
//! with `sluice` on the PATH and the pages' variables (`CFG`, `SOCK`,
//! `PIDFILE`, `PORT`, `APP1`, `APP2`) pointing at a private directory. The
//! configuration is the first `haproxy` block of `docs/operations.md`.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

/// The fenced blocks of `lang` in `page`, in order.
fn blocks(page: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in page.lines() {
        match &mut cur {
            None if line.trim_end() == format!("```{lang}") => cur = Some(String::new()),
            Some(b) if line.trim_end() == "```" => {
                out.push(std::mem::take(b));
                cur = None;
            }
            Some(b) => {
                b.push_str(line);
                b.push('\n');
            }
            None => {}
        }
    }
    out
}

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Runs one block with bash (`set -euo pipefail`), 30 s at most.
fn run_block(page: &str, n: usize, block: &str, env: &[(&str, String)]) {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_sluice")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("bash")
        .args(["-c", &format!("set -euo pipefail\n{block}")])
        .env("PATH", path)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bash");
    let end = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            panic!("{page}, sh block {n} did not finish in 30 s:\n{block}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{page}, sh block {n} failed ({}):\n{block}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn operator_docs_commands_run_as_written() {
    for tool in ["socat", "curl"] {
        if Command::new(tool).arg("-V").output().is_err() {
            assert!(
                std::env::var_os("CI").is_none(),
                "{tool} is missing (.ci/run installs it)"
            );
            eprintln!("skipped: {tool} is not installed");
            return;
        }
    }
    let ops = read("docs/operations.md");
    let cfg_text = blocks(&ops, "haproxy")
        .into_iter()
        .next()
        .expect("docs/operations.md has a haproxy block");
    let dir = TempDir::new("docs");
    let cfg = dir.write("sluice.cfg", &cfg_text);
    let (_hold, ports) = hold_ports::<3>();
    let pidfile = dir.join("sluice.pid");
    let env = [
        ("CFG", cfg.display().to_string()),
        ("SOCK", dir.join("admin.sock").display().to_string()),
        ("PIDFILE", pidfile.display().to_string()),
        ("PORT", ports[0].to_string()),
        ("APP1", ports[1].to_string()),
        ("APP2", ports[2].to_string()),
        ("TMPDIR", dir.path().display().to_string()),
    ];
    // Whatever happens, no daemon is left behind: every pid the pid file
    // named (the upgrade replaces it) is stopped at the end.
    struct StopDaemons(Vec<String>);
    impl Drop for StopDaemons {
        fn drop(&mut self) {
            for pid in &self.0 {
                let _ = Command::new("kill").args(["-INT", pid]).status();
            }
        }
    }
    let mut daemons = StopDaemons(Vec::new());
    let pages = [
        ("docs/operations.md", ops.clone()),
        (
            "docs/migrating-from-haproxy.md",
            read("docs/migrating-from-haproxy.md"),
        ),
    ];
    let mut ran = 0;
    for (name, page) in &pages {
        for (i, b) in blocks(page, "sh").iter().enumerate() {
            run_block(name, i + 1, b, &env);
            ran += 1;
            if let Ok(pid) = std::fs::read_to_string(&pidfile) {
                let pid = pid.trim().to_string();
                if !daemons.0.contains(&pid) {
                    daemons.0.push(pid);
                }
            }
        }
    }
    assert!(ran >= 10, "only {ran} sh blocks found");
}
