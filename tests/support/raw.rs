//! A raw-TCP HTTP/1 backend that records every byte it receives (in arrival
//! order and per connection) and answers scripted bytes, for tests that
//! assert exactly what sluice forwards.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The answer when none is scripted.
pub const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

struct Recorder {
    /// Every byte received, across connections, in arrival order.
    got: Vec<u8>,
    /// Bytes received, per connection (in accept order).
    conns: Vec<Vec<u8>>,
    /// The answer to each complete request, while no scripted one is left.
    resp: Vec<u8>,
    /// Answers for the next requests, in order (then `resp`).
    script: VecDeque<Vec<u8>>,
    /// Answer nothing at all (a server that hangs).
    silent: bool,
    /// Close the connection after each answer (a body that lasts until
    /// the server closes).
    close_after: bool,
}

pub struct RawBackend {
    pub addr: SocketAddr,
    st: Arc<Mutex<Recorder>>,
}

impl RawBackend {
    pub async fn start() -> RawBackend {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let st = Arc::new(Mutex::new(Recorder {
            got: Vec::new(),
            conns: Vec::new(),
            resp: OK.to_vec(),
            script: VecDeque::new(),
            silent: false,
            close_after: false,
        }));
        let st2 = st.clone();
        tokio::spawn(async move {
            loop {
                let Ok((s, _)) = l.accept().await else { return };
                let idx = {
                    let mut g = st2.lock().unwrap();
                    g.conns.push(Vec::new());
                    g.conns.len() - 1
                };
                tokio::spawn(serve_raw(s, idx, st2.clone()));
            }
        });
        RawBackend { addr, st }
    }

    /// Everything received since the last call, across connections.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut self.st.lock().unwrap().got)
    }

    /// The requests received since the last take, each whole (in arrival
    /// order; for requests that all fit one connection's bytes, as a
    /// test's sequential requests do).
    pub fn take_requests(&self) -> Vec<Vec<u8>> {
        let mut all = self.take();
        let mut out = Vec::new();
        while let Some(n) = complete_request(&all) {
            out.push(all.drain(..n).collect());
        }
        out
    }

    /// The bytes each connection received since the last take (accept
    /// order; connections that received nothing are left out).
    pub fn take_conns(&self) -> Vec<Vec<u8>> {
        let mut g = self.st.lock().unwrap();
        g.got.clear();
        g.conns
            .iter_mut()
            .map(std::mem::take)
            .filter(|c| !c.is_empty())
            .collect()
    }

    /// Connections accepted so far (including silent ones).
    pub fn accepted(&self) -> usize {
        self.st.lock().unwrap().conns.len()
    }

    /// The answer to every request from now on.
    pub fn answer(&self, resp: &[u8]) {
        let mut g = self.st.lock().unwrap();
        g.resp = resp.to_vec();
        g.script.clear();
    }

    /// Answers for the next requests, one each, in order. An empty answer
    /// closes the connection without a byte (a server that drops the
    /// request).
    pub fn script(&self, answers: &[&[u8]]) {
        self.st.lock().unwrap().script = answers.iter().map(|a| a.to_vec()).collect();
    }

    pub fn set_silent(&self, on: bool) {
        self.st.lock().unwrap().silent = on;
    }

    /// Whether each answer is followed by the close of its connection.
    pub fn set_close_after(&self, on: bool) {
        self.st.lock().unwrap().close_after = on;
    }
}

/// The length of the PROXY header (v1 or v2) `buf` starts with: `Some(0)`
/// when it starts with something else, `None` while it may still be one.
fn proxy_header_len(buf: &[u8]) -> Option<usize> {
    const V2: &[u8] = b"\r\n\r\n\x00\r\nQUIT\n";
    let n = buf.len();
    if buf.starts_with(V2) {
        let len = buf.get(14..16)?;
        let total = 16 + u16::from_be_bytes([len[0], len[1]]) as usize;
        return (n >= total).then_some(total);
    }
    if n < V2.len() && V2.starts_with(buf) {
        return None;
    }
    if buf.starts_with(b"PROXY ") {
        return find(buf, b"\r\n", 0).map(|e| e + 2);
    }
    if n < 6 && b"PROXY ".starts_with(buf) {
        return None;
    }
    Some(0)
}

