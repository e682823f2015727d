//! Listener and server addresses: `host:port` forms HAProxy accepts, with
//! host names going through the injected resolver.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::config::model::UnixName;
use crate::config::units::parse_uint;

/// The resolver callback given to `parse_texts`.
pub type Resolver<'a> = &'a dyn Fn(&str, u16) -> Result<Vec<SocketAddr>, String>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Any,
    V4,
    V6,
}

/// An address split into its parts, before resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPorts<'a> {
    pub(crate) family: Family,
    pub(crate) host: &'a str,
    /// First and last port (equal unless a `a-b` range was given).
    pub(crate) ports: (u16, u16),
}

/// Environment variables in an address, as HAProxy expands every address
/// word once more after the line was split (so `bind ${ADDR}:80` works
/// unquoted, where the lexer leaves `$` alone): `$NAME` or `${NAME}`, an
/// unset variable giving nothing; no `-default` form. A `$` that starts no
/// name is dropped, as HAProxy does.
pub(crate) fn env_expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    if !text.contains('$') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (braced, name_start) = match after.strip_prefix('{') {
            Some(r) => (true, r),
            None => (false, after),
        };
        let len = name_start
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(name_start.len());
        let (name, mut tail) = name_start.split_at(len);
        if braced && let Some(t) = tail.strip_prefix('}') {
            tail = t;
        }
        if !name.is_empty()
            && let Some(v) = env(name)
        {
            out.push_str(&v);
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// HAProxy's error for an address word that expanded to nothing.
pub(crate) fn empty_address(word: &str) -> String {
    format!("'{word}' resolves to an empty address (environment variable missing?)")
}

/// Address prefixes HAProxy knows but sluice cannot listen on / connect to.
const UNSUPPORTED_PREFIXES: &[&str] = &[
    "sockpair@",
    "udp@",
    "udp4@",
    "udp6@",
    "quic4@",
    "quic6@",
    "tcp@",
    "tcp4@",
    "tcp6@",
    "uxst@",
    "uxdg@",
    "rhttp@",
];

/// A server address: the host and its port, 0 when none is given (the
/// connection then goes to the port the client connected to, as HAProxy
/// does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerAddr {
    pub(crate) family: Family,
    pub(crate) host: String,
    pub(crate) port: u16,
}

/// Split a server's `[family@]host[:port]`; no port, an empty one or `0`
/// all mean the client's destination port.
pub(crate) fn split_server(text: &str) -> Result<ServerAddr, String> {
    let hp = split_inner(text, false, true)?;
    Ok(ServerAddr {
        family: hp.family,
        host: hp.host.to_string(),
        port: hp.ports.0,
    })
}

/// Split a `source` address, `[family@]host[:port[-port]]`: no port, an
/// empty one or `0` mean any port.
pub(crate) fn split_source(text: &str) -> Result<HostPorts<'_>, String> {
    split_inner(text, true, true)
}

/// Split `[family@]host:port[-port]`. `allow_range` is false for servers.
pub(crate) fn split(text: &str, allow_range: bool) -> Result<HostPorts<'_>, String> {
    split_inner(text, allow_range, false)
}

