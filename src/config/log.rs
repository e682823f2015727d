//! What the `log`, `log-tag`, `log-format` and logging `option` lines mean:
//! targets, formats and the per-proxy settings, and their parsers (which
//! return HAProxy 2.6's error texts).

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

/// Where a log line goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Sink {
    /// `127.0.0.1[:514]`, `udp@host:port`, `ipv4@`, `ipv6@`.
    Udp(SocketAddr),
    /// `/dev/log`, `unix@/path`: a UNIX datagram socket.
    Unix(PathBuf),
    /// `stdout` / `fd@1`.
    Stdout,
    /// `stderr` / `fd@2`.
    Stderr,
    /// `ring@<name>`: the `ring` section of that name.
    Ring(String),
}

/// The `format` of a log target (HAProxy's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Format {
    /// No `format`: RFC3164 without the host name, unless the global
    /// section has `log-send-hostname` (HAProxy's default).
    #[default]
    Default,
    /// `format local`: RFC3164 without the host name, always.
    Local,
    Rfc3164,
    Rfc5424,
    /// `<PRI>` and the message.
    Priority,
    /// `<severity>` and the message (systemd).
    Short,
    /// `<severity>`, an ISO date and the message.
    Timed,
    /// An ISO date and the message.
    Iso,
    /// The message alone.
    Raw,
}

impl Format {
    pub(crate) fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "local" => Format::Local,
            "rfc3164" => Format::Rfc3164,
            "rfc5424" => Format::Rfc5424,
            "priority" => Format::Priority,
            "short" => Format::Short,
            "timed" => Format::Timed,
            "iso" => Format::Iso,
            "raw" => Format::Raw,
            _ => return None,
        })
    }
}

pub(crate) const FACILITIES: [&str; 24] = [
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "auth2",
    "ftp", "ntp", "audit", "alert", "cron2", "local0", "local1", "local2", "local3", "local4",
    "local5", "local6", "local7",
];

pub(crate) const LEVELS: [&str; 8] = [
    "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
];

/// Syslog severities used by sluice.
pub(crate) const EMERG: u8 = 0;
pub(crate) const ALERT: u8 = 1;
pub(crate) const ERR: u8 = 3;
pub(crate) const WARNING: u8 = 4;
pub(crate) const NOTICE: u8 = 5;
pub(crate) const INFO: u8 = 6;

/// One `log <target> ...` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogTarget {
    pub(crate) sink: Sink,
    /// Longest datagram, line feed included (`len`, 80..65535, default 1024).
    pub(crate) len: usize,
    pub(crate) format: Format,
    pub(crate) facility: u8,
    /// Messages less severe than this are not sent.
    pub(crate) level: u8,
    /// More severe messages are lowered to this level.
    pub(crate) minlevel: u8,
}

impl LogTarget {
    /// The severity this target sends a message of severity `sev` at, or
    /// `None` when it filters it out.
    pub(crate) fn severity(&self, sev: u8) -> Option<u8> {
        (sev <= self.level).then_some(sev.max(self.minlevel))
    }
}

/// A parsed `log` line: `log global` or a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LogLine {
    Global,
    Target(LogTarget),
}

/// Logging settings of the `global` section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GlobalLog {
    pub(crate) targets: Vec<LogTarget>,
    /// `log-tag`: the program name in the syslog header (default `sluice`).
    pub(crate) tag: Option<String>,
    /// `log-send-hostname [<name>]`: the host name the syslog header
    /// carries (the machine's without a name).
    pub(crate) send_hostname: Option<String>,
}

/// The log format a proxy asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LogFormatKind {
    Http,
    HttpClf,
    Tcp,
    Custom(String),
}

impl LogFormatKind {
    /// The format string (HAProxy's built-in ones).
    pub(crate) fn text(&self) -> &str {
        match self {
            LogFormatKind::Http => HTTPLOG_FORMAT,
            LogFormatKind::HttpClf => CLF_HTTPLOG_FORMAT,
            LogFormatKind::Tcp => TCPLOG_FORMAT,
            LogFormatKind::Custom(s) => s,
        }
    }
}

/// HAProxy 2.6's `option httplog` format.
pub(crate) const HTTPLOG_FORMAT: &str = "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r";
/// HAProxy 2.6's `option httplog clf` format.
pub(crate) const CLF_HTTPLOG_FORMAT: &str = "%{+Q}o %{-Q}ci - - [%trg] %r %ST %B \"\" \"\" %cp %ms %ft %b %s %TR %Tw %Tc %Tr %Ta %tsc %ac %fc %bc %sc %rc %sq %bq %CC %CS %hrl %hsl";
/// HAProxy 2.6's `option tcplog` format.
pub(crate) const TCPLOG_FORMAT: &str =
    "%ci:%cp [%t] %ft %b/%s %Tw/%Tc/%Tt %B %ts %ac/%fc/%bc/%sc/%rc %sq/%bq";

