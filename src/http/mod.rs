//! The HTTP/1 data plane: the frontend service, forwarding, error pages.

pub mod capture;
pub mod cookie;
pub mod error_spot;
pub mod errors;
pub mod forward;
pub mod h1;
pub mod h2;
pub mod io;
pub mod legacy;
pub mod park;
pub mod reply;
pub mod rules;
pub mod service;