fn split_inner(
    text: &str,
    allow_range: bool,
    port_optional: bool,
) -> Result<HostPorts<'_>, String> {
    if text.starts_with('/') || text.starts_with("unix@") || text.starts_with("abns@") {
        return Err(format!(
            "UNIX socket addresses ('{text}') are not supported by sluice yet"
        ));
    }
    if let Some(p) = UNSUPPORTED_PREFIXES.iter().find(|p| text.starts_with(*p)) {
        return Err(format!(
            "'{p}' addresses ('{text}') are not supported by sluice yet"
        ));
    }
    let (family, rest) = if let Some(r) = text.strip_prefix("ipv4@") {
        (Family::V4, r)
    } else if let Some(r) = text.strip_prefix("ipv6@") {
        (Family::V6, r)
    } else {
        (Family::Any, text)
    };
    let (host, port) = if let Some(r) = rest.strip_prefix('[') {
        let Some((h, after)) = r.split_once(']') else {
            return Err(format!("invalid address: '{rest}' in '{text}'"));
        };
        match after.strip_prefix(':') {
            Some(p) => (h, p),
            None if after.is_empty() && port_optional => (h, ""),
            None if after.is_empty() => {
                return Err(format!("missing port specification in '{text}'"));
            }
            None => return Err(format!("invalid address: '{rest}' in '{text}'")),
        }
    } else {
        // The port is what follows the last colon (`::1:80` is [::1]:80).
        match rest.rsplit_once(':') {
            Some((h, p)) => (h, p),
            None if port_optional => (rest, ""),
            None => return Err(format!("missing port specification in '{text}'")),
        }
    };
    if port_optional && (port.starts_with('+') || port.starts_with('-')) {
        return Err(format!(
            "port offsets ('{port}' in '{text}') are not supported by sluice yet"
        ));
    }
    if port_optional && (port.is_empty() || port == "0") {
        return Ok(HostPorts {
            family,
            host,
            ports: (0, 0),
        });
    }
    if port.is_empty() {
        return Err(format!("missing port specification in '{text}'"));
    }
    let one = |p: &str| -> Result<u16, String> {
        match parse_uint(p) {
            Some(n) if (1..=65535).contains(&n) => Ok(n as u16),
            _ => Err(format!("invalid port '{p}'")),
        }
    };
    let ports = match port.split_once('-') {
        Some((a, b)) if allow_range => {
            let (a, b) = (one(a)?, one(b)?);
            if a > b {
                return Err(format!("invalid port range '{port}'"));
            }
            (a, b)
        }
        _ => {
            let p = one(port)?;
            (p, p)
        }
    };
    Ok(HostPorts {
        family,
        host,
        ports,
    })
}

/// The UNIX socket an address names, as HAProxy reads it: `/path` or
/// `unix@path` (a file), `abns@name` (a Linux abstract socket). None for
/// any other address.
pub(crate) fn unix_name(text: &str) -> Option<Result<UnixName, String>> {
    // `sun_path` holds 108 bytes, a file's name ending with a NUL.
    const MAX_PATH: usize = 107;
    let path = if text.starts_with('/') {
        text
    } else if let Some(p) = text.strip_prefix("unix@") {
        p
    } else if let Some(name) = text.strip_prefix("abns@") {
        return Some(if name.len() > crate::sys::abns::MAX_NAME {
            Err(format!(
                "abstract socket name too long in '{text}' (at most {} bytes)",
                crate::sys::abns::MAX_NAME
            ))
        } else {
            Ok(UnixName::Abns(name.to_string()))
        });
    } else {
        return None;
    };
    Some(if path.is_empty() {
        Err(format!("missing path in '{text}'"))
    } else if path.len() > MAX_PATH {
        Err(format!(
            "socket path too long in '{text}' (at most {MAX_PATH} bytes)"
        ))
    } else {
        Ok(UnixName::Path(std::path::PathBuf::from(path)))
    })
}

/// The IP of `host` without DNS, if it is a literal or a wildcard.
fn literal_ip(host: &str, family: Family) -> Option<IpAddr> {
    if host.is_empty() || host == "*" {
        return Some(match family {
            Family::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            _ => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        });
    }
    let ip: IpAddr = host.parse().ok()?;
    match (family, ip) {
        (Family::V4, IpAddr::V6(_)) | (Family::V6, IpAddr::V4(_)) => None,
        _ => Some(ip),
    }
}

/// Resolve the host to one IP as HAProxy does (first answer of the wanted
/// family; IPv4 preferred when no family is forced, matching what glibc
/// gives HAProxy for `localhost`).
pub(crate) fn resolve_host(
    host: &str,
    family: Family,
    port: u16,
    resolve: Resolver<'_>,
) -> Result<IpAddr, String> {
    if let Some(ip) = literal_ip(host, family) {
        return Ok(ip);
    }
    if host.parse::<IpAddr>().is_ok() {
        return Err("address family mismatch".to_string());
    }
    let addrs = resolve(host, port)?;
    let pick = |want_v4: bool| addrs.iter().find(|a| a.is_ipv4() == want_v4);
    let found = match family {
        Family::V4 => pick(true),
        Family::V6 => pick(false),
        Family::Any => pick(true).or_else(|| addrs.first()),
    };
    found
        .map(|a| a.ip())
        .ok_or_else(|| "no address of the wanted family".to_string())
}

