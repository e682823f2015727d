//! `tcp-response content` rules in `mode tcp`: the server's first bytes
//! are held while the rules cannot decide, as HAProxy's response
//! inspection does. They run once as soon as the server is connected,
//! then again from the first rule each time more bytes come, until one
//! decides or they must: `tcp-response inspect-delay` over (or not set),
//! the server closed, or the buffer full. The client's bytes go on to the
//! server meanwhile.

use std::time::Duration;

use bytes::BufMut;
use tokio::io::AsyncReadExt;

use crate::tcp::rules::Verdict;
use crate::tls::Stream;

/// Most response bytes held for inspection (HAProxy's buffer).
const INSPECT_MAX: usize = 16 * 1024;

/// What the inspection came to.
pub(super) struct Inspected {
    pub(super) verdict: Verdict,
    /// The client's bytes relayed to the server meanwhile.
    pub(super) c2s: u64,
    /// Whether the bytes to send first went to the server: not when the
    /// rules decided against the session at once, before HAProxy would
    /// have forwarded anything.
    pub(super) first_sent: bool,
    /// The bytes read from the server meanwhile (a Lua action may have
    /// changed those held).
    pub(super) read: u64,
}

/// The rules on the bytes held (which a Lua action may change), told
/// whether they must decide and whether the server may send more: a
/// verdict, or None while they cannot (they may wait for an SPOE agent
/// or a Lua action).
pub(super) trait Decide {
    fn decide(
        &mut self,
        held: &mut Vec<u8>,
        last: bool,
        open: bool,
    ) -> impl std::future::Future<Output = Option<Verdict>> + Send;
}

/// One thing that happened while waiting.
enum Event {
    Server(usize),
    Client(usize),
    Expired,
}

/// Holds the server's bytes in `held` until `decide` (the rules on the
/// bytes held, told whether they must decide) gives a verdict. The rules
/// first run as the connection is made, before `first` (the PROXY header
/// and the client's bytes read so far) is sent, as HAProxy runs them
/// before it forwards the request. `delay` is the backend's
/// `tcp-response inspect-delay`; `server_timeout` bounds each write to the
/// server. A server that cannot be written to ends the wait.
pub(super) async fn inspect(
    client: &mut Stream,
    server: &mut Stream,
    (first, held): (&[u8], &mut Vec<u8>),
    delay: Option<Duration>,
    server_timeout: Option<Duration>,
    decide: &mut impl Decide,
) -> Inspected {
    let deadline = delay.map(|d| tokio::time::Instant::now() + d);
    match decide.decide(held, deadline.is_none(), true).await {
        Some(Verdict::Accept) => {
            let first_sent = send_first(server, first, server_timeout).await;
            return Inspected {
                verdict: Verdict::Accept,
                c2s: 0,
                first_sent,
                read: 0,
            };
        }
        Some(verdict) => {
            return Inspected {
                verdict,
                c2s: 0,
                first_sent: false,
                read: 0,
            };
        }
        None => {}
    }
    let first_sent = send_first(server, first, server_timeout).await;
    let (mut c2s, mut read) = (0u64, 0u64);
    let (mut client_done, mut server_done) = (false, !first_sent);
    // Allocated only when the rules wait: most decide at once.
    let mut chunk = Vec::new();
    loop {
        let last = server_done
            || held.len() >= INSPECT_MAX
            || deadline.is_none_or(|d| tokio::time::Instant::now() >= d);
        if let Some(verdict) = decide.decide(held, last, !server_done).await {
            return Inspected {
                verdict,
                c2s,
                first_sent,
                read,
            };
        }
        let Some(deadline) = deadline else {
            // `last` made the rules decide.
            return Inspected {
                verdict: Verdict::Accept,
                c2s,
                first_sent,
                read,
            };
        };
        if chunk.is_empty() {
            chunk.resize(4096, 0);
        }
        let room = INSPECT_MAX - held.len();
        let mut limited = (&mut *held).limit(room);
        let event = tokio::select! {
            r = server.read_buf(&mut limited) => match r {
                Ok(n) => Event::Server(n),
                Err(_) => Event::Server(0),
            },
            r = client.read(&mut chunk), if !client_done => match r {
                Ok(n) => Event::Client(n),
                Err(_) => Event::Client(0),
            },
            _ = tokio::time::sleep_until(deadline) => Event::Expired,
        };
        match event {
            Event::Server(0) => server_done = true,
            Event::Server(n) => read += n as u64,
            Event::Expired => {}
            Event::Client(0) => {
                // The client's end goes on to the server, which may be
                // waiting for it to answer.
                client_done = true;
                let _ = tokio::io::AsyncWriteExt::shutdown(server).await;
            }
            Event::Client(n) => {
                match crate::wire::io::write_all(server, &chunk[..n], server_timeout).await {
                    Ok(()) => c2s += n as u64,
                    Err(_) => server_done = true,
                }
            }
        }
    }
}

/// Sends `first` to the server: whether it went (or there was nothing).
async fn send_first(server: &mut Stream, first: &[u8], timeout: Option<Duration>) -> bool {
    first.is_empty()
        || crate::wire::io::write_all(server, first, timeout)
            .await
            .is_ok()
}
