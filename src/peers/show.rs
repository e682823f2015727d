//! `show peers [dict|-] [<section>]`, as HAProxy 2.6 prints it: each
//! section, then each of its peers (the local one too) with its last
//! handshake, timers, counters and, per shared table, the session's
//! cursors and the table's update numbers. The addresses HAProxy prints
//! (`0x...`) name the same objects across calls here too, but are this
//! process's.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use super::codec::status;
use super::section::{Section, lock};
use crate::state::sessions::human_time;

/// HAProxy's section flags this process has a use for.
/// The resynchronisation from an old process is over at once (a reload
/// keeps the tables in this one): HAProxy's "local" done, its wait for
/// an old process over.
const RESYNC_LOCAL: u32 = 0x1 | 0x10;
const RESYNC_REMOTE: u32 = 0x2;
const RESYNC_ASSIGN: u32 = 0x4;
/// A peer's flags.
const PEER_ALIVE: u32 = 0x2000_0000;
const PEER_LEARN_NOTUP2DATE: u32 = 0x200;

/// The reply, or HAProxy's error.
pub(crate) fn show(args: &[String]) -> Result<String, &'static str> {
    let mut args = args;
    let dict = args.first().is_some_and(|a| a == "dict");
    if dict || args.first().is_some_and(|a| a == "-") {
        args = &args[1..];
    }
    let sections = super::sections();
    let target = match args.first().filter(|a| !a.is_empty()) {
        Some(name) => match sections.iter().find(|s| s.name == *name) {
            Some(s) => Some(s.clone()),
            None => return Err("No such peers\n"),
        },
        None => None,
    };
    let mut out = String::new();
    // HAProxy keeps sections, and peers in a section, last declared first.
    let list: Vec<Arc<Section>> = match target {
        Some(s) => vec![s],
        None => sections.into_iter().rev().collect(),
    };
    for (i, s) in list.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        head(&mut out, s);
        for name in s.names.iter().rev() {
            peer(&mut out, s, name, dict);
        }
    }
    Ok(out)
}

/// `<remaining>` of a timer as HAProxy prints it.
fn timer(at: Option<Instant>) -> String {
    match at {
        None => "<NEVER>".to_string(),
        Some(at) => match at.checked_duration_since(Instant::now()) {
            Some(d) if !d.is_zero() => human_time(d.as_secs()),
            _ => "<PAST>".to_string(),
        },
    }
}

fn head(out: &mut String, s: &Section) {
    let date = crate::observe::log::time::Date::from(s.last_change);
    let mut when = String::new();
    crate::observe::log::time::date_clf_ms(&date, &mut when);
    let when = when.split('.').next().unwrap_or_default();
    let r = lock(&s.resync);
    let mut flags = RESYNC_LOCAL | r.flags;
    if r.finished {
        flags |= RESYNC_REMOTE;
    }
    if r.assigned {
        flags |= RESYNC_ASSIGN;
    }
    let _ = writeln!(
        out,
        "{:p}: [{when}] id={} disabled=0 flags={flags:#x} resync_timeout={} task_calls={}",
        s as *const Section,
        s.name,
        timer(Some(r.deadline)),
        s.calls(),
    );
}

