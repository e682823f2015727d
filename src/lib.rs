//! sluice: a reverse proxy and load balancer that speaks HAProxy's language.

pub mod accept;
pub mod acl;
pub mod backend;
pub mod balance;
pub mod cli;
pub mod config;
pub mod health;
pub mod http;
pub mod listener;
pub mod log;
pub mod manpage;
pub mod process;
pub mod proxy_proto;
pub mod reload;
pub mod reload_diff;
pub mod routing;
pub mod runtime;
pub mod sessions;
pub mod splice;
pub mod stats;
pub mod takeover;
pub mod tcp;
pub mod tcp_rules;
pub mod tls;
pub mod workers;
