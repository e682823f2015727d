//! The config corpus in `tests/configs/`: `sluice -c` on every file, and,
//! where HAProxy is installed, a differential check that both accept or
//! both reject each config. The differences that are intended are listed
//! in [`CASES`] with their reason; nothing is skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn configs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs")
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(bin: &str, args: &[&str], cwd: &Path) -> Out {
    let o = Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        // Variables the corpus reads: always unset, for both programs.
        .env_remove("SLUICE_CORPUS_PRODUCTION")
        .env_remove("SLUICE_CORPUS_STAGE")
        .env_remove("SLUICE_CORPUS_MAXCONN")
        .env_remove("SLUICE_CORPUS_ADDR")
        .output()
        .expect("run");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn sluice(args: &[&str]) -> Out {
    run(env!("CARGO_BIN_EXE_sluice"), args, &configs())
}

/// The installed HAProxy, if any (`.ci/run` installs it).
fn haproxy() -> Option<String> {
    for p in [
        "/usr/sbin/haproxy",
        "/usr/local/sbin/haproxy",
        "/usr/bin/haproxy",
    ] {
        if Path::new(p).exists() {
            return Some(p.to_string());
        }
    }
    None
}

/// What HAProxy 2.6 says about a config compared with sluice.
enum Haproxy {
    /// Same `-c` exit status.
    Same,
    /// An intended difference: HAProxy's exit status and why.
    Differs(i32, &'static str),
}

struct Case {
    path: &'static str,
    /// `sluice -c` exit status.
    sluice: i32,
    /// A line sluice must print (stdout or stderr), if any.
    says: Option<&'static str>,
    haproxy: Haproxy,
}

const CASES: &[Case] = &[
    Case {
        path: "small-site.cfg",
        sluice: 0,
        says: Some("Configuration file is valid"),
        haproxy: Haproxy::Same,
    },
    Case {
        path: "couchdb-split.cfg",
        sluice: 0,
        says: Some("Configuration file is valid"),
        haproxy: Haproxy::Same,
    },
    Case {
        path: "couchdb-legacy.cfg",
        sluice: 0,
        says: Some(
            "parsing [couchdb-legacy.cfg:9] : the 'clitimeout' directive is not supported anymore since HAProxy 2.1. Use 'timeout client'.",
        ),
        haproxy: Haproxy::Differs(
            1,
            "legacy keywords (clitimeout, srvtimeout, contimeout, nbproc): HAProxy 2.6 refuses them, sluice accepts them, warning with HAProxy 2.6's texts",
        ),
    },
    Case {
        path: "api-gateway.cfg",
        sluice: 0,
        says: Some("Configuration file is valid"),
        haproxy: Haproxy::Same,
    },
    Case {
        path: "named-defaults.cfg",
        sluice: 0,
        says: Some("Configuration file is valid"),
        haproxy: Haproxy::Same,
    },
    Case {
        path: "conditional.cfg",
        sluice: 0,
        says: Some("parsing [conditional.cfg:5]: 'staging settings'."),
        haproxy: Haproxy::Same,
    },
    Case {
        path: "no-listener.cfg",
        sluice: 2,
        says: Some("Configuration file has no error but will not start (no listener) => exit(2)."),
        haproxy: Haproxy::Same,
    },
    Case {
        path: "missing-timeouts.cfg",
        sluice: 0,
        says: Some("Warnings were found."),
        haproxy: Haproxy::Same,
    },
    Case {
        path: "duplicate-bind.cfg",
        sluice: 1,
        says: Some("a sluice check: HAProxy accepts this"),
        haproxy: Haproxy::Differs(
            0,
            "two binds on one address: HAProxy shares the port (SO_REUSEPORT), sluice listens once per address and says so at -c time",
        ),
    },
    Case {
        path: "stats-socket-no-dir.cfg",
        // HAProxy -c does not look at the directory; sluice -c says so in
        // a notice, with the same outcome. Starting fails in both.
        sluice: 0,
        says: Some(
            "directory '/nonexistent-sluice-corpus' does not exist; starting on this machine would fail",
        ),
        haproxy: Haproxy::Same,
    },
    Case {
        path: "haproxy-forms.cfg",
        sluice: 0,
        says: Some("Configuration file is valid"),
        haproxy: Haproxy::Same,
    },
    Case {
        path: "split-site",
        sluice: 0,
        says: Some("Configuration file is valid"),
        // HAProxy cannot read the split layout itself: it is given
        // sluice's --dump of it (see `differential`).
        haproxy: Haproxy::Same,
    },
];

/// `tests/configs/broken/*.cfg`: each has one error, announced on its first
/// line as `# expect: <text sluice prints>`.
fn broken() -> Vec<(String, String)> {
    let dir = configs().join("broken");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("tests/configs/broken")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cfg"))
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).unwrap_or_default();
            let expect = text
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("# expect: "))
                .unwrap_or_else(|| panic!("{n}: first line must be '# expect: <message>'"))
                .to_string();
            (n, expect)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_corpus_entry_is_listed() {
    let mut listed: Vec<&str> = CASES.iter().map(|c| c.path).collect();
    listed.push("broken");
    // Checked against haproxy by tests/real_configs.rs.
    listed.push("real");
    for e in std::fs::read_dir(configs())
        .expect("tests/configs")
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            listed.contains(&name.as_str()),
            "tests/configs/{name} is not in CASES of tests/config_corpus.rs"
        );
    }
    assert!(broken().len() >= 20);
}