/// Logging settings of one proxy (inherited from `defaults` as a whole).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProxyLog {
    /// `log global` in effect: the global targets apply.
    pub(crate) global: bool,
    /// The proxy's own `log` lines.
    pub(crate) targets: Vec<LogTarget>,
    /// `option httplog [clf]`, `option tcplog`, `log-format`.
    pub(crate) format: Option<LogFormatKind>,
    pub(crate) dontlognull: bool,
    /// `option dontlog-normal`: only the exchanges that failed are logged.
    pub(crate) dontlog_normal: bool,
    pub(crate) separate_errors: bool,
    pub(crate) logasap: bool,
    /// `log-tag` of the proxy.
    pub(crate) tag: Option<String>,
    /// `log-format-sd`: the structured data of RFC 5424 headers.
    pub(crate) sd: Option<String>,
}

impl ProxyLog {
    /// Does this proxy have somewhere to log to?
    pub(crate) fn has_targets(&self, global: &GlobalLog) -> bool {
        !self.targets.is_empty() || (self.global && !global.targets.is_empty())
    }

    /// Every target in effect: the global ones first when `log global`.
    pub(crate) fn all_targets(&self, global: &GlobalLog) -> Vec<LogTarget> {
        let mut v = Vec::new();
        if self.global {
            v.extend(global.targets.iter().cloned());
        }
        v.extend(self.targets.iter().cloned());
        v
    }

    /// Applies a logging option (`option <name>`, negated with `no`).
    /// Returns false when `name` is not a logging option.
    pub(crate) fn set_option(&mut self, name: &str, on: bool) -> bool {
        match name {
            "dontlognull" => self.dontlognull = on,
            "dontlog-normal" => self.dontlog_normal = on,
            "log-separate-errors" => self.separate_errors = on,
            "logasap" => self.logasap = on,
            _ => return false,
        }
        true
    }
}

/// Parses the words of a `log` line (`words[0] == "log"`).
pub(crate) fn parse_log(words: &[String]) -> Result<LogLine, String> {
    if words.get(1).is_some_and(|w| w == "global") && words.len() == 2 {
        return Ok(LogLine::Global);
    }
    if words.len() < 3 {
        return Err("log : expects <address> and <facility>  as arguments".to_string());
    }
    let sink = parse_sink(&words[1])?;
    let mut i = 2;
    let mut len = 1024usize;
    let mut format = Format::default();
    loop {
        match words.get(i).map(String::as_str) {
            Some("len") => {
                let v = words.get(i + 1).map_or("", String::as_str);
                match v.parse::<usize>() {
                    Ok(n) if (80..=65535).contains(&n) => len = n,
                    _ => {
                        return Err(format!(
                            "log : invalid log length '{v}', must be between 80 and 65535"
                        ));
                    }
                }
                i += 2;
            }
            Some("format") => {
                let v = words.get(i + 1).map_or("", String::as_str);
                format =
                    Format::parse(v).ok_or_else(|| format!("log : unknown log format '{v}'"))?;
                i += 2;
            }
            Some("sample") => {
                return Err("log : 'sample' is not supported by sluice yet".to_string());
            }
            _ => break,
        }
    }
    let Some(fac) = words.get(i) else {
        return Err("log : expects <address> and <facility>  as arguments".to_string());
    };
    let facility = FACILITIES
        .iter()
        .position(|f| f == fac)
        .ok_or_else(|| format!("log : unknown log facility '{fac}'"))? as u8;
    let max = match words.get(i + 1) {
        Some(l) => level(l).ok_or_else(|| format!("log : unknown optional log level '{l}'"))?,
        None => 7,
    };
    let minlevel = match words.get(i + 2) {
        Some(l) => {
            level(l).ok_or_else(|| format!("log : unknown optional minimum log level '{l}'"))?
        }
        None => 0,
    };
    if let Some(w) = words.get(i + 3) {
        return Err(format!("log : unexpected argument '{w}'"));
    }
    Ok(LogLine::Target(LogTarget {
        sink,
        len,
        format,
        facility,
        level: max,
        minlevel,
    }))
}

fn level(s: &str) -> Option<u8> {
    LEVELS.iter().position(|l| *l == s).map(|n| n as u8)
}

