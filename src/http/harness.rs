//! An in-process harness for the request path (test builds only).
//!
//! [`handle_request`] is driven as `serve_connection` drives it, over the
//! server end of a loopback TCP pair made inside the test; upstream servers
//! are small tokio HTTP/1 tasks on `127.0.0.1:0` in the same runtime. No
//! binary is started and nothing sleeps, so routing, rules, the outcome
//! record and the counters are checked in milliseconds. The config is the
//! text a user writes, compiled into a [`Runtime`] as at startup; its
//! `bind` lines are never bound (the harness hands connections over
//! itself), so they name any port.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::http::service::{Via, handle_request};
use crate::observe::outcome::seen::{self, Ended};
use crate::snapshot::runtime::Runtime;
use crate::state::Counters;
use crate::state::sessions::StreamEntry;
use crate::tls::Stream;
use crate::wire::io::BufConn;

/// Bounds every wait of a test, so a hang fails instead of blocking.
const LIMIT: Duration = Duration::from_secs(5);

/// The runtime compiled from `text` (a valid config).
fn runtime(text: &str) -> Arc<Runtime> {
    let loaded = crate::config::parse_texts(
        &[("harness.cfg".to_string(), text.to_string())],
        &|_| None,
        &|_, _| Err("no resolver in the harness".to_string()),
    );
    let Some(config) = loaded.config else {
        panic!("the test config is invalid: {:?}", loaded.diagnostics);
    };
    Runtime::new(&config, 1)
}

/// A fake upstream: answers every request `200` with its name as the body,
/// and keeps each request head it received.
struct Upstream {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    async fn start(name: &'static str) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = heads.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                tokio::spawn(Self::serve(s, name, kept.clone()));
            }
        });
        Upstream { addr, heads }
    }

    /// Serves one connection: request heads (no bodies) until it closes.
    async fn serve(mut s: TcpStream, name: &'static str, heads: Arc<Mutex<Vec<String>>>) {
        let mut buf = Vec::new();
        loop {
            while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head: Vec<u8> = buf.drain(..end + 4).collect();
                heads
                    .lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&head).into_owned());
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{name}",
                    name.len()
                );
                if s.write_all(resp.as_bytes()).await.is_err() {
                    return;
                }
            }
            let mut chunk = [0u8; 4096];
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// What the client got back, and the records the end stage saw.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// The response as bytes on the wire, head and body.
    raw: String,
    body: String,
    /// Whether the connection may carry another request.
    keep: bool,
    ended: Vec<Ended>,
}

impl Answer {
    /// The one exchange's record.
    fn ended(&self) -> &Ended {
        assert_eq!(self.ended.len(), 1, "one exchange ended: {:?}", self.ended);
        &self.ended[0]
    }
}

/// Sends `request` from a client on a loopback pair to `frontend` and runs
/// [`handle_request`] on the proxy's end, as a fresh HTTP/1 connection.
async fn exchange(rt: &Runtime, frontend: &str, request: &str) -> Answer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (accepted, peer) = listener.accept().await.unwrap();
    client.write_all(request.as_bytes()).await.unwrap();
    let _ = seen::take();
    let mut conn = BufConn::new(Stream::Tcp(accepted.into()));
    let entry = StreamEntry::default();
    let sess = crate::sample::vars::SessVars::default();
    let listener = crate::sample::conn::Listener::new(frontend.into(), 1, None);
    let facts = crate::sample::conn::ClientFacts::new(-1, std::sync::Arc::new(listener));
    let keep = tokio::time::timeout(
        LIMIT,
        handle_request(
            (&sess, None),
            rt,
            frontend,
            &entry,
            &mut conn,
            (peer.into(), &facts),
            true,
            None,
            Via::Http1,
        ),
    )
    .await
    .expect("the request is answered in time");
    let ended = seen::take();
    // The proxy's end closes: the client reads the answer to its end.
    drop(conn);
    let mut out = Vec::new();
    tokio::time::timeout(LIMIT, client.read_to_end(&mut out))
        .await
        .expect("the answer ends")
        .unwrap();
    let raw = String::from_utf8_lossy(&out).into_owned();
    let status = raw
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Answer {
        status,
        raw,
        body,
        keep,
        ended,
    }
}

