//! Upstream: the server side of an exchange. Server choice (`balance`),
//! connections and their idle pool (`pool`, `h2` for HTTP/2 servers),
//! the retry and redispatch policy (`retry`) and active health checks
//! (`check`). Reads the snapshot and runtime state; knows no client side.

pub(crate) mod balance;
pub(crate) mod check;
pub(crate) mod dns;
pub(crate) mod h2;
pub(crate) mod pool;
pub(crate) mod retry;
pub(crate) mod source;
pub(crate) mod spoe;
pub(crate) mod stick;
pub(crate) mod unix;

use crate::observe::log::LogRecord;
use crate::observe::outcome::{Cause, Phase, Rows, Term};
use crate::snapshot::BackendRt;
use crate::upstream::balance::PickError;

/// Why the upstream side could not give an exchange a server connection:
/// the one error of the upstream boundary, for HTTP and TCP alike. It
/// carries its source (the socket's or the TLS layer's `io::Error`, or the
/// reason no server was picked) and tells whether a retry may follow and
/// which termination state the exchange logs.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    /// One TCP connection attempt (a timeout is `ErrorKind::TimedOut`).
    #[error("{0}")]
    Tcp(#[source] std::io::Error),
    /// One TLS handshake with the server.
    #[error("SSL handshake failure ({0})")]
    Tls(#[source] std::io::Error),
    #[error("SSL handshake timeout")]
    TlsTimeout,
    /// No server for the exchange, at first or on a redispatch.
    #[error("{0}")]
    Pick(#[from] PickError),
    /// Every attempt `retries` allows failed; the last one's error.
    #[error("no attempt left ({last})")]
    Exhausted {
        #[source]
        last: Box<ConnectError>,
    },
}

impl From<std::io::Error> for ConnectError {
    fn from(e: std::io::Error) -> Self {
        ConnectError::Tcp(e)
    }
}

impl ConnectError {
    /// One attempt failed and the retry policy may try again; a pick that
    /// found no server, or attempts exhausted, end the exchange.
    pub(crate) fn retryable(&self) -> bool {
        matches!(
            self,
            ConnectError::Tcp(_) | ConnectError::Tls(_) | ConnectError::TlsTimeout
        )
    }

    /// HAProxy's error of the (last) server connection (`bc_err`): a
    /// failed handshake has one, a TCP connection that failed none.
    pub(crate) fn server_error(&self) -> Option<crate::sample::srvconn::ConnErr> {
        use crate::sample::srvconn::ConnErr;
        match self {
            ConnectError::Tls(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Some(ConnErr::TlsClosed)
            }
            ConnectError::Tls(_) => Some(ConnErr::TlsFailed),
            ConnectError::TlsTimeout => Some(ConnErr::TlsTimeout),
            ConnectError::Exhausted { last } => last.server_error(),
            ConnectError::Tcp(_) | ConnectError::Pick(_) => None,
        }
    }

    /// The attempt stroke `timeout connect` (HAProxy's `sC`, else `SC`).
    pub(crate) fn timed_out(&self) -> bool {
        match self {
            ConnectError::Tcp(e) => e.kind() == std::io::ErrorKind::TimedOut,
            ConnectError::TlsTimeout => true,
            ConnectError::Tls(_) => false,
            ConnectError::Pick(_) => false,
            ConnectError::Exhausted { last } => last.timed_out(),
        }
    }

    /// The termination state of an exchange that ends on this error.
    pub(crate) fn term(&self) -> Term {
        match self {
            ConnectError::Pick(p) => p.term(),
            e if e.timed_out() => Term::new(Cause::ServerTimeout, Phase::Connect),
            _ => Term::new(Cause::Server, Phase::Connect),
        }
    }
}

impl PickError {
    /// The termination state of an exchange that got no server: `SC` (none
    /// usable), `sQ` (queued until `timeout queue`), `SQ` (the server's
    /// queue at its `maxqueue`), in HTTP and TCP mode alike, as HAProxy.
    pub(crate) fn term(self) -> Term {
        match self {
            PickError::NoServer => Term::new(Cause::Server, Phase::Connect),
            PickError::QueueTimeout { .. } => Term::new(Cause::ServerTimeout, Phase::Queue),
            PickError::QueueFull { .. } => Term::new(Cause::Server, Phase::Queue),
        }
    }

    /// Records on an exchange's outcome that it got no server from `be`,
    /// the same for HTTP and TCP: the termination state, the queue
    /// positions of a queue timeout, and `econ` (HAProxy's `failed_conns`)
    /// on the backend, and on the server whose queue was full, which the
    /// log names (`be/srv ... SQ`, as HAProxy 2.6).
    pub(crate) fn record(self, be: &BackendRt, rec: &mut LogRecord) {
        match self {
            PickError::NoServer => rec.tally.econ |= Rows::BE,
            PickError::QueueTimeout {
                be_queue,
                srv_queue,
            } => {
                rec.be_queue = be_queue;
                rec.srv_queue = srv_queue;
            }
            PickError::QueueFull { server } => {
                if let Some(s) = be.servers.get(server) {
                    rec.assign_server(&s.state);
                    rec.tally.econ |= Rows::BE_SRV;
                }
            }
        }
        rec.end(self.term());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;
    use std::io;

    #[test]
    fn one_attempt_may_be_retried_a_final_error_not() {
        let refused = || ConnectError::from(io::Error::from(io::ErrorKind::ConnectionRefused));
        assert!(refused().retryable());
        assert!(ConnectError::TlsTimeout.retryable());
        let exhausted = ConnectError::Exhausted {
            last: Box::new(refused()),
        };
        assert!(!exhausted.retryable());
        assert!(!ConnectError::Pick(PickError::NoServer).retryable());
        // The source chain reaches the socket's error.
        let src = exhausted.source().and_then(|e| e.source());
        assert_eq!(
            src.and_then(|e| e.downcast_ref::<io::Error>())
                .map(io::Error::kind),
            Some(io::ErrorKind::ConnectionRefused)
        );
    }

    #[test]
    fn termination_states_of_upstream_errors() {
        let code = |e: ConnectError| e.term().code();
        let timeout = io::Error::from(io::ErrorKind::TimedOut);
        let exhausted = |e| ConnectError::Exhausted { last: Box::new(e) };
        assert_eq!(&code(exhausted(ConnectError::Tcp(timeout))), b"sC");
        assert_eq!(&code(exhausted(ConnectError::TlsTimeout)), b"sC");
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(&code(exhausted(ConnectError::Tcp(refused))), b"SC");
        assert_eq!(&code(PickError::NoServer.into()), b"SC");
        assert_eq!(&code(PickError::QueueFull { server: 0 }.into()), b"SQ");
        let late = PickError::QueueTimeout {
            be_queue: 1,
            srv_queue: 0,
        };
        assert_eq!(&code(late.into()), b"sQ");
    }
}
