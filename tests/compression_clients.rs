//! Compression with real clients: curl `--compressed` over HTTP/1.1 and
//! HTTP/2 (each coding curl knows: gzip, deflate, br, zstd), Python's
//! http.client checking every field of the answer, and a 1 GiB
//! compressible stream that must go through in bounded memory (sluice's
//! peak resident size under 64 MiB), its output decompressed as it comes
//! and compared with what the server sent.

mod support;

use std::io::{Read as _, Write as _};
use std::process::Command;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use support::raw::RawBackend;
use support::*;

fn text(n: usize) -> Vec<u8> {
    (0..)
        .flat_map(|i: u32| format!("line {i}: the quick brown fox jumps\n").into_bytes())
        .take(n)
        .collect()
}

fn config(bind: &str, srv: &str, algos: &str) -> String {
    format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind {bind}
    compression algo {algos}
    compression type text/plain
    default_backend be
backend be
    server s1 {srv}
"
    )
}

fn answer(body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\netag: \"e1\"\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// curl's headers and body for `args`, run off the test's runtime.
async fn curl(args: Vec<String>) -> (String, Vec<u8>) {
    let out = tokio::task::spawn_blocking(move || {
        Command::new("curl")
            .args(["-s", "-m", "20", "-D", "/dev/stderr"])
            .args(&args)
            .output()
            .expect("run curl")
    })
    .await
    .unwrap();
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.stdout,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_compressed_h1_and_h2() {
    let body = text(300_000);
    let srv = RawBackend::start().await;
    srv.answer(&answer(&body));
    let l = Listen::new();
    let _sl = Sluice::start(&config(
        &l.to_string(),
        &srv.addr.to_string(),
        "zstd br gzip deflate",
    ));
    let url = format!("http://{}/", l.addr());
    // Each coding alone, then curl's own list (the last configured, of
    // the equal q-values the first curl names).
    let cases = [
        ("gzip", "gzip"),
        ("deflate", "deflate"),
        ("br", "br"),
        ("zstd", "zstd"),
        ("", "deflate"),
    ];
    for version in ["--http1.1", "--http2-prior-knowledge"] {
        for (ask, want) in cases {
            let mut args = vec![version.to_string(), "--compressed".into(), url.clone()];
            if !ask.is_empty() {
                args.insert(0, format!("accept-encoding: {ask}"));
                args.insert(0, "-H".into());
            }
            let (head, got) = curl(args).await;
            let head = head.to_ascii_lowercase();
            assert!(
                head.contains(&format!("content-encoding: {want}\r\n")),
                "{version} {ask:?}: {head}"
            );
            assert!(head.contains("vary: accept-encoding\r\n"), "{head}");
            assert!(head.contains("etag: w/\"e1\"\r\n"), "{head}");
            assert!(!head.contains("content-length"), "{head}");
            assert!(got == body, "{version} {ask:?}: {} bytes back", got.len());
        }
    }
}

/// Python's http.client, checking every field of a compressed answer and
/// decompressing it with zlib.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_checks_every_field() {
    let body = text(100_000);
    let srv = RawBackend::start().await;
    srv.answer(&answer(&body));
    let l = Listen::new();
    let _sl = Sluice::start(&config(&l.to_string(), &srv.addr.to_string(), "gzip"));
    let script = format!(
        r#"
import http.client, zlib, hashlib, sys
c = http.client.HTTPConnection("127.0.0.1", {port})
for n in range(2):
    c.request("GET", "/", headers={{"Accept-Encoding": "gzip"}})
    r = c.getresponse()
    fields = [(k.lower(), v) for k, v in r.getheaders()]
    want = [("content-type", "text/plain"), ("etag", 'W/"e1"'),
            ("transfer-encoding", "chunked"), ("vary", "Accept-Encoding"),
            ("content-encoding", "gzip")]
    assert r.status == 200, r.status
    assert fields == want, fields
    data = zlib.decompress(r.read(), 16 + zlib.MAX_WBITS)
    print(hashlib.sha256(data).hexdigest())
# Not asked for: the answer as the server sent it.
c.request("GET", "/")
r = c.getresponse()
assert r.getheader("content-length") == str(len(r.read())), r.getheaders()
assert r.getheader("content-encoding") is None
assert r.getheader("etag") == '"e1"'
print("plain ok")
"#,
        port = l.port()
    );
    let out = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg("-c")
            .arg(script)
            .output()
            .expect("run python3")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sum = {
        use sha2::Digest;
        format!("{:x}", sha2::Sha256::digest(&body))
    };
    assert_eq!(stdout, format!("{sum}\n{sum}\nplain ok\n"));
}

/// sluice's peak resident set size, in KiB (`VmHWM`).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// A server that streams `total` bytes of text, chunked, 64 KiB a chunk.
async fn streaming_server(total: u64) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        let Ok((mut s, _)) = l.accept().await else {
            return;
        };
        let mut req = [0u8; 4096];
        let _ = s.read(&mut req).await;
        let head =
            b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n";
        if s.write_all(head).await.is_err() {
            return;
        }
        let piece = text(64 * 1024);
        let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
        chunk.extend_from_slice(&piece);
        chunk.extend_from_slice(b"\r\n");
        let mut sent = 0;
        while sent < total {
            if s.write_all(&chunk).await.is_err() {
                return;
            }
            sent += piece.len() as u64;
        }
        let _ = s.write_all(b"0\r\n\r\n").await;
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gibibyte_streams_in_bounded_memory() {
    const TOTAL: u64 = 1 << 30;
    let srv = streaming_server(TOTAL).await;
    let l = Listen::new();
    let sl = Sluice::start(&config(&l.to_string(), &srv.to_string(), "gzip"));
    let addr = l.addr();
    // A blocking client on a thread of its own: the head, then the
    // chunked body de-chunked and decompressed as it arrives, compared
    // with the server's text as it goes.
    let client = std::thread::spawn(move || {
        use std::io::BufRead as _;
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(
            b"GET / HTTP/1.1\r\nhost: x\r\naccept-encoding: gzip\r\nconnection: close\r\n\r\n",
        )
        .unwrap();
        let mut r = std::io::BufReader::with_capacity(1 << 16, c);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line.to_ascii_lowercase());
        }
        /// The data of a chunked body, read as it comes.
        struct Dechunk<R>(R, u64, bool);
        impl<R: std::io::BufRead> std::io::Read for Dechunk<R> {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                if self.2 {
                    return Ok(0);
                }
                if self.1 == 0 {
                    let mut line = String::new();
                    self.0.read_line(&mut line)?;
                    let size =
                        u64::from_str_radix(line.trim(), 16).map_err(std::io::Error::other)?;
                    if size == 0 {
                        self.2 = true;
                        return Ok(0);
                    }
                    self.1 = size;
                }
                let want = out.len().min(self.1 as usize);
                let n = self.0.read(&mut out[..want])?;
                if n == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                self.1 -= n as u64;
                if self.1 == 0 {
                    let mut crlf = [0u8; 2];
                    self.0.read_exact(&mut crlf)?;
                }
                Ok(n)
            }
        }
        let mut gz = flate2::read::GzDecoder::new(Dechunk(r, 0, false));
        let piece = text(64 * 1024);
        let (mut total, mut buf, mut at, mut same) = (0u64, vec![0u8; 1 << 16], 0usize, true);
        loop {
            let n = gz.read(&mut buf).expect("gzip stream");
            if n == 0 {
                break;
            }
            for &b in &buf[..n] {
                same &= b == piece[at];
                at = (at + 1) % piece.len();
            }
            total += n as u64;
        }
        (head, total, same)
    });
    let (head, total, same) = tokio::task::spawn_blocking(move || client.join().unwrap())
        .await
        .unwrap();
    assert!(head.contains("content-encoding: gzip"), "{head}");
    assert_eq!(total, TOTAL);
    assert!(same, "the decompressed stream is not the server's text");
    let peak = peak_rss_kib(sl.pid());
    assert!(peak < 64 * 1024, "sluice's peak RSS {peak} KiB");
    let _ = std::io::stderr().write_all(format!("peak RSS {peak} KiB\n").as_bytes());
}
