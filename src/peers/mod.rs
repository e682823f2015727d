//! The peers protocol: this process as a peer of the others of its
//! `peers` sections, HAProxy's peers protocol 2.1 over TCP or TLS. It
//! pushes the updates of the tables synchronised with a section to every
//! peer and takes theirs, resynchronises a table from a peer when it
//! starts, and teaches a peer that asks. Network code over the table
//! store (`state/table/`): it reads the updates the store numbers and
//! writes the entries peers send.
//!
//! Everything here runs on the control runtime: the sessions never
//! block a worker, and the workers only ever touch the store (an update
//! wakes the section's sessions through a `Notify` the tables hold).

pub(crate) mod codec;
mod section;
mod session;
pub(crate) mod show;

use std::net::SocketAddr;
use std::sync::{Arc, LazyLock, Mutex};

use crate::snapshot::runtime::Runtime;
use section::Section;

/// A section running, and what it was started from: started again when
/// any of it changes (a reload that keeps the section and its tables
/// keeps its sessions).
struct Running {
    started_from: (crate::config::model::PeersSection, String, Vec<usize>),
    section: Arc<Section>,
}

static RUNNING: LazyLock<Mutex<Vec<Running>>> = LazyLock::new(Default::default);

/// The local peers' listeners bound at start-up, until their sections
/// take them.
static BOUND: LazyLock<Mutex<Vec<(SocketAddr, std::net::TcpListener)>>> =
    LazyLock::new(Default::default);

/// Binds the listener of every `peers` section this process is a peer
/// of, at start-up (as a frontend's bind, before privileges are
/// dropped): Err with the listener's line, the local peer, its address
/// and why, for HAProxy's alert.
pub(crate) fn bind_at_start(
    global: &crate::config::model::Global,
) -> Result<(), (crate::loc::Loc, String, SocketAddr, std::io::Error)> {
    let local = crate::config::table::local_peer(global);
    let mut bound = crate::state::lock(&BOUND);
    for s in &global.peers {
        let Some(l) = s
            .listen
            .as_ref()
            .filter(|_| !s.disabled && s.has_local(&local))
        else {
            continue;
        };
        match section::bind(l.addr) {
            Ok(sock) => bound.push((l.addr, sock)),
            Err(e) => return Err((l.loc.clone(), local, l.addr, e)),
        }
    }
    Ok(())
}

/// The listener bound at start-up for `addr`, if any.
fn take_bound(addr: SocketAddr) -> Option<std::net::TcpListener> {
    let mut bound = crate::state::lock(&BOUND);
    let i = bound.iter().position(|(a, _)| *a == addr)?;
    Some(bound.swap_remove(i).1)
}

/// Starts the sessions of every `peers` section of the snapshot in force
/// that names this process, and stops those of sections gone or changed.
/// Called on the control runtime, at start-up and after each reload.
pub(crate) fn spawn(rt: &Arc<Runtime>) {
    let snap = rt.snapshot();
    let local = crate::config::table::local_peer(&snap.global);
    let mut running = crate::state::lock(&RUNNING);
    // What each section to run is started from: its lines, the local
    // peer, and its tables (those declared in it and the proxies' naming
    // it), in the configuration's order.
    let wanted: Vec<_> = snap
        .global
        .peers
        .iter()
        .filter(|s| !s.disabled && s.has_local(&local))
        .map(|s| {
            let tables: Vec<_> = snap
                .tables
                .listed()
                .iter()
                .rev()
                .filter(|t| t.def.peers.as_deref() == Some(s.name.as_str()))
                .cloned()
                .collect();
            let ptrs = tables.iter().map(|t| Arc::as_ptr(t) as usize).collect();
            ((s.clone(), local.clone(), ptrs), tables)
        })
        .collect();
    // Those gone or changed stop first: their listeners let the address
    // go, and the tables they share with a new section lose their waker
    // before the new one sets its own.
    let (mut old, gone): (Vec<Running>, Vec<Running>) = running
        .drain(..)
        .partition(|r| wanted.iter().any(|(key, _)| *key == r.started_from));
    for r in gone {
        r.section.stop();
    }
    for (key, tables) in wanted {
        if let Some(i) = old.iter().position(|r| r.started_from == key) {
            running.push(old.swap_remove(i));
            continue;
        }
        let section = Section::start(&key.0, &local, tables);
        running.push(Running {
            started_from: key,
            section,
        });
    }
}

/// The sections running, in configuration order (for `show peers`).
pub(crate) fn sections() -> Vec<Arc<Section>> {
    crate::state::lock(&RUNNING)
        .iter()
        .map(|r| r.section.clone())
        .collect()
}