#[test]
fn sluice_check_on_the_corpus() {
    for c in CASES {
        let out = sluice(&["-c", "-f", c.path]);
        assert_eq!(
            out.code, c.sluice,
            "sluice -c -f {}: stdout:\n{}\nstderr:\n{}",
            c.path, out.stdout, out.stderr
        );
        if let Some(s) = c.says {
            assert!(
                out.stdout.contains(s) || out.stderr.contains(s),
                "sluice -c -f {} does not say {s:?}; stdout:\n{}\nstderr:\n{}",
                c.path,
                out.stdout,
                out.stderr
            );
        }
        // -q: the same status, nothing printed.
        let quiet = sluice(&["-c", "-q", "-f", c.path]);
        assert_eq!(quiet.code, c.sluice, "{} with -q", c.path);
        assert_eq!(quiet.stdout, "", "{} with -q", c.path);
        assert_eq!(quiet.stderr, "", "{} with -q", c.path);
    }
    for (path, expect) in broken() {
        let out = run(
            env!("CARGO_BIN_EXE_sluice"),
            &["-c", "-f", &path],
            &configs().join("broken"),
        );
        assert_eq!(out.code, 1, "{path} accepted; stderr:\n{}", out.stderr);
        assert!(
            out.stderr.contains(&expect),
            "{path}: stderr lacks {expect:?}:\n{}",
            out.stderr
        );
        // One error each: a single diagnostic carries a file:line, apart
        // from the closing lines.
        let located = out
            .stderr
            .lines()
            .filter(|l| l.starts_with("[ALERT]") && l.contains(".cfg:"))
            .count();
        assert!(located <= 1, "{path}: more than one error:\n{}", out.stderr);
        assert!(!out.stdout.contains("Configuration file is valid"));
    }
}

#[test]
fn differential_against_haproxy() {
    let Some(hap) = haproxy() else {
        eprintln!("haproxy is not installed: differential check not run");
        return;
    };
    let dir = configs();
    let tmp = std::env::temp_dir().join(format!("sluice-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let mut failures = Vec::new();
    for c in CASES {
        let target = if dir.join(c.path).is_dir() {
            let dump = sluice(&["-c", "-q", "--dump", "-f", c.path]);
            let file = tmp.join(format!("{}.cfg", c.path));
            std::fs::write(&file, dump.stdout).expect("write dump");
            file
        } else {
            dir.join(c.path)
        };
        let target = target.to_string_lossy().into_owned();
        let h = run(&hap, &["-c", "-q", "-f", &target], &dir);
        let want = match c.haproxy {
            Haproxy::Same => c.sluice,
            Haproxy::Differs(code, why) => {
                eprintln!("intended difference, {}: {why}", c.path);
                code
            }
        };
        if h.code != want {
            failures.push(format!(
                "{}: haproxy -c exits {} (expected {want}); sluice {}",
                c.path, h.code, c.sluice
            ));
        }
        // The effective configuration reads the same in HAProxy.
        let dump = sluice(&["-c", "-q", "--dump", "-f", c.path]);
        let file = tmp.join("dump.cfg");
        std::fs::write(&file, dump.stdout).expect("write dump");
        let hd = run(&hap, &["-c", "-q", "-f", &file.to_string_lossy()], &dir);
        if hd.code != h.code && !dir.join(c.path).is_dir() {
            failures.push(format!(
                "{}: haproxy exits {} on the file but {} on sluice's --dump of it",
                c.path, h.code, hd.code
            ));
        }
    }
    for (path, _) in broken() {
        let h = run(&hap, &["-c", "-q", "-f", &path], &dir.join("broken"));
        if h.code != 1 {
            failures.push(format!("{path}: haproxy -c exits {}, sluice 1", h.code));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
