//! sluice: a reverse proxy and load balancer that speaks HAProxy's language.
//!
//! The modules are layers; a layer imports only from the layers below it
//! (`ARCHITECTURE.md` is the map, `tests/layers.rs` holds the line):
//! `control` > `peers` > `frontend` > `http`, `tcp` > `upstream` > `observe` >
//! `snapshot` > `state` > `config` > `acl` > `wire`, `tls`, `loc`, `haproxy26` > `sys`.

pub mod acl;
pub mod config;
pub mod control;
pub mod frontend;
pub mod haproxy26;
pub mod http;
pub mod loc;
pub mod lua;
pub mod observe;
pub mod peers;
pub mod sample;
pub mod snapshot;
pub mod state;
pub mod sys;
pub mod tcp;
pub mod tls;
pub mod upstream;
pub mod wire;
