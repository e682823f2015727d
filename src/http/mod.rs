//! The HTTP/1 data plane: the frontend service, forwarding, error pages.

pub(crate) mod after;
mod body;
pub(crate) mod cache;
pub(crate) mod compress;
pub(crate) mod cookie;
mod exchange;
mod fcgi;
mod filtered;
pub(crate) mod forward;
pub(crate) mod h2;
pub(crate) mod legacy;
mod lua_txn;
mod normalize;
pub(crate) mod park;
mod relay;
pub(crate) mod reply;
pub(crate) mod rules;
pub(crate) mod service;

#[cfg(test)]
mod harness;
