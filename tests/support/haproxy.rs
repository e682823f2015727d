//! The reference HAProxy 2.6 (`/usr/sbin/haproxy`), run beside sluice on
//! the same configuration by the differential tests.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::{Listen, Response, TempDir, inherit};

pub const HAPROXY: &str = "/usr/sbin/haproxy";

/// Whether haproxy can be run here. Outside CI a missing haproxy skips the
/// comparison (with a note); under CI (`.ci/run` installs it) it fails.
pub fn available() -> bool {
    if Path::new(HAPROXY).exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{HAPROXY} is needed on CI"
    );
    eprintln!("skipped: {HAPROXY} is not installed");
    false
}

/// A running haproxy, killed when dropped.
pub struct Haproxy {
    child: Child,
    _dir: TempDir,
}

impl Haproxy {
    /// Starts haproxy in the foreground on `cfg`, handing it `listens` (its
    /// config binds them as `fd@N`), and waits until it accepts on each.
    pub fn start(tag: &str, cfg: &str, listens: &[&Listen]) -> Haproxy {
        let dir = TempDir::new(tag);
        let path = dir.write("haproxy.cfg", cfg);
        let mut cmd = Command::new(HAPROXY);
        inherit(&mut cmd, listens);
        let mut child = cmd
            .arg("-f")
            .arg(&path)
            .arg("-db")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn haproxy");
        for l in listens {
            l.wait_accepting(&mut child);
        }
        Haproxy { child, _dir: dir }
    }

    /// `haproxy -c` on `cfg`: its exit code and its stderr.
    pub fn check(tag: &str, cfg: &str) -> (Option<i32>, String) {
        let dir = TempDir::new(tag);
        let path = dir.write("haproxy.cfg", cfg);
        let out = Command::new(HAPROXY)
            .arg("-c")
            .arg("-f")
            .arg(&path)
            .output()
            .expect("run haproxy -c");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The message of the first alert naming a config line (`parsing [f:n] :
/// <message>`), or "(accepted)": what the `-c` differential tests compare.
pub fn first_alert(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.contains("parsing ["))
        .map(|l| l.split_once("] : ").map_or(l, |(_, m)| m).to_string())
        .unwrap_or_else(|| "(accepted)".to_string())
}

/// How sluice's answer `s` to what `label` names differs from haproxy's
/// `h` (status and body), if it does; haproxy's must be a 200, so a case
/// that haproxy itself refuses cannot pass unseen.
pub fn answer_differs(label: &str, h: &Response, s: &Response) -> Option<String> {
    assert_eq!(h.status, 200, "haproxy on {label}");
    ((s.status, &s.body) != (h.status, &h.body)).then(|| {
        format!(
            "{label}: haproxy {:?}, sluice {} {:?}",
            String::from_utf8_lossy(&h.body),
            s.status,
            String::from_utf8_lossy(&s.body)
        )
    })
}
