//! The operating system: process life cycle (daemon, signals, privileges,
//! limits, affinity, systemd notifications) and the worker threads.

pub mod process;
pub mod workers;
