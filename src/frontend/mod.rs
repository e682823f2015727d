//! Frontend: listening sockets, accept loops that honour `maxconn`, the
//! `tcp-request connection` rules and the PROXY header, TLS handshakes;
//! then each connection is handed to a protocol engine (`http` or `tcp`).

pub(crate) mod accept;
pub(crate) mod listener;
