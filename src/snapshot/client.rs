//! What one client connection holds for its whole life, from accept to
//! close: the process handle, its frontend, the `maxconn` permits, its
//! `show sess` entry. Opened by the frontend layer (`frontend/listener.rs`)
//! and carried by the engines (`http/`, `tcp/`), which sit on either side
//! of it, so it lives down here with the process figures it counts in.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::OwnedSemaphorePermit;

use crate::sample::conn::ClientFacts;
use crate::snapshot::runtime::Runtime;
use crate::state::FrontendState;
use crate::state::sessions::Slot;
use crate::state::table::track::Trackers;

/// The `maxconn` slots a connection holds: the process's and its
/// frontend's, and its listener's (`bind ... maxconn`) when it has one,
/// boxed then: few listeners have one, and every idle connection would
/// pay for the room (the enum is no larger than the pair). Held for their
/// drop, which gives the slots back: never read.
pub(crate) enum Permits {
    Two(#[allow(dead_code)] [OwnedSemaphorePermit; 2]),
    Three(#[allow(dead_code)] Box<[OwnedSemaphorePermit; 3]>),
}

impl Permits {
    pub(crate) fn new(pair: [OwnedSemaphorePermit; 2], own: Option<OwnedSemaphorePermit>) -> Self {
        match own {
            None => Permits::Two(pair),
            Some(o) => {
                let [g, f] = pair;
                Permits::Three(Box::new([g, f, o]))
            }
        }
    }
}

/// A client connection's record. Opening it counts the connection;
/// dropping it closes the books and frees the `maxconn` permits, whatever
/// way the connection ended.
pub(crate) struct ClientConn {
    pub(crate) rt: Arc<Runtime>,
    /// The frontend's state, once the connection counts as one of its
    /// sessions (`scur`, `stot`): from accept, or once `tcp-request
    /// connection` rules and the PROXY header let it through.
    fe_state: Option<Arc<FrontendState>>,
    _permits: Permits,
    /// Its `show sess` entry (a pointer: idle connections stay small).
    pub(crate) stream: Slot,
    /// What the fetches read of it (`fc_*`, `so_*`, `dst_conn`), the
    /// address a PROXY header said the client connected to included.
    pub(crate) facts: ClientFacts,
    /// The stick counters its `tcp-request connection|session` rules
    /// track, released (`conn_cur` down) when it closes; boxed, as few
    /// connections have them, so that idle connections stay small.
    trackers: Option<Box<Trackers>>,
    /// Its place in its worker's count of connections, by which new ones
    /// are dealt out (`sys::workers::deal`).
    load: crate::sys::workers::Load,
}

impl ClientConn {
    /// A connection just accepted on `frontend`, counted in the process's
    /// figures; its session on the frontend starts with
    /// [`ClientConn::start_session`].
    pub(crate) fn new(
        rt: &Arc<Runtime>,
        permits: Permits,
        stream: Slot,
        facts: ClientFacts,
        load: crate::sys::workers::Load,
    ) -> ClientConn {
        let p = &rt.process;
        p.conns.inc();
        p.counts.count_connection();
        ClientConn {
            rt: rt.clone(),
            fe_state: None,
            _permits: permits,
            stream,
            facts,
            trackers: None,
            load,
        }
    }

    /// Its place in its worker's count, for the parking lot.
    pub(crate) fn load(&self) -> &crate::sys::workers::Load {
        &self.load
    }

    /// The frontend it came in on (its listener's).
    pub(crate) fn frontend(&self) -> &str {
        self.facts.listener().frontend()
    }

    /// The stick counters of the session, if it may track some.
    pub(crate) fn trackers(&self) -> Option<&Trackers> {
        self.trackers.as_deref()
    }

    /// The session's stick counters, made empty if need be (the
    /// connection and session rules track into them).
    pub(crate) fn trackers_mut(&mut self) -> &Trackers {
        self.trackers.get_or_insert_with(Default::default)
    }

    /// The frontend's state, once the connection is one of its sessions.
    pub(crate) fn frontend_state(&self) -> Option<&Arc<FrontendState>> {
        self.fe_state.as_ref()
    }

    /// The address the client connected to, when a PROXY header said it.
    pub(crate) fn dst(&self) -> Option<SocketAddr> {
        self.facts.dst()
    }

    /// Counts the connection as a session of its frontend (`st`).
    pub(crate) fn start_session(&mut self, st: Arc<FrontendState>) {
        if self.fe_state.is_none() {
            st.counters.session_start();
            self.fe_state = Some(st);
        }
    }
}

impl Drop for ClientConn {
    fn drop(&mut self) {
        if let Some(st) = &self.fe_state {
            st.counters.session_end();
        }
        self.rt.process.conns.dec();
    }
}
