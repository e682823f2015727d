//! sluice's command line against HAProxy 2.6's: every flag `haproxy -h`
//! lists (read from it at test time, so a flag HAProxy adds shows up here),
//! and `-cc <condition>`, run through both binaries.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};

use support::*;

/// The installed HAProxy, if any (`.ci/run` installs it).
fn haproxy() -> Option<&'static str> {
    [
        "/usr/sbin/haproxy",
        "/usr/local/sbin/haproxy",
        "/usr/bin/haproxy",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists())
}

/// Exit code, stdout, stderr of `prog args` in `cwd`.
fn run(prog: &str, args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(prog)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("spawn");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The flags of a usage text: the first word of each `-x ...` piece (and
/// of each piece after ` ; `), without its placeholder (`-dM[<byte>...]`
/// is `-dM`), `-sf/-st` as two flags.
fn flags_of(usage: &str) -> Vec<String> {
    let mut flags = Vec::new();
    for line in usage.lines().map(str::trim) {
        if !line.starts_with('-') {
            continue;
        }
        for piece in line.split(" ; ") {
            let word = piece.split_whitespace().next().unwrap_or_default();
            let word = word.split(['[', '{', '<']).next().unwrap_or_default();
            for f in word.split('/') {
                if f.starts_with('-') && !flags.iter().any(|x| x == f) {
                    flags.push(f.to_string());
                }
            }
        }
    }
    flags
}

/// What to put after a flag that takes a value.
fn value_of(flag: &str, dir: &Path) -> Option<String> {
    let path = |n: &str| dir.join(n).display().to_string();
    Some(match flag {
        "-n" => "100".into(),
        "-N" => "10".into(),
        "-m" => "512".into(),
        "-C" => dir.display().to_string(),
        "-L" => "peer1".into(),
        "-p" => path("x.pid"),
        "-x" => path("old.sock"),
        "-S" => path("master.sock"),
        "-cc" => "1".into(),
        "-sf" | "-st" => "999999".into(),
        _ => return None,
    })
}

const OK_CFG: &str = "defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind 127.0.0.1:18851
    http-request return status 200
";

/// Each flag, as `<flag> [value] -c -f ok.cfg`: same exit status, and the
/// same verdict on stdout's last line (`Configuration file is valid`, or
/// the version line's shape for -v / -vv).
#[test]
fn every_flag_of_haproxy_h_behaves_alike() {
    let Some(hap) = haproxy() else {
        eprintln!("haproxy is not installed: differential check not run");
        return;
    };
    let dir = TempDir::new("flags");
    dir.write("ok.cfg", OK_CFG);
    let (code, _, usage) = run(hap, &["-h"], dir.path());
    assert_eq!(code, Some(1));
    let flags = flags_of(&usage);
    // The list is read, not assumed: a sanity floor on what 2.6 prints.
    for f in [
        "-v", "-vv", "-V", "-c", "-cc", "-db", "-C", "-dM", "-dK", "-dW", "-dr", "-S", "-n", "-sf",
        "-st",
    ] {
        assert!(flags.iter().any(|x| x == f), "{f} not found in:\n{usage}");
    }
    let mut diffs = Vec::new();
    for flag in &flags {
        let value = value_of(flag, dir.path());
        let mut args: Vec<&str> = vec![flag];
        if let Some(v) = &value {
            args.push(v);
        }
        args.extend(["-c", "-f", "ok.cfg"]);
        let h = run(hap, &args, dir.path());
        let s = run(&bin(), &args, dir.path());
        let verdict = |out: &str| -> String {
            let first = out.lines().next().unwrap_or_default();
            if flag.starts_with("-v") {
                // "HAProxy version 2.6..." / "sluice version 0.1...".
                first
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_string()
            } else {
                out.lines().last().unwrap_or_default().to_string()
            }
        };
        if h.0 != s.0 || verdict(&h.1) != verdict(&s.1) {
            diffs.push(format!(
                "{args:?}: haproxy {:?} {:?}, sluice {:?} {:?}\n  sluice stderr: {}",
                h.0,
                verdict(&h.1),
                s.0,
                verdict(&s.1),
                s.2.lines().take(3).collect::<Vec<_>>().join("\n  ")
            ));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// A flag neither knows: exit 1 with the usage on stderr, nothing checked.
#[test]
fn an_unknown_flag_is_a_usage_error() {
    let dir = TempDir::new("unknown");
    dir.write("ok.cfg", OK_CFG);
    for flag in ["-Z", "--nope"] {
        let s = run(&bin(), &[flag, "-c", "-f", "ok.cfg"], dir.path());
        assert_eq!(s.0, Some(1), "{flag}");
        assert!(s.2.contains(&format!("unknown option '{flag}'")), "{}", s.2);
        assert!(s.2.contains("Usage : sluice"), "{}", s.2);
        assert!(!s.1.contains("valid"), "{}", s.1);
        if let Some(hap) = haproxy() {
            let h = run(hap, &[flag, "-c", "-f", "ok.cfg"], dir.path());
            assert_eq!(h.0, Some(1), "haproxy {flag}");
            assert!(h.2.contains("Usage : haproxy"));
        }
    }
    // HAProxy 2.6 reads flags by their first letters (`-dI` is `-d`,
    // `-cfoo` is `-c`); sluice refuses those spellings rather than guess.
    for flag in ["-dI", "-cfoo", "-Vx"] {
        let s = run(&bin(), &[flag, "-c", "-f", "ok.cfg"], dir.path());
        assert_eq!(s.0, Some(1), "{flag}: {}", s.2);
        assert!(s.2.contains("Usage : sluice"), "{}", s.2);
    }
}

/// The message of the `[ALERT]` line, without its pid.
fn alert_text(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .find(|l| l.starts_with("[ALERT]"))
        .and_then(|l| l.split_once(") : "))
        .map(|(_, m)| m.to_string())
}

/// `-cc`: sluice's verdicts, and where haproxy is installed, the same exit
/// status and alert text as haproxy for each condition.
#[test]
fn cc_evaluates_conditions_as_haproxy() {
    let dir = TempDir::new("cc");
    // (condition, exit status, alert)
    let cases: &[(&str, i32, Option<&str>)] = &[
        ("version_atleast(2.5)", 0, None),
        ("version_atleast(3.0)", 1, None),
        ("version_before(2.7)", 0, None),
        ("1", 0, None),
        ("0", 1, None),
        ("", 1, None),
        ("!0", 0, None),
        ("1 && 0", 1, None),
        ("1 || 0", 0, None),
        ("defined(HOME)", 0, None),
        ("defined(SLUICE_CC_NOT_SET)", 1, None),
        ("streq(a,a)", 0, None),
        ("strneq(a,a)", 1, None),
        ("streq(\"$HOME\",\"${HOME}\")", 0, None),
        ("feature(OPENSSL)", 0, None),
        (
            "foo(1)",
            2,
            Some(
                "config : Failed to evaluate condition: unparsable conditional expression 'foo(1)'",
            ),
        ),
        (
            "(1",
            2,
            Some(
                "config : Failed to evaluate condition: expected ')' after conditional expression '(1'",
            ),
        ),
        (
            "1 2",
            2,
            Some(
                "config : Failed to evaluate condition: unexpected character '2' at the end of conditional expression '1 2'",
            ),
        ),
        (
            "streq(a)",
            2,
            Some(
                "config : Failed to evaluate condition: missing arguments (got 1/2), type 'string' expected in argument 1 of predicate 'streq' used in conditional expression",
            ),
        ),
        (
            "\"unterminated",
            2,
            Some("config : Syntax Error in condition: Unmatched quote."),
        ),
    ];
    let hap = haproxy();
    let mut diffs = Vec::new();
    for &(cond, code, alert) in cases {
        let s = run(&bin(), &["-cc", cond], dir.path());
        if s.0 != Some(code) || alert_text(&s.2).as_deref() != alert {
            diffs.push(format!(
                "sluice -cc {cond:?}: {:?} {:?}, expected {code} {alert:?}",
                s.0,
                alert_text(&s.2)
            ));
        }
        if let Some(hap) = hap {
            let h = run(hap, &["-cc", cond], dir.path());
            if h.0 != s.0 || alert_text(&h.2) != alert_text(&s.2) {
                diffs.push(format!(
                    "-cc {cond:?}: haproxy {:?} {:?}, sluice {:?} {:?}",
                    h.0,
                    alert_text(&h.2),
                    s.0,
                    alert_text(&s.2)
                ));
            }
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    // -q: the status only. -cc wins over -c and needs no -f.
    let s = run(&bin(), &["-q", "-cc", "foo(1)"], dir.path());
    assert_eq!((s.0, s.2.as_str()), (Some(2), ""));
    let s = run(&bin(), &["-c", "-cc", "0", "-f", "missing.cfg"], dir.path());
    assert_eq!(s.0, Some(1), "{}", s.2);
    let s = run(&bin(), &["-cc"], dir.path());
    assert_eq!(s.0, Some(1));
    assert!(s.2.contains("Usage : sluice"), "{}", s.2);
}
