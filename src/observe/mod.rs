//! What an operator reads: the outcome of each exchange and the end stage
//! that counts and logs it (`outcome`), access and event logs (`log`) and statistics
//! (`stats`: `show stat` CSV, `show info`, `show errors`, `show sess`, the
//! stats page, the Prometheus exporter). Reads the snapshot and the
//! runtime state; never on the path that decides where a request goes.

pub mod log;
pub(crate) mod outcome;
pub(crate) mod stats;
