//! sluice: a reverse proxy and load balancer that speaks HAProxy's language.

pub mod acl;
pub mod config;
pub mod backend;
pub mod balance;
pub mod routing;
pub mod runtime;
