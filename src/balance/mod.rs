//! Load-balancing algorithms.

mod roundrobin;

pub use roundrobin::RoundRobin;