fn parse_sink(t: &str) -> Result<Sink, String> {
    match t {
        "stdout" | "fd@1" => return Ok(Sink::Stdout),
        "stderr" | "fd@2" => return Ok(Sink::Stderr),
        _ => {}
    }
    if let Some(p) = t.strip_prefix("unix@") {
        return Ok(Sink::Unix(PathBuf::from(p)));
    }
    if t.starts_with('/') {
        return Ok(Sink::Unix(PathBuf::from(t)));
    }
    if let Some(name) = t.strip_prefix("ring@") {
        return Ok(Sink::Ring(name.to_string()));
    }
    if t.starts_with("fd@") {
        return Err(format!("log : target '{t}' is not supported by sluice yet"));
    }
    let addr = t
        .strip_prefix("udp@")
        .or_else(|| t.strip_prefix("udp4@"))
        .or_else(|| t.strip_prefix("udp6@"))
        .or_else(|| t.strip_prefix("ipv4@"))
        .or_else(|| t.strip_prefix("ipv6@"))
        .unwrap_or(t);
    // host, host:port, [v6]:port, bare v6.
    let (host, port) = if let Some(rest) = addr.strip_prefix('[') {
        let (h, p) = rest
            .split_once(']')
            .ok_or_else(|| format!("log : invalid address: '{t}'"))?;
        (h, p.strip_prefix(':'))
    } else if addr.matches(':').count() > 1 {
        (addr, None)
    } else {
        match addr.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (addr, None),
        }
    };
    let port = match port {
        None | Some("") => 514,
        Some(p) => p
            .parse::<u16>()
            .map_err(|_| format!("log : invalid port '{p}'"))?,
    };
    // No host (`log :514`, or `log ${HOST}:` with HOST unset): the
    // wildcard address, as HAProxy takes it; the kernel delivers that to
    // this machine.
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(Sink::Udp(SocketAddr::new(ip, port)));
    }
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(Sink::Udp)
        .ok_or_else(|| format!("log : invalid address: '{t}'"))
}

/// Parses `log-tag <tag>` (`words[0] == "log-tag"`).
pub(crate) fn parse_log_tag(words: &[String]) -> Result<String, String> {
    match words.get(1).filter(|t| !t.is_empty()) {
        Some(t) => Ok(t.clone()),
        None => Err("'log-tag' expects a tag for use in syslog.".to_string()),
    }
}

/// Parses `option httplog [clf]`.
pub(crate) fn parse_httplog(words: &[String]) -> Result<LogFormatKind, String> {
    match words.get(2).map(String::as_str) {
        None => Ok(LogFormatKind::Http),
        Some("clf") if words.len() == 3 => Ok(LogFormatKind::HttpClf),
        Some(_) => Err("keyword 'httplog' only supports option 'clf'.".to_string()),
    }
}

/// Parses `log-format <string>`, checking the string compiles.
/// Parses `log-format-sd <fmt>` (`words[0] == "log-format-sd"`).
pub(crate) fn parse_log_format_sd(words: &[String]) -> Result<String, String> {
    let Some(f) = words.get(1) else {
        return Err("log-format-sd expects an argument.".to_string());
    };
    if words.len() > 2 {
        return Err(
            "log-format-sd expects only one argument, don't forget to escape spaces!".to_string(),
        );
    }
    crate::config::log_format::LogFormat::compile(f)
        .map_err(|e| format!("failed to parse log-format-sd : {e}"))?;
    Ok(f.clone())
}

pub(crate) fn parse_log_format(words: &[String]) -> Result<LogFormatKind, String> {
    let Some(f) = words.get(1) else {
        return Err("log-format expects an argument.".to_string());
    };
    if words.len() > 2 {
        return Err(format!(
            "log-format expects only one argument, found '{}'. Please use quotes around the format string.",
            words[2]
        ));
    }
    crate::config::log_format::LogFormat::compile(f)
        .map_err(|e| format!("failed to parse log-format : {e}"))?;
    Ok(LogFormatKind::Custom(f.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn log_lines() {
        let LogLine::Target(t) = parse_log(&w("log 127.0.0.1 local0")).unwrap() else {
            panic!()
        };
        assert_eq!(t.sink, Sink::Udp("127.0.0.1:514".parse().unwrap()));
        assert_eq!((t.facility, t.level, t.minlevel, t.len), (16, 7, 0, 1024));
        let LogLine::Target(t) =
            parse_log(&w("log /dev/log len 200 format rfc5424 local1 notice err")).unwrap()
        else {
            panic!()
        };
        assert_eq!(t.sink, Sink::Unix("/dev/log".into()));
        assert_eq!((t.facility, t.level, t.minlevel, t.len), (17, 5, 3, 200));
        assert_eq!(t.format, Format::Rfc5424);
        assert_eq!(t.severity(6), None);
        assert_eq!(t.severity(0), Some(3));
        assert_eq!(parse_log(&w("log global")).unwrap(), LogLine::Global);
        assert_eq!(
            parse_log(&w("log 127.0.0.1:514 local9")).unwrap_err(),
            "log : unknown log facility 'local9'"
        );
        assert_eq!(
            parse_log(&w("log 127.0.0.1:514 local0 infox")).unwrap_err(),
            "log : unknown optional log level 'infox'"
        );
        assert_eq!(
            parse_log(&w("log 127.0.0.1:514 format foo local0")).unwrap_err(),
            "log : unknown log format 'foo'"
        );
        assert_eq!(
            parse_log(&w("log 127.0.0.1:514 len 10 local0")).unwrap_err(),
            "log : invalid log length '10', must be between 80 and 65535"
        );
        assert_eq!(
            parse_log(&w("log")).unwrap_err(),
            "log : expects <address> and <facility>  as arguments"
        );
        let LogLine::Target(t) = parse_log(&w("log stdout format raw daemon")).unwrap() else {
            panic!()
        };
        assert_eq!((t.sink, t.format), (Sink::Stdout, Format::Raw));
    }
}
