//! The protocol health checks (`option redis-check`, `mysql-check`,
//! `pgsql-check`, `smtpchk`, `ldap-check`, `ssl-hello-chk`, `spop-check`) against
//! haproxy 2.6 on the same configuration: each proxy checks its own copy
//! of the same server (a real `redis-server`; for the others a scripted
//! server that records what it reads and answers with the protocol's
//! replies), and the test compares the bytes each proxy sent, the
//! server's `show stat` check fields and the health check log line, for
//! an UP and a DOWN outcome of every protocol.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use support::haproxy::{Differences, Haproxy, available};
use support::syslog::Syslog;
use support::*;

/// What a scripted server says: a greeting on connect, then one reply
/// per message read; `close`: it closes after its last reply rather than
/// waiting for the proxy to; `reset`: it closes once the proxy's next
/// message arrives, unread (the kernel resets the connection).
#[derive(Clone)]
struct Dialog {
    greeting: Vec<u8>,
    replies: Vec<Vec<u8>>,
    close: bool,
    reset: bool,
}

/// A scripted server; `first` holds everything the first connection
/// sent.
struct Scripted {
    addr: String,
    first: Arc<Mutex<Option<Vec<u8>>>>,
}

impl Scripted {
    async fn start(d: Dialog) -> Scripted {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let first = Arc::new(Mutex::new(None));
        let rec = first.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                let (d, rec) = (d.clone(), rec.clone());
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 4096];
                    let _ = s.write_all(&d.greeting).await;
                    let mut eof = false;
                    for r in &d.replies {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => {
                                eof = true;
                                break;
                            }
                            Ok(k) => got.extend_from_slice(&buf[..k]),
                        }
                        let _ = s.write_all(r).await;
                    }
                    if d.reset && !eof {
                        let _ = s.peek(&mut buf).await;
                    } else if !d.close && !eof {
                        // Until the proxy closes (a check that waits in
                        // vain ends at `timeout check`).
                        let read = async {
                            while let Ok(k @ 1..) = s.read(&mut buf).await {
                                got.extend_from_slice(&buf[..k]);
                            }
                        };
                        let _ = tokio::time::timeout(Duration::from_secs(5), read).await;
                    }
                    let mut first = rec.lock().unwrap();
                    if first.is_none() {
                        *first = Some(got);
                    }
                });
            }
        });
        Scripted { addr, first }
    }
}

/// A real redis-server on a UNIX socket of `dir` (no port to choose).
struct Redis {
    child: Child,
    sock: PathBuf,
}