/// One `bind` address item (no commas) to socket addresses.
pub(crate) fn bind_addrs(
    text: &str,
    raw: &str,
    resolve: Resolver<'_>,
) -> Result<Vec<SocketAddr>, String> {
    let hp = split(text, true)?;
    let ip = resolve_host(hp.host, hp.family, hp.ports.0, resolve)
        .map_err(|_| format!("invalid address: '{}' in '{raw}'", hp.host))?;
    Ok((hp.ports.0..=hp.ports.1)
        .map(|p| SocketAddr::new(ip, p))
        .collect())
}

/// The system resolver (`getaddrinfo` through std).
pub(crate) fn system_resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    use std::net::ToSocketAddrs;
    (host, port)
        .to_socket_addrs()
        .map(|it| it.collect())
        .map_err(|e| e.to_string())
}

/// Stands for an `fd@<name>` that the check mode (`-c`) cannot resolve: the
/// names are systemd's for the service's main process only, not for the
/// `ExecStartPre=`/`ExecReload=` check. Never used to start.
pub(crate) const UNRESOLVED_FD: i32 = -1;

static CHECK_ONLY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `-c`: configurations are only checked, never started; an `fd@<name>`
/// this process cannot resolve is accepted (see [`fd_ref_checked`]).
pub(crate) fn set_check_only() {
    CHECK_ONLY.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Is this process only checking configurations (`-c`)?
pub(crate) fn check_only() -> bool {
    CHECK_ONLY.load(std::sync::atomic::Ordering::Relaxed)
}

/// [`fd_ref`], except that under `-c` a name it cannot resolve gives
/// `Ok(Err(why))`: [`UNRESOLVED_FD`], to report as a notice. Like HAProxy's
/// `-c`, the check opens no socket; the name is resolved at start-up.
pub(crate) fn fd_ref_checked(r: &str) -> Result<Result<i32, String>, String> {
    match fd_ref(r) {
        Ok(fd) => Ok(Ok(fd)),
        Err(why)
            if CHECK_ONLY.load(std::sync::atomic::Ordering::Relaxed)
                && r.parse::<i32>().is_err() =>
        {
            Ok(Err(why))
        }
        Err(why) => Err(why),
    }
}

/// The descriptor an `fd@<ref>` address names: a number, or the name of a
/// socket systemd passed (`FileDescriptorName=` in the `.socket` unit, seen
/// in `LISTEN_FDNAMES`; the passed descriptors start at 3).
pub(crate) fn fd_ref(r: &str) -> Result<i32, String> {
    if let Ok(fd) = r.parse::<i32>() {
        return if fd >= 0 {
            Ok(fd)
        } else {
            Err(format!("invalid file descriptor '{r}'"))
        };
    }
    let names = systemd_fd_names();
    match names.iter().position(|n| n == r) {
        Some(i) => Ok(3 + i as i32),
        None if names.is_empty() => Err(format!(
            "invalid file descriptor '{r}' (not a number, and systemd passed no named sockets: LISTEN_FDNAMES is unset or not for this process)"
        )),
        None => Err(format!(
            "no socket named '{r}' among those systemd passed ({})",
            names.join(", ")
        )),
    }
}

/// Names of the sockets passed by systemd socket activation, in descriptor
/// order. Read once, when the first configuration is parsed (before sluice
/// goes to the background), so reloads resolve the same names. As with
/// sd_listen_fds(3), they count only if `LISTEN_PID` is this process.
fn systemd_fd_names() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let ours = std::env::var("LISTEN_PID")
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok())
            == Some(std::process::id());
        let count = std::env::var("LISTEN_FDS")
            .ok()
            .and_then(|n| n.trim().parse::<usize>().ok())
            .unwrap_or(0);
        match std::env::var("LISTEN_FDNAMES") {
            Ok(names) if ours => names.split(':').take(count).map(str::to_string).collect(),
            _ => Vec::new(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
        match host {
            "localhost" => Ok(vec![
                SocketAddr::new("::1".parse().unwrap(), port),
                SocketAddr::new("127.0.0.1".parse().unwrap(), port),
            ]),
            _ => Err("not found".into()),
        }
    }

    fn b(t: &str) -> Result<Vec<SocketAddr>, String> {
        bind_addrs(t, t, &fake)
    }

    fn one(t: &str) -> String {
        b(t).unwrap()[0].to_string()
    }

    #[test]
    fn env_expand_like_haproxy() {
        let env = |n: &str| match n {
            "A" => Some("127.0.0.1".to_string()),
            "P" => Some("80".to_string()),
            _ => None,
        };
        assert_eq!(env_expand("$A:$P", &env), "127.0.0.1:80");
        assert_eq!(env_expand("${A}:${P}", &env), "127.0.0.1:80");
        assert_eq!(env_expand("$UNSET:$UNSET", &env), ":");
        assert_eq!(env_expand("${UNSET}", &env), "");
        assert_eq!(env_expand("x$", &env), "x");
        assert_eq!(env_expand("${A-x}", &env), "127.0.0.1-x}");
        assert_eq!(env_expand("plain:1", &env), "plain:1");
    }

    #[test]
    fn forms() {
        assert_eq!(one(":80"), "0.0.0.0:80");
        assert_eq!(one("*:80"), "0.0.0.0:80");
        assert_eq!(one("0.0.0.0:80"), "0.0.0.0:80");
        assert_eq!(one("127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(one("::1:17283"), "[::1]:17283");
        assert_eq!(one("[::1]:17284"), "[::1]:17284");
        assert_eq!(one(":::80"), "[::]:80");
        assert_eq!(one("ipv6@::1:17285"), "[::1]:17285");
        assert_eq!(one("ipv6@:80"), "[::]:80");
        assert_eq!(one("ipv4@127.0.0.1:1"), "127.0.0.1:1");
        assert_eq!(one("localhost:8080"), "127.0.0.1:8080");
        assert_eq!(one("ipv6@localhost:8080"), "[::1]:8080");
        assert_eq!(b("127.0.0.1:17286-17287").unwrap().len(), 2);
        assert_eq!(
            b("garbage:17180").unwrap_err(),
            "invalid address: 'garbage' in 'garbage:17180'"
        );
        assert!(b("127.0.0.1").unwrap_err().contains("missing port"));
        assert!(b("127.0.0.1:0").unwrap_err().contains("invalid port"));
        assert!(b("127.0.0.1:65536").is_err());
        assert!(b("127.0.0.1:x").is_err());
        assert!(b("127.0.0.1:9-8").is_err());
        assert!(b("/run/x.sock").unwrap_err().contains("not supported"));
        assert!(b("unix@/run/x.sock").unwrap_err().contains("not supported"));
        assert!(b("ipv4@::1:80").is_err());
        let unix = |t: &str| unix_name(t).map(|r| r.map(|n| n.to_string()));
        assert_eq!(unix("/run/x.sock"), Some(Ok("unix@/run/x.sock".into())));
        assert_eq!(unix("unix@x.sock"), Some(Ok("unix@x.sock".into())));
        assert_eq!(unix("abns@name"), Some(Ok("abns@name".into())));
        assert_eq!(unix("127.0.0.1:80"), None);
        assert!(unix(&format!("/{}", "x".repeat(107))).is_some_and(|r| r.is_err()));
        assert!(unix(&format!("abns@{}", "x".repeat(108))).is_some_and(|r| r.is_err()));
        assert!(b("[::1").is_err());
        assert!(split("1.2.3.4:80-81", false).is_err());
        let srv = |t: &str| split_server(t).map(|a| (a.host, a.port));
        assert_eq!(srv("0.0.0.0"), Ok(("0.0.0.0".into(), 0)));
        assert_eq!(srv(":"), Ok(("".into(), 0)));
        assert_eq!(srv(":0"), Ok(("".into(), 0)));
        assert_eq!(srv("[::1]"), Ok(("::1".into(), 0)));
        assert_eq!(srv("host.example:8080"), Ok(("host.example".into(), 8080)));
        assert!(srv("1.2.3.4:x").is_err());
        assert!(
            srv("1.2.3.4:+1000")
                .unwrap_err()
                .contains("not supported by sluice yet")
        );
    }
}
