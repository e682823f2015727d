//! The operating system: process life cycle (daemon, signals, privileges,
//! limits, affinity, systemd notifications) and the worker threads.

pub(crate) mod abns;
pub(crate) mod peer;
pub(crate) mod process;
pub(crate) mod time;
pub(crate) mod unix;
pub(crate) mod workers;