impl Redis {
    fn start(dir: &Path, name: &str, password: Option<&str>) -> Redis {
        let sock = dir.join(format!("{name}.sock"));
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", "0", "--save", "", "--appendonly", "no"])
            .arg("--unixsocket")
            .arg(&sock)
            .arg("--dir")
            .arg(dir);
        if let Some(p) = password {
            cmd.args(["--requirepass", p]);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install redis-server)");
        let end = Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(&sock).is_err() {
            assert!(Instant::now() < end, "redis-server did not open {sock:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
        Redis { child, sock }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A MySQL packet: length, sequence, payload.
fn mysql_packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    p.push(seq);
    p.extend_from_slice(payload);
    p
}

fn mysql_greeting() -> Vec<u8> {
    let mut p = vec![10];
    p.extend_from_slice(b"5.7.42-test\0");
    p.extend_from_slice(&42u32.to_le_bytes());
    p.extend_from_slice(b"abcdefgh\0");
    p.extend_from_slice(&[0xff, 0xf7, 0x21, 0x02, 0x00, 0xff, 0x81, 0x15]);
    p.extend_from_slice(&[0; 10]);
    p.extend_from_slice(b"ijklmnopqrst\0mysql_native_password\0");
    mysql_packet(0, &p)
}

fn dialog(greeting: &[u8], replies: &[&[u8]], close: bool) -> Dialog {
    Dialog {
        greeting: greeting.to_vec(),
        replies: replies.iter().map(|r| r.to_vec()).collect(),
        close,
        reset: false,
    }
}

/// The check fields the test compares.
const FIELDS: [&str; 6] = [
    "status",
    "check_status",
    "check_code",
    "check_desc",
    "last_chk",
    "check_health",
];

/// The fields of every case's server, once each has been checked and no
/// check is under way (haproxy marks one with `* `).
async fn settled(sock: &Path, names: &[String]) -> Vec<Vec<String>> {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let csv = show_stat(sock).await;
        let rows: Vec<Vec<String>> = names
            .iter()
            .map(|n| FIELDS.iter().map(|f| csv.get(n, "s", f)).collect())
            .collect();
        if rows
            .iter()
            .all(|r| r[1] != "INI" && !r[1].starts_with("* ") && !r[1].is_empty())
        {
            return rows;
        }
        assert!(Instant::now() < end, "checks did not settle: {rows:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The first health check line of each server, its duration masked
/// (it depends on timing).
fn check_lines(log: &Syslog, names: &[String]) -> Vec<String> {
    let masks: Vec<String> = names
        .iter()
        .map(|n| format!("Health check for server {n}/s {{}}"))
        .collect();
    let refs: Vec<&str> = masks.iter().map(String::as_str).collect();
    let lines = log.until(&refs);
    names
        .iter()
        .map(|n| {
            let head = format!("Health check for server {n}/s ");
            let l = lines.iter().find(|l| l.starts_with(&head)).unwrap();
            support::syslog::mask_check_duration(l.trim_end())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_checks_match_haproxy() {
    if !available() {
        return;
    }
    let ok41 = mysql_packet(2, &[0, 0, 0, 2, 0, 0, 0]);
    let denied = mysql_packet(2, b"\xff\x15\x04#28000Access denied for user 'bob'");
    let blocked = mysql_packet(0, b"\xff\x6a\x04Host '127.0.0.1' is blocked");
    let pg_md5 = unhex("520000000c00000005aabbccdd");
    let pg_fatal = unhex(
        "450000002a53464154414c00433238303030004d726f6c652022626f622220646f6573206e6f74206578697374000000",
    );
    let pg_krb = unhex("520000000800000001");
    let ldap_ok = unhex("300c02010161070a010004000400");
    let ldap_49 = unhex("300c02010161070a013104000400");
    let ldap_bad = unhex("300c02010162070a010004000400");
    let ssl_ok = unhex("160300004a020000460300");
    // SPOP: an AGENT-HELLO (version 2.0, its frame size, no
    // capabilities), an AGENT-DISCONNECT with status 3.
    let spop_hello = unhex(
        "00000036650000000100000776657273696f6e0803322e300e6d61782d6672616d652d73697a6503fcf0060c6361706162696c69746965730800",
    );
    let spop_bye = unhex(
        "0000002a660000000100000b7374617475732d636f64650303076d657373616765080b6261642076657273696f6e",
    );
    // (backend, option line, what the server says)
    let scripted: Vec<(&str, &str, Dialog)> = vec![
        (
            "my_greet",
            "option mysql-check",
            dialog(&mysql_greeting(), &[], false),
        ),
        (
            "my_blocked",
            "option mysql-check",
            dialog(&blocked, &[], false),
        ),
        (
            "my41",
            "option mysql-check user bob",
            dialog(&mysql_greeting(), &[&ok41], false),
        ),
        (
            "my40",
            "option mysql-check user bob pre-41",
            dialog(&mysql_greeting(), &[&ok41], false),
        ),
        (
            "my_denied",
            "option mysql-check user bob post-41",
            dialog(&mysql_greeting(), &[&denied], false),
        ),
        (
            "pg_up",
            "option pgsql-check user bob",
            dialog(b"", &[&pg_md5], false),
        ),
        (
            "pg_fatal",
            "option pgsql-check user bob",
            dialog(b"", &[&pg_fatal], false),
        ),
        (
            "pg_krb",
            "option pgsql-check user bob",
            dialog(b"", &[&pg_krb], false),
        ),
        (
            "smtp_up",
            "option smtpchk",
            dialog(
                b"220 mx ESMTP ready\r\n",
                &[b"250 mx hello\r\n", b"221 2.0.0 bye\r\n"],
                false,
            ),
        ),
        (
            "smtp_ehlo",
            "option smtpchk EHLO mx.example.org",
            dialog(
                b"220 mx ESMTP\r\n",
                &[b"250-mx\r\n250 SIZE 1000\r\n", b"221 bye\r\n"],
                false,
            ),
        ),
        (
            "smtp_busy",
            "option smtpchk",
            dialog(b"554 5.3.2 go away\r\n", &[], false),
        ),
        (
            "smtp_junk",
            "option smtpchk",
            dialog(b"hello there\r\n", &[], false),
        ),
        (
            "smtp_nohelo",
            "option smtpchk",
            dialog(b"220 mx\r\n", &[b"550 no thanks\r\n"], true),
        ),
        // A server that closes on the QUIT it did not read: a reset,
        // HAProxy's socket error.
        (
            "smtp_reset",
            "option smtpchk",
            Dialog {
                reset: true,
                ..dialog(b"220 mx\r\n", &[b"250 mx\r\n"], false)
            },
        ),
        (
            "spop_up",
            "option spop-check",
            dialog(b"", &[&spop_hello], false),
        ),
        (
            "spop_bye",
            "option spop-check",
            dialog(b"", &[&spop_bye], false),
        ),
        (
            "spop_junk",
            "option spop-check",
            dialog(b"", &[b"garbage\n"], false),
        ),
        (
            "ldap_up",
            "option ldap-check",
            dialog(b"", &[&ldap_ok], false),
        ),
        (
            "ldap_49",
            "option ldap-check",
            dialog(b"", &[&ldap_49], false),
        ),
        (
            "ldap_bad",
            "option ldap-check",
            dialog(b"", &[&ldap_bad], false),
        ),
        (
            "ssl_up",
            "option ssl-hello-chk",
            dialog(b"", &[&ssl_ok], false),
        ),
        (
            "ssl_bad",
            "option ssl-hello-chk",
            dialog(b"", &[b"HELLO"], false),
        ),
    ];
    let dir = TempDir::new("proto-checks");
    let redis_up = Redis::start(dir.path(), "redis-up", None);
    let redis_auth = Redis::start(dir.path(), "redis-auth", Some("secret"));

    // A real SMTP server (aiosmtpd) per proxy.
    let sinks = [support::smtp::Sink::start(), support::smtp::Sink::start()];
    let mut names: Vec<String> = vec!["redis_up".into(), "redis_auth".into(), "smtp_real".into()];
    names.extend(scripted.iter().map(|(n, _, _)| n.to_string()));
    let logs = [Syslog::new(), Syslog::new()];
    let mut servers: [Vec<Scripted>; 2] = Default::default();
    let mut cfgs = Vec::new();
    for (i, side) in servers.iter_mut().enumerate() {
        let sock = dir.join(&format!("stats{i}.sock"));
        let mut cfg = format!(
            "global
    stats socket {} mode 600 level admin
    log {} format raw local0 info
defaults
    mode tcp
    log global
    option log-health-checks
    timeout connect 2s
    timeout client 5s
    timeout server 5s
    timeout check 3s
backend redis_up
    option redis-check
    server s {} check inter 1s rise 1 fall 1
backend redis_auth
    option redis-check
    server s {} check inter 1s rise 1 fall 1
backend smtp_real
    option smtpchk
    server s 127.0.0.1:{} check inter 1s rise 1 fall 1
",
            sock.display(),
            logs[i].addr(),
            redis_up.sock.display(),
            redis_auth.sock.display(),
            sinks[i].port,
        );
        for (name, opt, d) in &scripted {
            let srv = Scripted::start(d.clone()).await;
            cfg.push_str(&format!(
                "backend {name}\n    {opt}\n    server s {} check inter 1s rise 1 fall 1\n",
                srv.addr
            ));
            side.push(srv);
        }
        cfgs.push((sock, cfg));
    }
    let _hap = Haproxy::start("proto-checks", &cfgs[0].1, &[]);
    let _sl = Sluice::start(&cfgs[1].1);
    let mut diff = Differences::default();
    let mut got = Vec::new();
    for (sock, _) in &cfgs {
        let end = Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(sock).is_err() {
            assert!(Instant::now() < end, "no stats socket {sock:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        got.push(settled(sock, &names).await);
    }
    for (n, name) in names.iter().enumerate() {
        diff.compare(format!("{name}: {FIELDS:?}"), &got[0][n], &got[1][n]);
    }
    let lines = [check_lines(&logs[0], &names), check_lines(&logs[1], &names)];
    for n in 0..names.len() {
        diff.compare(&names[n], &lines[0][n], &lines[1][n]);
    }
    // What each proxy sent its server on the first check.
    for (n, (name, _, _)) in scripted.iter().enumerate() {
        let sent = |side: usize| {
            let mut b = servers[side][n].first.lock().unwrap().clone();
            // ssl-hello-chk's ClientHello carries the time in seconds
            // (bytes 11 to 14): masked, the two checks ran at different
            // moments.
            if name.starts_with("ssl")
                && let Some(b) = b.as_mut().filter(|b| b.len() > 15)
            {
                b[11..15].fill(0);
            }
            b.map(|b| String::from_utf8_lossy(&b).into_owned())
        };
        diff.compare(format!("{name}: bytes sent"), &sent(0), &sent(1));
    }
    diff.assert_none();
    // The real SMTP server's view of the first check of each.
    let dialogues = [sinks[0].dialogues(1), sinks[1].dialogues(1)];
    assert_eq!(
        dialogues[0], dialogues[1],
        "the SMTP dialogues (haproxy, sluice)"
    );
    assert_eq!(dialogues[1][0], ["HELO localhost", "QUIT"]);
    // The UP and DOWN outcomes are what they should be, not merely alike.
    let status = |name: &str| &got[1][names.iter().position(|n| n == name).unwrap()][0];
    for up in [
        "redis_up",
        "smtp_real",
        "my_greet",
        "my41",
        "my40",
        "pg_up",
        "smtp_up",
        "smtp_ehlo",
        "ldap_up",
        "ssl_up",
    ] {
        assert_eq!(status(up), "UP", "{up}");
    }
    for down in [
        "redis_auth",
        "my_blocked",
        "my_denied",
        "pg_fatal",
        "pg_krb",
        "smtp_busy",
        "smtp_junk",
        "smtp_nohelo",
        "smtp_reset",
        "ldap_49",
        "ldap_bad",
        "ssl_bad",
    ] {
        assert_eq!(status(down), "DOWN", "{down}");
    }
}

/// `sluice -c` says what `haproxy -c` says of each misuse of the protocol
/// check options (and accepts what it accepts).
#[test]
fn protocol_check_options_are_read_as_haproxy_reads_them() {
    if !available() {
        return;
    }
    let lines = [
        "option redis-check",
        "option mysql-check",
        "option mysql-check user bob",
        "option mysql-check user bob pre-41",
        "option mysql-check user bob post-41",
        "option mysql-check user",
        "option mysql-check foo",
        "option mysql-check user bob post-42",
        "option mysql-check user bob pre-41 x",
        "option pgsql-check user bob",
        "option pgsql-check",
        "option pgsql-check user",
        "option pgsql-check foo bar",
        "option pgsql-check user bob x",
        "option redis-check x",
        "option ldap-check",
        "option ldap-check x",
        "option ssl-hello-chk",
        "option ssl-hello-chk x",
        "option smtpchk",
        "option smtpchk EHLO mx.example.org",
        "option smtpchk FOO bar",
        "option smtpchk EHLO",
        "option smtpchk EHLO a b",
        "no option redis-check",
        "no option smtpchk",
    ];
    let cases = lines.iter().map(|l| {
        (
            l.to_string(),
            format!(
                "defaults\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\nbackend b\n  {l}\n  server s 127.0.0.1:1 check\n"
            ),
        )
    });
    // The message after the file and line (the two files' names differ).
    let alert = |stderr: &str| -> String {
        stderr
            .lines()
            .find_map(|l| {
                let at = l.find("parsing [")?;
                let rest = &l[at..];
                Some(
                    rest[rest.find(']')? + 1..]
                        .trim_start_matches([' ', ':'])
                        .to_string(),
                )
            })
            .unwrap_or_else(|| "(accepted)".to_string())
    };
    // In a frontend: HAProxy's warning that the option is ignored.
    let frontend = (
        "frontend".to_string(),
        "frontend f\n  bind 127.0.0.1:1\n  timeout client 1s\n  option redis-check\n".to_string(),
    );
    let warning = |stderr: &str| -> String {
        stderr
            .lines()
            .find(|l| l.contains("ignored because"))
            .and_then(|l| Some(l[l.find("] : ")? + 4..].to_string()))
            .unwrap_or_default()
    };
    support::haproxy::assert_check_agrees("proto-check-frontend", [frontend], warning);
    support::haproxy::assert_check_agrees("proto-check-options", cases, alert);
}
