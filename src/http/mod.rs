//! The HTTP/1 data plane: the frontend service, forwarding, error pages.

pub mod cookie;
pub mod forward;
pub mod h2;
pub mod legacy;
pub mod park;
pub mod reply;
pub mod rules;
pub mod service;