/// The counters of frontend `name`.
fn fe_counters<R>(rt: &Runtime, name: &str, f: impl FnOnce(&Counters) -> R) -> R {
    let snap = rt.snapshot();
    let fe = snap.frontends().find(|f| f.name == name).unwrap();
    f(&fe.state.counters)
}

/// The counters of server `srv` in backend `be`.
fn srv_counters<R>(rt: &Runtime, be: &str, srv: &str, f: impl FnOnce(&Counters) -> R) -> R {
    let snap = rt.snapshot();
    let be = snap.backend(be).unwrap();
    let s = be.servers.iter().find(|s| s.name == srv).unwrap();
    f(&s.state.counters)
}

/// A frontend routing by path and Host to two backends, one fake upstream
/// each, with a default backend of its own.
async fn routed() -> (Arc<Runtime>, [Upstream; 3]) {
    let (api, www, other) = (
        Upstream::start("api").await,
        Upstream::start("www").await,
        Upstream::start("default").await,
    );
    let text = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\n\
         frontend fe\n    bind 127.0.0.1:1\n\
         \x20   acl is_api path_beg /api/\n\
         \x20   acl is_www hdr(host) -i www.example.com\n\
         \x20   use_backend be_api if is_api\n\
         \x20   use_backend be_www if is_www\n\
         \x20   default_backend be_default\n\n\
         backend be_api\n    server a1 {}\n\n\
         backend be_www\n    server w1 {}\n\n\
         backend be_default\n    server d1 {}\n",
        api.addr, www.addr, other.addr
    );
    (runtime(&text), [api, www, other])
}

