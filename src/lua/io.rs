//! The I/O a script waits for: `core.httpclient()` exchanges and
//! `core.tcp()` sockets. The script's coroutine yields what it asks
//! (`coroutine.yield(IO, op, ...)` in `prelude.lua`); the driver of
//! `run.rs` reads it into an [`Ask`], performs it on the worker's
//! runtime with the Lua state free, and resumes the coroutine with its
//! results ([`Out`]). A coroutine's sockets are its own ([`Io`]): they
//! close when it ends. A TCP service's client connection is read and
//! written the same way ([`AppletConn`]).

use std::time::Duration;

use mlua::{Lua, MultiValue, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::httpclient;

/// A socket's timeouts when the script set none (HAProxy's socket
/// proxy's `timeout connect` and `timeout server`).
const SOCKET_TIMEOUT: Duration = Duration::from_secs(5);

/// HAProxy's words for a socket that has nothing more to give (closed,
/// or silent past its timeout).
const CLOSED: &str = "connection closed.";

/// What a script asks for.
pub(super) enum Ask {
    Http(httpclient::Request),
    Connect {
        host: String,
        port: Option<u16>,
        timeout: Option<Duration>,
    },
    Send {
        sock: usize,
        data: Vec<u8>,
        timeout: Option<Duration>,
    },
    Receive {
        sock: usize,
        pattern: Pattern,
        prefix: Vec<u8>,
        timeout: Option<Duration>,
    },
    Close {
        sock: usize,
    },
    /// `getpeername` (true) or `getsockname`.
    Name {
        sock: usize,
        peer: bool,
    },
    /// A TCP service's `receive` (`Count`, or `All` without a size) and
    /// `getline` (`Line`, its line end kept).
    AppletRead(Pattern),
    AppletSend(Vec<u8>),
}

/// What `receive` reads.
pub(super) enum Pattern {
    /// `*l`: a line, without its LF and the CRs before it.
    Line,
    /// `*a`: everything up to the close.
    All,
    Count(usize),
}

/// A result handed back to the script.
pub(super) enum Out {
    Nil,
    Int(i64),
    Str(Vec<u8>),
    /// A list of `{ name, value }` pairs (header fields).
    Fields(Vec<(String, Vec<u8>)>),
}

impl Out {
    fn str(s: impl Into<Vec<u8>>) -> Out {
        Out::Str(s.into())
    }
}

/// The results as Lua values, for the resume.
pub(super) fn to_lua(lua: &Lua, outs: Vec<Out>) -> mlua::Result<MultiValue> {
    let mut v = MultiValue::new();
    for o in outs {
        v.push_back(match o {
            Out::Nil => Value::Nil,
            Out::Int(n) => Value::Integer(n),
            Out::Str(s) => Value::String(lua.create_string(s)?),
            Out::Fields(list) => {
                let t = lua.create_table_with_capacity(list.len(), 0)?;
                for (n, val) in list {
                    let pair = lua.create_table()?;
                    pair.push(n)?;
                    pair.push(lua.create_string(val)?)?;
                    t.push(pair)?;
                }
                Value::Table(t)
            }
        });
    }
    Ok(v)
}

fn bytes(v: Option<&Value>) -> Option<Vec<u8>> {
    match v? {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(n) => Some(n.to_string().into_bytes()),
        Value::Number(f) => Some(f.to_string().into_bytes()),
        _ => None,
    }
}

fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Integer(n) => Some(*n),
        Value::Number(f) => Some(*f as i64),
        Value::String(s) => s.to_str().ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// A socket's timeout, in seconds as `settimeout` takes it.
fn seconds(v: Option<&Value>) -> Option<Duration> {
    let s = match v? {
        Value::Integer(n) => *n as f64,
        Value::Number(f) => *f,
        _ => return None,
    };
    (s >= 0.0 && s.is_finite()).then(|| Duration::from_secs_f64(s))
}

fn sock(v: Option<&Value>) -> Result<usize, String> {
    int(v)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| "invalid socket".to_string())
}

