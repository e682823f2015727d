//! The socket options of `bind` lines (`backlog`, `maxconn`, `defer-accept`, `tfo`, `interface`, `mss`, `tcp-ut`, `transparent`,
//! `namespace`), read into [`BindSock`] with HAProxy 2.6's messages; the
//! listener sets them on its socket (`frontend::sockopt`).

use crate::config::model::BindSock;
use crate::config::units::parse_time;

/// Why `force-sslv3`, `force-tlsv10` and `force-tlsv11` are refused: the
/// only versions they allow are ones rustls does not have.
pub(super) const OLD_TLS: &str = "TLS versions below TLSv1.2 are not supported by sluice (rustls speaks TLSv1.2 and TLSv1.3 only), a listener forced to one could accept no client.";

const BIND_SOCKOPTS: &[&str] = &[
    "backlog",
    "maxconn",
    "defer-accept",
    "tfo",
    "interface",
    "mss",
    "tcp-ut",
    "transparent",
    "namespace",
];

pub(super) fn is_bind_sockopt(w: &str) -> bool {
    BIND_SOCKOPTS.contains(&w)
}

/// HAProxy reads these numbers with atol(): leading digits, else 0.
fn atol(a: &str) -> i64 {
    let (neg, digits) = match a.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, a.strip_prefix('+').unwrap_or(a)),
    };
    let d: String = digits.chars().take_while(char::is_ascii_digit).collect();
    let n = d.parse::<i64>().unwrap_or(0);
    if neg { -n } else { n }
}

/// One socket option `w` (its argument `arg`) into `sock`: the words it
/// takes, or HAProxy's message (after `'bind <addr>' in section ...`).
pub(super) fn bind_sockopt(
    w: &str,
    arg: Option<&str>,
    sock: &mut BindSock,
) -> Result<usize, String> {
    let arg = arg.filter(|a| !a.is_empty());
    match w {
        "backlog" | "maxconn" => {
            let a = arg.ok_or_else(|| format!("'{w}' : missing value"))?;
            let n = atol(a).clamp(0, i32::MAX as i64);
            if w == "backlog" {
                sock.backlog = (n > 0).then_some(n as i32);
            } else {
                sock.maxconn = (n > 0).then_some(n as u32);
            }
            Ok(2)
        }
        "defer-accept" => {
            sock.defer_accept = true;
            Ok(1)
        }
        "tfo" => {
            sock.tfo = true;
            Ok(1)
        }
        "transparent" => {
            sock.transparent = true;
            Ok(1)
        }
        "interface" => {
            let a = arg.ok_or("'interface' : missing interface name")?;
            sock.interface = Some(a.to_string());
            Ok(2)
        }
        "mss" => {
            let a = arg.ok_or("'mss' : missing MSS value")?;
            let n = atol(a);
            if !(1..=65535).contains(&n.unsigned_abs()) {
                return Err(
                    "'mss' : expects an MSS with and absolute value between 1 and 65535".into(),
                );
            }
            sock.mss = Some(n as i32);
            Ok(2)
        }
        "tcp-ut" => {
            let a = arg.ok_or("'tcp-ut' : missing TCP User Timeout value")?;
            let ms = parse_time(a)
                .ok()
                .and_then(|d| u32::try_from(d.as_millis()).ok())
                .ok_or("'tcp-ut' : expects a positive delay in milliseconds")?;
            sock.tcp_ut = Some(ms);
            Ok(2)
        }
        // "namespace"
        _ => Err(format!(
            "'namespace' : network namespaces are not supported by sluice (it binds in its own namespace), start it inside '{}' instead (ip netns exec)",
            arg.unwrap_or("")
        )),
    }
}