#[tokio::test]
async fn path_beg_routes_to_its_backend() {
    let (rt, ups) = routed().await;
    let a = exchange(&rt, "fe", "GET /api/users HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert_eq!(a.status, 200, "{}", a.raw);
    assert_eq!(a.body, "api");
    assert!(a.keep);
    assert_eq!(ups[0].heads().len(), 1);
    assert!(ups[1].heads().is_empty() && ups[2].heads().is_empty());
}

#[tokio::test]
async fn host_header_routes_to_its_backend_and_the_rest_to_the_default() {
    let (rt, _ups) = routed().await;
    let a = exchange(&rt, "fe", "GET / HTTP/1.1\r\nHost: WWW.example.com\r\n\r\n").await;
    assert_eq!(a.body, "www", "{}", a.raw);
    assert_eq!(a.ended().backend.as_deref(), Some("be_www"));
    let a = exchange(&rt, "fe", "GET /apix HTTP/1.1\r\nHost: other\r\n\r\n").await;
    assert_eq!(a.body, "default", "{}", a.raw);
    assert_eq!(a.ended().server, "d1");
}

#[tokio::test]
async fn the_record_of_a_served_request() {
    let (rt, _ups) = routed().await;
    let request = "GET /api/x HTTP/1.1\r\nhost: x\r\n\r\n";
    let a = exchange(&rt, "fe", request).await;
    let e = a.ended();
    assert_eq!(e.status, 200);
    // `--`: a normal end.
    assert_eq!(e.term, None);
    assert_eq!(e.backend.as_deref(), Some("be_api"));
    assert_eq!(e.server, "a1");
    assert_eq!(e.retries, 0);
    // `%U` counts the head as HAProxy 2.6 does (`wire::logged_size`).
    assert_eq!(e.bytes_in, 43);
    // `%B` too: the server's answer reached the client unchanged, so its
    // logged size is that of the bytes the client read.
    assert_eq!(
        e.bytes_out,
        crate::wire::logged_size::message(a.raw.as_bytes())
    );
}

#[tokio::test]
async fn one_request_counts_on_the_server_and_frontend_rows() {
    let (rt, _ups) = routed().await;
    exchange(&rt, "fe", "GET /api/x HTTP/1.1\r\nhost: x\r\n\r\n").await;
    srv_counters(&rt, "be_api", "a1", |c| {
        assert_eq!(c.sum(|s| &s.stot), 1);
        // hrsp[1] is hrsp_2xx (1xx..5xx, then other).
        assert_eq!(c.sum(|s| &s.hrsp[1]), 1);
        assert_eq!(c.sum(|s| &s.hrsp[4]), 0);
    });
    srv_counters(&rt, "be_www", "w1", |c| assert_eq!(c.sum(|s| &s.stot), 0));
    fe_counters(&rt, "fe", |c| {
        assert_eq!(c.sum(|s| &s.req_tot), 1);
        assert_eq!(c.sum(|s| &s.hrsp[1]), 1);
    });
}

#[tokio::test]
async fn http_request_deny_is_a_403_counted_in_denied_req() {
    let up = Upstream::start("up").await;
    let text = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\n\
         frontend fe\n    bind 127.0.0.1:1\n\
         \x20   http-request deny if {{ path_beg /admin }}\n\
         \x20   default_backend be\n\n\
         backend be\n    server s1 {}\n",
        up.addr
    );
    let rt = runtime(&text);
    let a = exchange(&rt, "fe", "GET /admin/x HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert_eq!(a.status, 403, "{}", a.raw);
    assert!(up.heads().is_empty(), "a denied request reaches no server");
    let e = a.ended();
    assert_eq!(e.term.map(|t| t.code()), Some(*b"PR"));
    assert_eq!(e.server, "<NOSRV>");
    fe_counters(&rt, "fe", |c| {
        assert_eq!(c.sum(|s| &s.dreq), 1);
        assert_eq!(c.sum(|s| &s.hrsp[3]), 1);
    });
    // Another path goes through.
    let a = exchange(&rt, "fe", "GET /ok HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert_eq!(a.status, 200, "{}", a.raw);
    fe_counters(&rt, "fe", |c| assert_eq!(c.sum(|s| &s.dreq), 1));
}

#[tokio::test]
async fn no_server_up_is_a_503_without_a_server() {
    let text = "defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\n\
         frontend fe\n    bind 127.0.0.1:1\n    default_backend be\n\n\
         backend be\n    server s1 127.0.0.1:9 disabled\n";
    let rt = runtime(text);
    let a = exchange(&rt, "fe", "GET / HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert_eq!(a.status, 503, "{}", a.raw);
    let e = a.ended();
    assert_eq!(e.status, 503);
    assert_eq!(e.term.map(|t| t.code()), Some(*b"SC"));
    assert_eq!(e.backend.as_deref(), Some("be"));
    assert_eq!(e.server, "<NOSRV>");
    fe_counters(&rt, "fe", |c| assert_eq!(c.sum(|s| &s.hrsp[4]), 1));
    srv_counters(&rt, "be", "s1", |c| assert_eq!(c.sum(|s| &s.stot), 0));
}

#[tokio::test]
async fn http_request_set_header_reaches_the_upstream() {
    let up = Upstream::start("up").await;
    let text = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\n\
         frontend fe\n    bind 127.0.0.1:1\n\
         \x20   http-request set-header X-Tag edge-1\n\
         \x20   http-request set-header X-Path %[path]\n\
         \x20   default_backend be\n\n\
         backend be\n    server s1 {}\n",
        up.addr
    );
    let rt = runtime(&text);
    let a = exchange(
        &rt,
        "fe",
        "GET /p/q HTTP/1.1\r\nhost: x\r\nx-tag: from-client\r\n\r\n",
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.raw);
    let heads = up.heads();
    assert_eq!(heads.len(), 1);
    let head = heads[0].to_ascii_lowercase();
    assert!(head.contains("\r\nx-tag: edge-1\r\n"), "{head}");
    assert!(!head.contains("from-client"), "set-header replaces: {head}");
    assert!(head.contains("\r\nx-path: /p/q\r\n"), "{head}");
}

#[tokio::test]
async fn a_broken_request_is_a_400_from_the_proxy() {
    let (rt, ups) = routed().await;
    let a = exchange(&rt, "fe", "GET / HTTP/1.1\r\nbad header\r\n\r\n").await;
    assert_eq!(a.status, 400, "{}", a.raw);
    assert!(!a.keep);
    let e = a.ended();
    assert_eq!(e.term.map(|t| t.code()), Some(*b"PR"));
    assert!(ups.iter().all(|u| u.heads().is_empty()));
    fe_counters(&rt, "fe", |c| assert_eq!(c.sum(|s| &s.ereq), 1));
}