/// Reads what the coroutine yielded after the `IO` mark: the operation's
/// name, then its arguments.
pub(super) fn ask(vals: &MultiValue) -> Result<Ask, String> {
    let arg = |i: usize| vals.get(i + 2);
    let op = bytes(vals.get(1)).unwrap_or_default();
    Ok(match &op[..] {
        b"http" => {
            let method = match bytes(arg(0)).as_deref() {
                Some(b"HEAD") => "HEAD",
                Some(b"POST") => "POST",
                Some(b"PUT") => "PUT",
                Some(b"DELETE") => "DELETE",
                _ => "GET",
            };
            let Some(url) = bytes(arg(1)) else {
                return Err("httpclient: no URL".into());
            };
            let mut headers = Vec::new();
            if let Some(Value::Table(t)) = arg(2) {
                for pair in t.sequence_values::<mlua::Table>().flatten() {
                    let n = bytes(pair.get::<Value>(1).ok().as_ref());
                    let v = bytes(pair.get::<Value>(2).ok().as_ref());
                    if let (Some(n), Some(v)) = (n, v) {
                        headers.push((String::from_utf8_lossy(&n).into_owned(), v));
                    }
                }
            }
            Ask::Http(httpclient::Request {
                method,
                url,
                headers,
                body: bytes(arg(3)),
                timeout: int(arg(4))
                    .filter(|&ms| ms > 0)
                    .map(|ms| Duration::from_millis(ms as u64)),
                dst: bytes(arg(5)).map(|d| String::from_utf8_lossy(&d).into_owned()),
            })
        }
        b"connect" => Ask::Connect {
            host: bytes(arg(0))
                .map(|h| String::from_utf8_lossy(&h).into_owned())
                .unwrap_or_default(),
            port: int(arg(1)).and_then(|p| u16::try_from(p).ok()),
            timeout: seconds(arg(2)),
        },
        b"send" => Ask::Send {
            sock: sock(arg(0))?,
            data: bytes(arg(1)).unwrap_or_default(),
            timeout: seconds(arg(2)),
        },
        b"receive" => Ask::Receive {
            sock: sock(arg(0))?,
            pattern: match arg(1) {
                Some(Value::Integer(_) | Value::Number(_)) => {
                    Pattern::Count(int(arg(1)).unwrap_or(0).max(0) as usize)
                }
                _ => match bytes(arg(1)).as_deref() {
                    Some(b"*a") => Pattern::All,
                    None | Some(b"*l") => Pattern::Line,
                    Some(other) => {
                        return Err(format!(
                            "invalid pattern '{}'",
                            String::from_utf8_lossy(other)
                        ));
                    }
                },
            },
            prefix: bytes(arg(2)).unwrap_or_default(),
            timeout: seconds(arg(3)),
        },
        b"close" => Ask::Close {
            sock: sock(arg(0))?,
        },
        b"applet_receive" => Ask::AppletRead(match int(arg(0)) {
            Some(n) if n > 0 => Pattern::Count(n as usize),
            _ => Pattern::All,
        }),
        b"applet_getline" => Ask::AppletRead(Pattern::Line),
        b"applet_send" => Ask::AppletSend(bytes(arg(0)).unwrap_or_default()),
        b"peer" | b"name" => Ask::Name {
            sock: sock(arg(0))?,
            peer: op == b"peer",
        },
        other => {
            return Err(format!("unknown I/O '{}'", String::from_utf8_lossy(other)));
        }
    })
}

/// A connected socket and what it received beyond what was read.
struct Sock {
    stream: TcpStream,
    buf: Vec<u8>,
    /// The peer closed its side.
    eof: bool,
}

/// The client connection of a TCP service.
pub(crate) struct AppletConn<'c> {
    pub(crate) stream: &'c mut crate::tls::Stream,
    /// What was read from it and not yet given to the script (first, the
    /// bytes the rules inspected).
    pub(crate) buf: Vec<u8>,
    /// The client closed its side.
    pub(crate) eof: bool,
    /// `timeout client`.
    pub(crate) timeout: Option<Duration>,
    /// Bytes sent to the client, received from it (the log's `%B`, `%U`).
    pub(crate) sent: u64,
    pub(crate) received: u64,
}

impl AppletConn<'_> {
    /// What `pattern` asks of the client: a count or a line (its line end
    /// kept) as soon as it came, everything up to its close; what is left
    /// when it closes first ("" past the end).
    async fn read(&mut self, pattern: &Pattern) -> Vec<u8> {
        loop {
            let take = match pattern {
                Pattern::Line => self.buf.iter().position(|&c| c == b'\n').map(|i| i + 1),
                Pattern::Count(n) => (self.buf.len() >= *n).then_some(*n),
                Pattern::All => None,
            };
            if let Some(n) = take {
                return self.buf.drain(..n).collect();
            }
            if self.eof {
                return std::mem::take(&mut self.buf);
            }
            self.buf.reserve(4096);
            let read = self.stream.read_buf(&mut self.buf);
            let n = match self.timeout {
                Some(t) => tokio::time::timeout(t, read).await.unwrap_or(Ok(0)),
                None => read.await,
            };
            match n {
                Ok(0) | Err(_) => self.eof = true,
                Ok(n) => self.received += n as u64,
            }
        }
    }
}

/// A coroutine's sockets, by the number its Lua object holds, and a TCP
/// service's client connection.
#[derive(Default)]
pub(crate) struct Io<'c> {
    socks: Vec<Option<Sock>>,
    pub(crate) applet: Option<AppletConn<'c>>,
}

