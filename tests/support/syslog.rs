//! A UDP syslog listener for log tests, and masks: a line is compared
//! with an expectation where each `{…}` stands for a variable part.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// Does `line` match `mask`, where each `{...}` matches any run of
/// characters (possibly empty)?
pub fn matches(mask: &str, line: &str) -> bool {
    fn go(m: &[u8], l: &[u8]) -> bool {
        match m.first() {
            None => l.is_empty(),
            Some(b'{') => {
                let close = m.iter().position(|&c| c == b'}').expect("unclosed {");
                let rest = &m[close + 1..];
                (0..=l.len()).any(|i| go(rest, &l[i..]))
            }
            Some(&c) => l.first() == Some(&c) && go(&m[1..], &l[1..]),
        }
    }
    go(mask.as_bytes(), line.as_bytes())
}

/// `line` with each `check duration: <n>ms` masked (a check's duration
/// depends on timing).
pub fn mask_check_duration(line: &str) -> String {
    match line.find("check duration: ") {
        Some(i) => {
            let rest = &line[i + 16..];
            let end = rest.find("ms").map_or(0, |e| e + 2);
            format!(
                "{}check duration: <ms>{}",
                &line[..i],
                mask_check_duration(&rest[end..])
            )
        }
        None => line.to_string(),
    }
}

pub fn assert_line(mask: &str, line: &str) {
    assert!(
        matches(mask, line),
        "log line does not match HAProxy's format\n mask: {mask:?}\n line: {line:?}"
    );
}

/// A UDP syslog listener on 127.0.0.1.
pub struct Syslog {
    sock: UdpSocket,
}

impl Syslog {
    pub fn new() -> Syslog {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        Syslog { sock }
    }
    pub fn addr(&self) -> String {
        self.sock.local_addr().unwrap().to_string()
    }
    /// Waits for `n` datagrams (at most 10 s), returns them as text.
    pub fn take(&self, n: usize) -> Vec<String> {
        let end = Instant::now() + Duration::from_secs(10);
        let mut out = Vec::new();
        let mut buf = vec![0u8; 70000];
        while out.len() < n && Instant::now() < end {
            if let Ok(len) = self.sock.recv(&mut buf) {
                out.push(String::from_utf8_lossy(&buf[..len]).into_owned());
            }
        }
        assert_eq!(out.len(), n, "expected {n} log lines, got {out:#?}");
        out
    }
    /// Collects lines until each mask of `want` matched one (at most
    /// 10 s); returns all lines seen.
    pub fn until(&self, want: &[&str]) -> Vec<String> {
        let end = Instant::now() + Duration::from_secs(10);
        let mut out: Vec<String> = Vec::new();
        let mut buf = vec![0u8; 70000];
        while !want.iter().all(|m| out.iter().any(|l| matches(m, l))) {
            assert!(Instant::now() < end, "missing {want:#?} in {out:#?}");
            if let Ok(len) = self.sock.recv(&mut buf) {
                out.push(String::from_utf8_lossy(&buf[..len]).into_owned());
            }
        }
        out
    }

    /// Nothing more arrives within `d`.
    pub fn quiet(&self, d: Duration) -> Vec<String> {
        let end = Instant::now() + d;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 70000];
        while Instant::now() < end {
            if let Ok(len) = self.sock.recv(&mut buf) {
                out.push(String::from_utf8_lossy(&buf[..len]).into_owned());
            }
        }
        out
    }
}