/// Records bytes; answers after each request whose framing it can follow
/// (it only ever sees what sluice forwards, which is well-formed). A
/// request that announces `Expect: 100-continue` gets `100 Continue` once
/// its head is complete, as a real server does.
async fn serve_raw(mut s: TcpStream, idx: usize, st: Arc<Mutex<Recorder>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let mut continued = false;
    let mut first = true;
    loop {
        let n = match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        {
            let mut g = st.lock().unwrap();
            g.got.extend_from_slice(&chunk[..n]);
            g.conns[idx].extend_from_slice(&chunk[..n]);
        }
        buf.extend_from_slice(&chunk[..n]);
        if first {
            // A PROXY header (`send-proxy`) is recorded, not a request: the
            // v2 signature starts with a blank line, which would otherwise
            // read as a complete empty request and be answered early.
            match proxy_header_len(&buf) {
                Some(0) => first = false,
                Some(len) => {
                    buf.drain(..len);
                    first = false;
                }
                None => continue,
            }
        }
        if !continued
            && complete_request(&buf).is_none()
            && let Some(e) = find(&buf, b"\r\n\r\n", 0)
            && String::from_utf8_lossy(&buf[..e])
                .to_ascii_lowercase()
                .contains("\r\nexpect: 100-continue")
        {
            continued = true;
            if s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await.is_err() {
                return;
            }
        }
        while let Some(len) = complete_request(&buf) {
            buf.drain(..len);
            continued = false;
            let (resp, close) = {
                let mut g = st.lock().unwrap();
                if g.silent {
                    continue;
                }
                let next = g.script.pop_front();
                (next.unwrap_or_else(|| g.resp.clone()), g.close_after)
            };
            if resp.is_empty() || s.write_all(&resp).await.is_err() || close {
                return;
            }
        }
    }
}

pub fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Length of the first complete request (CRLF heads, CL or chunked), if any.
pub fn complete_request(buf: &[u8]) -> Option<usize> {
    let e = find(buf, b"\r\n\r\n", 0)?;
    let head = String::from_utf8_lossy(&buf[..e]).to_ascii_lowercase();
    let field = |name: &str| {
        head.lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == name)
            .map(|(_, v)| v.trim().to_string())
    };
    let mut p = e + 4;
    if field("transfer-encoding").is_some_and(|v| v.ends_with("chunked")) {
        loop {
            let le = find(buf, b"\r\n", p)?;
            let size_txt = String::from_utf8_lossy(&buf[p..le]);
            let size = usize::from_str_radix(size_txt.split(';').next()?.trim(), 16).ok()?;
            p = le + 2;
            if size == 0 {
                return find(buf, b"\r\n\r\n", p - 2).map(|x| x + 4);
            }
            p += size + 2;
            if p > buf.len() {
                return None;
            }
        }
    }
    let n: usize = field("content-length").map_or(0, |v| v.parse().unwrap_or(0));
    (buf.len() >= p + n).then_some(p + n)
}

/// What a raw client read: the bytes, and whether (and when, since the
/// read began) the peer closed.
pub struct Read {
    pub bytes: Vec<u8>,
    pub closed_after: Option<Duration>,
}

impl Read {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Reads until the peer closes (or resets), or until nothing arrived for
/// `quiet`, or `limit` has passed.
pub async fn read_until_quiet(s: &mut TcpStream, quiet: Duration, limit: Duration) -> Read {
    let start = tokio::time::Instant::now();
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        let left = limit.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Read {
                bytes,
                closed_after: None,
            };
        }
        match tokio::time::timeout(quiet.min(left), s.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => bytes.extend_from_slice(&chunk[..n]),
            Ok(_) => {
                return Read {
                    bytes,
                    closed_after: Some(start.elapsed()),
                };
            }
            Err(_) => {
                return Read {
                    bytes,
                    closed_after: None,
                };
            }
        }
    }
}