impl Io<'_> {
    /// Performs `ask`: its results, or the error the script raises.
    pub(super) async fn perform(&mut self, ask: Ask) -> Result<Vec<Out>, String> {
        match ask {
            Ask::Http(req) => {
                let r = httpclient::send(req).await?;
                Ok(vec![
                    Out::Int(i64::from(r.status)),
                    Out::Str(r.reason),
                    Out::Fields(r.headers),
                    Out::Str(r.body),
                ])
            }
            Ask::Connect {
                host,
                port,
                timeout,
            } => Ok(match connect(&host, port, timeout).await {
                Some(stream) => {
                    self.socks.push(Some(Sock {
                        stream,
                        buf: Vec::new(),
                        eof: false,
                    }));
                    vec![Out::Int(self.socks.len() as i64 - 1)]
                }
                None => vec![Out::Nil, Out::str("Can't connect")],
            }),
            Ask::Send {
                sock,
                data,
                timeout,
            } => {
                let Some(s) = self.get(sock) else {
                    return Ok(vec![Out::Nil, Out::str(CLOSED)]);
                };
                let t = timeout.unwrap_or(SOCKET_TIMEOUT);
                Ok(
                    match tokio::time::timeout(t, s.stream.write_all(&data)).await {
                        Ok(Ok(())) => vec![Out::Int(data.len() as i64)],
                        _ => vec![Out::Nil, Out::str(CLOSED)],
                    },
                )
            }
            Ask::Receive {
                sock,
                pattern,
                mut prefix,
                timeout,
            } => {
                let Some(s) = self.get(sock) else {
                    return Ok(vec![Out::Nil, Out::str(CLOSED)]);
                };
                Ok(match s.receive(&pattern, timeout).await {
                    Some(data) => {
                        prefix.extend_from_slice(&data);
                        vec![Out::Str(prefix)]
                    }
                    None => vec![Out::Nil, Out::str(CLOSED)],
                })
            }
            Ask::AppletRead(pattern) => Ok(match self.applet.as_mut() {
                Some(a) => vec![Out::Str(a.read(&pattern).await)],
                None => vec![Out::Nil],
            }),
            Ask::AppletSend(data) => {
                if let Some(a) = self.applet.as_mut() {
                    let w = a.stream.write_all(&data);
                    let ok = match a.timeout {
                        Some(t) => matches!(tokio::time::timeout(t, w).await, Ok(Ok(()))),
                        None => w.await.is_ok(),
                    };
                    if ok {
                        a.sent += data.len() as u64;
                    }
                }
                Ok(Vec::new())
            }
            Ask::Close { sock } => {
                if let Some(slot) = self.socks.get_mut(sock) {
                    *slot = None;
                }
                Ok(Vec::new())
            }
            Ask::Name { sock, peer } => {
                let Some(s) = self.get(sock) else {
                    return Ok(vec![Out::Nil]);
                };
                let a = if peer {
                    s.stream.peer_addr()
                } else {
                    s.stream.local_addr()
                };
                Ok(match a {
                    Ok(a) => vec![Out::str(a.ip().to_string()), Out::Int(i64::from(a.port()))],
                    Err(_) => vec![Out::Nil],
                })
            }
        }
    }

    fn get(&mut self, sock: usize) -> Option<&mut Sock> {
        self.socks.get_mut(sock)?.as_mut()
    }
}

/// `host` and `port`, or `host:port` in one word; a name is resolved.
async fn connect(host: &str, port: Option<u16>, timeout: Option<Duration>) -> Option<TcpStream> {
    let (host, port) = match port {
        Some(p) => (host.trim_matches(['[', ']']).to_string(), p),
        None => {
            let (h, p) = host.rsplit_once(':')?;
            (h.trim_matches(['[', ']']).to_string(), p.parse().ok()?)
        }
    };
    let fut = async {
        for a in tokio::net::lookup_host((host.as_str(), port)).await.ok()? {
            if let Ok(s) = TcpStream::connect(a).await {
                return Some(s);
            }
        }
        None
    };
    tokio::time::timeout(timeout.unwrap_or(SOCKET_TIMEOUT), fut)
        .await
        .ok()
        .flatten()
}

impl Sock {
    /// What `pattern` asks for, or None once the peer closed (or stayed
    /// silent past the timeout) before it came.
    async fn receive(&mut self, pattern: &Pattern, timeout: Option<Duration>) -> Option<Vec<u8>> {
        let t = timeout.unwrap_or(SOCKET_TIMEOUT);
        loop {
            match pattern {
                Pattern::Line => {
                    if let Some(nl) = self.buf.iter().position(|&c| c == b'\n') {
                        let mut line: Vec<u8> = self.buf.drain(..=nl).collect();
                        line.pop();
                        line.retain(|&c| c != b'\r');
                        return Some(line);
                    }
                }
                Pattern::Count(n) => {
                    if self.buf.len() >= *n {
                        return Some(self.buf.drain(..*n).collect());
                    }
                }
                Pattern::All => {
                    if self.eof {
                        return Some(std::mem::take(&mut self.buf));
                    }
                }
            }
            if self.eof {
                return None;
            }
            let mut chunk = [0u8; 4096];
            match tokio::time::timeout(t, self.stream.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) => self.eof = true,
                Ok(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
                // HAProxy's socket closes at its timeout.
                Err(_) => {
                    self.eof = true;
                    if matches!(pattern, Pattern::All) {
                        return None;
                    }
                }
            }
        }
    }
}