fn peer(out: &mut String, s: &Section, name: &str, dict: bool) {
    let local = name == s.local;
    let p = s.peers.iter().find(|p| p.name == name);
    let addr = match p {
        Some(p) => p.addr,
        None => s.local_addr,
    };
    let addr = addr.map_or_else(
        || "0.0.0.0:0".to_string(),
        |a| format!("{}:{}", a.ip(), a.port()),
    );
    let ptr: *const () = match p {
        Some(p) => Arc::as_ptr(p).cast(),
        None => (s as *const Section as usize + 0x40) as *const (),
    };
    let st = p.map(|p| lock(&p.state));
    let active = st.as_ref().is_some_and(|st| st.session.is_some());
    let _ = write!(
        out,
        "  {ptr:p}: id={name}({},{}) addr={addr} last_status={}",
        if local { "local" } else { "remote" },
        if active { "active" } else { "inactive" },
        status::name(st.as_ref().map_or(0, |st| st.status)),
    );
    let last_hdshk = st.as_ref().and_then(|st| st.last_hdshk).map_or_else(
        || "<NEVER>".to_string(),
        |t| human_time(t.elapsed().as_secs()),
    );
    let _ = writeln!(out, " last_hdshk={last_hdshk}");
    let (reconnect, heartbeat) = st
        .as_ref()
        .map_or((None, None), |st| (st.reconnect, st.heartbeat));
    let n = |f: fn(&super::section::PeerState) -> u32| st.as_ref().map_or(0, |st| f(st));
    let _ = writeln!(
        out,
        "        reconnect={} heartbeat={} confirm={} tx_hbt={} rx_hbt={} no_hbt={} new_conn={} proto_err={} coll={}",
        timer(reconnect),
        timer(heartbeat),
        n(|s| s.confirm),
        n(|s| s.tx_hbt),
        n(|s| s.rx_hbt),
        n(|s| s.no_hbt),
        n(|s| s.new_conn),
        n(|s| s.proto_err),
        n(|s| s.coll),
    );
    let conn = st.as_ref().and_then(|st| st.conn.clone());
    let established = active && conn.is_some();
    let mut flags = 0;
    if established {
        flags |= PEER_ALIVE;
    }
    if st.as_ref().is_some_and(|st| st.not_up_to_date) {
        flags |= PEER_LEARN_NOTUP2DATE;
    }
    let _ = write!(out, "        flags={flags:#x}");
    if let (true, Some(st)) = (active, &st) {
        let app: *const () = st
            .session
            .as_ref()
            .map_or(std::ptr::null(), |(_, k)| Arc::as_ptr(k).cast());
        let (st0, state) = if established { (7, "EST") } else { (6, "CON") };
        let _ = write!(
            out,
            " appctx:{app:p} st0={st0} st1=0 task_calls=0 state={state}"
        );
        if let Some((from, to, tls)) = conn.as_ref().and_then(|c| c.accepted) {
            let xprt = if tls { "SSL" } else { "RAW" };
            let _ = write!(
                out,
                "\n        xprt={xprt} src={}:{} addr={}:{}",
                from.ip(),
                from.port(),
                to.ip(),
                to.port()
            );
        }
    }
    // A shared table's address in a peer: the peer's, moved on.
    let shared = |i: usize| (ptr as usize).wrapping_add(0x100 + i * 0x80) as *const ();
    let cursor = |i: usize| conn.as_ref().and_then(|c| c.cursors.get(i).copied());
    for (which, idx) in [
        ("remote_table", conn.as_ref().and_then(|c| c.remote_table)),
        (
            "last_local_table",
            conn.as_ref().and_then(|c| c.last_local_table),
        ),
    ] {
        if let Some(i) = idx
            && let Some(t) = s.tables.get(i)
        {
            let c = cursor(i).unwrap_or_default();
            let _ = write!(
                out,
                "\n        {which}:{:p} id={} local_id={} remote_id={}",
                shared(i),
                t.name(),
                i + 1,
                c.remote_id
            );
        }
    }
    if !s.tables.is_empty() {
        out.push_str("\n        shared tables:");
    }
    for (i, t) in s.tables.iter().enumerate() {
        let c = cursor(i).unwrap_or_default();
        let _ = write!(
            out,
            "\n          {:p} local_id={} remote_id={} flags={:#x} remote_data={:#x}",
            shared(i),
            i + 1,
            c.remote_id,
            c.flags,
            c.remote_data
        );
        let _ = write!(
            out,
            "\n              last_acked={} last_pushed={} last_get={} teaching_origin={} update={}",
            c.last_acked, c.last_pushed, c.last_get, c.teaching_origin, c.update
        );
        let _ = write!(
            out,
            "\n              table:{:p} id={} update={} localupdate={} commitupdate={} refcnt={}",
            Arc::as_ptr(t),
            t.name(),
            t.last_update(),
            t.local_update(),
            t.commit_update(),
            1
        );
        if dict {
            let (tx, rx) = conn
                .as_ref()
                .map_or((&[][..], &[][..]), |c| (&c.tx_dict[..], &c.rx_dict[..]));
            dump_dict(out, tx, rx);
        } else {
            out.push_str("\n        Dictionary cache not dumped (use \"show peers dict\")");
        }
    }
    out.push('\n');
}

/// The `server_key` caches as HAProxy lists them, four a line: the
/// texts sent, up to the first free entry, then all 128 entries of the
/// peer's (`-` for a free one).
fn dump_dict(out: &mut String, tx: &[Arc<str>], rx: &[Option<Arc<str>>]) {
    out.push_str("\n        TX dictionary cache:");
    for (i, t) in tx.iter().enumerate() {
        if i % 4 == 0 {
            out.push_str("\n        ");
        }
        let _ = write!(out, "  {i:3} -> {t}");
    }
    out.push_str("\n        RX dictionary cache:");
    for i in 0..super::codec::DICT_ENTRIES as usize {
        if i % 4 == 0 {
            out.push_str("\n        ");
        }
        let t = rx.get(i).cloned().flatten();
        let _ = write!(out, "  {i:3} -> {}", t.as_deref().unwrap_or("-"));
    }
}
