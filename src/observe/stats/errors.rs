//! `show errors [<iid>|<proxy>] [request|response]` (reference §1.5): the
//! captures of `http::capture` laid out as HAProxy 2.6 prints them.

use std::fmt::Write as _;
use std::net::SocketAddr;

use crate::observe::log::time::{Date, date_clf_ms};
use crate::snapshot::Snapshot;
use crate::state::capture::{self, Capture};
use crate::wire::error_spot::state_name;

/// HAProxy's H1 mux starts reading a fresh buffer `sizeof(struct htx)`
/// bytes in, so `wraps at` is the buffer size minus this.
const HTX_HEADER: usize = 48;

/// Which captures to show.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ErrorsFilter {
    /// Only captures on this proxy id, or whose other side has it.
    pub(crate) iid: Option<u32>,
    pub(crate) requests: bool,
    pub(crate) responses: bool,
}

/// Parses `[<iid>|<proxy>] [request|response]` as HAProxy does: a name is
/// looked up, anything else read with `atoi`; 0 is `No such proxy.`.
pub(crate) fn parse_filter(snap: &Snapshot, args: &[String]) -> Result<ErrorsFilter, &'static str> {
    let iid = match args.first() {
        None => None,
        Some(a) => {
            let id = match snap.proxies.iter().find(|p| p.name == *a) {
                Some(p) => i64::from(p.iid),
                None => crate::config::units::atoi(a),
            };
            if id == 0 {
                return Err("No such proxy.\n");
            }
            // A negative id matches nothing, as in HAProxy.
            Some(u32::try_from(id).unwrap_or(u32::MAX))
        }
    };
    let kind = args.get(1).map(String::as_str);
    Ok(ErrorsFilter {
        iid,
        requests: kind != Some("response"),
        responses: kind != Some("request"),
    })
}

/// The whole output (without the final empty line the CLI adds).
pub(crate) fn render(snap: &Snapshot, filter: ErrorsFilter) -> String {
    let mut out = String::from("Total events captured on [");
    date_clf_ms(&Date::now(), &mut out);
    let _ = writeln!(out, "] : {}", capture::events());
    for p in &snap.proxies {
        let req = p.frontend.as_ref().filter(|_| filter.requests);
        if let Some(c) = req.and_then(|f| f.state.errors.last()) {
            entry(&mut out, &p.name, p.iid, false, &c, filter.iid);
        }
        let resp = p.backend.as_ref().filter(|_| filter.responses);
        if let Some(c) = resp.and_then(|b| b.state.errors.last()) {
            entry(&mut out, &p.name, p.iid, true, &c, filter.iid);
        }
    }
    out
}

fn entry(out: &mut String, name: &str, iid: u32, response: bool, c: &Capture, only: Option<u32>) {
    if let Some(id) = only
        && id != iid
        && c.other.as_ref().is_none_or(|(_, o)| *o != id)
    {
        return;
    }
    out.push_str(" \n[");
    date_clf_ms(&Date::from(c.when), out);
    let (other_name, other_id) = match &c.other {
        Some((n, id)) => (n.as_str(), i64::from(*id)),
        None => ("<NONE>", -1),
    };
    if response {
        let _ = write!(
            out,
            "] backend {name} (#{iid}): invalid response\n  frontend {other_name} (#{other_id})"
        );
    } else {
        let _ = write!(
            out,
            "] frontend {name} (#{iid}): invalid request\n  backend {other_name} (#{other_id})"
        );
    }
    let (srv, sid) = match &c.server {
        Some((n, id)) => (n.as_str(), i64::from(*id)),
        None => ("<NONE>", -1),
    };
    let (ip, port) = match c.src {
        Some(SocketAddr::V4(a)) => (a.ip().to_string(), a.port()),
        Some(SocketAddr::V6(a)) => (a.ip().to_string(), a.port()),
        None => ("0.0.0.0".to_string(), 0),
    };
    let len = c.bytes.len();
    let s = &c.spot;
    let (conn_flags, stream_flags) = capture::h1_flags(response, s.in_body);
    let _ = write!(
        out,
        ", server {srv} (#{sid}), event #{ev}, src {ip}:{port}\n  \
         buffer starts at 0 (including 0 out), {free} free,\n  \
         len {len}, wraps at {wrap}, error at position {pos}\n  \
         H1 connection flags 0x{conn_flags:08x}, H1 stream flags 0x{stream_flags:08x}\n  \
         H1 msg state {state}({st}), H1 msg flags 0x{flags:08x}\n  \
         H1 chunk len {clen} bytes, H1 body len {blen} bytes :\n  \n",
        ev = c.event,
        free = c.bufsize.saturating_sub(len),
        wrap = c.bufsize.saturating_sub(HTX_HEADER),
        pos = s.pos,
        state = state_name(s.state),
        st = s.state,
        flags = s.flags,
        clen = s.chunk_len,
        blen = s.body_len,
    );
    dump(out, &c.bytes);
}

/// The bytes, HAProxy's `dump_text_line` way: each line prefixed by its
/// offset, a line ends after `\n` or when 80 columns are used (the rest
/// continues on a line marked `+`), non-printables escaped.
pub(crate) fn dump(out: &mut String, buf: &[u8]) {
    let mut ptr = 0;
    let mut bol = 0;
    while ptr < buf.len() {
        let line_start = out.len();
        let end = line_start + 80;
        let _ = write!(out, "  {ptr:05}{} ", if ptr == bol { ' ' } else { '+' });
        while ptr < buf.len() {
            let c = buf[ptr];
            let room = end - out.len();
            if c.is_ascii_graphic() || c == b' ' {
                if c == b'\\' {
                    if room < 3 {
                        break;
                    }
                    out.push_str("\\\\");
                } else {
                    if room < 2 {
                        break;
                    }
                    out.push(c as char);
                }
            } else if let Some(e) = match c {
                b'\t' => Some('t'),
                b'\n' => Some('n'),
                b'\r' => Some('r'),
                0x1b => Some('e'),
                _ => None,
            } {
                if room < 3 {
                    break;
                }
                out.push('\\');
                out.push(e);
            } else {
                if room < 5 {
                    break;
                }
                let _ = write!(out, "\\x{c:02X}");
            }
            ptr += 1;
            if c == b'\n' {
                bol = ptr;
                break;
            }
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dumped(b: &[u8]) -> String {
        let mut s = String::new();
        dump(&mut s, b);
        s
    }

    #[test]
    fn dumps_as_haproxy() {
        assert_eq!(
            dumped(b"GARBAGE\x01REQ\r\n\r\n"),
            "  00000  GARBAGE\\x01REQ\\r\\n\n  00013  \\r\\n\n"
        );
        assert_eq!(dumped(b"a\\b\t\x1b\xff"), "  00000  a\\\\b\\t\\e\\xFF\n");
        // 70 printable bytes fit a line; the rest continues marked `+`.
        let long = [b'x'; 75];
        let s = dumped(&long);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], format!("  00000  {}", "x".repeat(70)));
        assert_eq!(lines[1], "  00070+ xxxxx");
    }
}
