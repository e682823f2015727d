//! Upstream: the server side of an exchange. Server choice (`balance`),
//! connections and their idle pool (`pool`, `h2` for HTTP/2 servers),
//! the retry and redispatch policy (`retry`) and active health checks
//! (`check`). Reads the snapshot and runtime state; knows no client side.

pub(crate) mod balance;
pub(crate) mod check;
pub(crate) mod h2;
pub(crate) mod pool;
pub(crate) mod retry;
