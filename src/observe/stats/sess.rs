//! `show sess` (reference §1.6): one line per request in progress, then
//! the CLI's own stream, with HAProxy's `<ptr>: proto= src= fe= be= srv=
//! ts= epoch= age= calls=` prefix. The fields after it describe HAProxy's
//! channel and task internals, which sluice does not have: they are
//! printed with neutral values (flags 0, empty timers), except the client
//! socket's `fd`.
//!
//! `show sess all` and `show sess <ptr>` print, per stream, the first
//! lines of HAProxy's detailed dump (date, id, source, frontend, backend,
//! server) and an `age=` line; HAProxy's format for them is documented as
//! unstable.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::observe::log::time::{Date, date_clf_ms};
use crate::snapshot::{BackendRt, ServerRt, Snapshot};
use crate::state::sessions::{self, Stream, human_time};

/// Who is on the CLI connection running the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CliOrigin {
    /// A UNIX stats socket.
    Unix,
    /// `stats socket ipv4@...`: the client's address.
    Tcp(SocketAddr),
}

/// The stream's proxies and server, as names.
struct Names<'a> {
    fe: Option<&'a str>,
    be: Option<&'a BackendRt>,
    srv: Option<&'a ServerRt>,
}

fn names<'a>(snap: &'a Snapshot, s: &Stream) -> Names<'a> {
    let fe = snap
        .frontends()
        .find(|f| f.iid == s.fe_iid)
        .map(|f| f.name.as_str());
    let be = snap
        .backends()
        .find(|b| b.iid == s.be_iid)
        .map(|b| b.as_ref());
    let srv = be.and_then(|b| {
        b.servers
            .iter()
            .find(|sv| s.srv != 0 && Arc::as_ptr(&sv.state) as usize == s.srv)
    });
    Names { fe, be, srv }
}

fn proto(addr: &SocketAddr) -> &'static str {
    if addr.is_ipv4() { "tcpv4" } else { "tcpv6" }
}

/// A client's protocol as HAProxy names it.
fn peer_proto(peer: &crate::sys::peer::Peer) -> &'static str {
    match peer.inet() {
        Some(a) => proto(&a),
        None => "unix_stream",
    }
}

/// The internals HAProxy prints after `calls=`, neutral.
fn tail(out: &mut String, fd: i32) {
    let _ = writeln!(
        out,
        " rate=0 cpu=0 lat=0 rq[f=000000h,i=0,an=00h,rx=,wx=,ax=] rp[f=000000h,i=0,an=00h,rx=,wx=,ax=] scf=[8,0h,fd={fd}] scb=[8,0h,fd=-1] exp= rc=0 c_exp="
    );
}

/// `args` are the words after `show sess`; `me` is the CLI session's own
/// address (its `<ptr>`).
pub(crate) fn render(snap: &Snapshot, args: &[String], origin: CliOrigin, me: usize) -> String {
    let streams = sessions::in_progress();
    let mut out = String::new();
    match args.first().map(String::as_str) {
        None => {
            for s in &streams {
                let n = names(snap, s);
                let _ = write!(
                    out,
                    "{:#x}: proto={} src={} fe={} be={} srv={} ts=00 epoch=0 age={} calls={}",
                    s.ptr,
                    peer_proto(&s.peer),
                    s.peer,
                    n.fe.unwrap_or("?"),
                    n.be.map_or("<NONE>", |b| b.name.as_str()),
                    n.srv.map_or("<none>", |v| v.name.as_str()),
                    human_time(s.age_secs),
                    s.calls,
                );
                tail(&mut out, s.fd);
            }
            let src = match origin {
                CliOrigin::Unix => "proto=unix_stream src=unix:1".to_string(),
                CliOrigin::Tcp(a) => format!("proto={} src={a}", proto(&a)),
            };
            let _ = write!(
                out,
                "{me:#x}: {src} fe=GLOBAL be=<NONE> srv=<none> ts=00 epoch=0 age=0s calls=1"
            );
            tail(&mut out, -1);
        }
        Some("all") => {
            for s in &streams {
                detail(&mut out, snap, s);
            }
        }
        Some(ptr) => {
            let want = parse_ptr(ptr);
            match streams.iter().find(|s| Some(s.ptr) == want) {
                Some(s) => detail(&mut out, snap, s),
                None => out.push_str("Session not found.\n"),
            }
        }
    }
    out
}

/// C `strtoul(s, NULL, 0)`: `0x` hex, leading `0` octal, else decimal.
fn parse_ptr(s: &str) -> Option<usize> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        usize::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        usize::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

fn detail(out: &mut String, snap: &Snapshot, s: &Stream) {
    let n = names(snap, s);
    let mut date = String::new();
    date_clf_ms(&Date::from(s.started), &mut date);
    let _ = writeln!(
        out,
        "{:#x}: [{date}] id={} proto={} source={}",
        s.ptr,
        s.calls,
        peer_proto(&s.peer),
        s.peer
    );
    let _ = writeln!(
        out,
        "  frontend={} (id={} mode=http)",
        n.fe.unwrap_or("?"),
        s.fe_iid
    );
    match n.be {
        Some(b) => {
            let _ = writeln!(out, "  backend={} (id={} mode=http)", b.name, b.iid);
        }
        None => out.push_str("  backend=<NONE> (id=-1 mode=-)\n"),
    }
    match n.srv {
        Some(v) => {
            let _ = writeln!(
                out,
                "  server={} (id={}) addr={}",
                v.name,
                v.sid,
                v.state.addr()
            );
        }
        None => out.push_str("  server=<none> (id=0)\n"),
    }
    let _ = writeln!(
        out,
        "  age={} calls={} fd={}",
        human_time(s.age_secs),
        s.calls,
        s.fd
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_as_strtoul() {
        assert_eq!(parse_ptr("0x1f"), Some(31));
        assert_eq!(parse_ptr("017"), Some(15));
        assert_eq!(parse_ptr("42"), Some(42));
        assert_eq!(parse_ptr("zz"), None);
    }

    #[test]
    fn the_cli_line_alone_without_requests() {
        let rt = crate::observe::stats::fixture::runtime();
        let out = render(&rt.snapshot(), &[], CliOrigin::Unix, 0x1234);
        let mine = out
            .lines()
            .find(|l| l.starts_with("0x1234: "))
            .expect("CLI line");
        assert!(
            mine.starts_with("0x1234: proto=unix_stream src=unix:1 fe=GLOBAL be=<NONE> srv=<none> ts=00 epoch=0 age=0s calls=1 rate=0 "),
            "{mine}"
        );
        assert!(mine.ends_with(" exp= rc=0 c_exp="));
        let out = render(&rt.snapshot(), &["0x1".into()], CliOrigin::Unix, 1);
        assert_eq!(out, "Session not found.\n");
    }
}
