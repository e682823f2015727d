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
}

/// One thing that happened while waiting.
enum Event {
    Server(usize),
    Client(usize),
    Expired,
}

/// Holds the server's bytes in `held` until `decide` (the rules on the
/// bytes held, told whether they must decide) gives a verdict. `delay` is
/// the backend's `tcp-response inspect-delay`; `server_timeout` bounds
/// each write of the client's bytes to the server.
pub(super) async fn inspect(
    client: &mut Stream,
    server: &mut Stream,
    held: &mut Vec<u8>,
    delay: Option<Duration>,
    server_timeout: Option<Duration>,
    mut decide: impl FnMut(&[u8], bool) -> Option<Verdict>,
) -> Inspected {
    let deadline = delay.map(|d| tokio::time::Instant::now() + d);
    let mut c2s = 0u64;
    let (mut client_done, mut server_done) = (false, false);
    // Allocated only when the rules wait: most decide at once.
    let mut chunk = Vec::new();
    loop {
        let last = server_done
            || held.len() >= INSPECT_MAX
            || deadline.is_none_or(|d| tokio::time::Instant::now() >= d);
        if let Some(verdict) = decide(held, last) {
            return Inspected { verdict, c2s };
        }
        let Some(deadline) = deadline else {
            // `last` made the rules decide.
            return Inspected {
                verdict: Verdict::Accept,
                c2s,
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
            Event::Server(_) | Event::Expired => {}
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
