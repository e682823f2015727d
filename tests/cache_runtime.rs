//! The cache at run time: concurrent fills of one key store one object
//! (and every client gets the server's answer), a reload keeps the
//! objects of a `cache` section left as it was and starts an emptied one
//! when its settings change, the least recently used objects make room
//! within `total-max-size`, and HTTP/2 clients are served from the cache
//! as HTTP/1 clients are.

mod support;

use std::process::Command;
use std::time::Duration;

use support::*;

fn cfg(port: u16, srv: &str, cache: &str) -> String {
    format!(
        "{}    default_backend be
backend be
    http-request cache-use c
    http-response set-header cache-control max-age=60
    http-response cache-store c
    http-response set-header x-hit %[res.cache_hit]
    server s1 {srv}
cache c
{cache}",
        reload_test_head(port)
    )
}

async fn reload(s: &Sluice, text: &str) {
    let dir = s.path("");
    let dir = dir.to_str().unwrap().trim_end_matches('/');
    std::fs::write(s.path("sluice.cfg"), text.replace("@DIR@", dir)).unwrap();
    let reply = cli(&s.stats_socket(), "reload").await;
    assert!(reply.starts_with("Success=1\n"), "{reply}");
}

/// The objects `show cache` lists (lines after each cache's).
async fn objects(s: &Sluice) -> Vec<String> {
    cli(&s.stats_socket(), "show cache")
        .await
        .lines()
        .filter(|l| l.contains(" hash:"))
        .map(String::from)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_fills_store_one_object() {
    let b = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let s = Sluice::start(&cfg(port, &b.hostport(), "    total-max-size 4\n"));
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    // Twenty clients ask for the same object while the server holds its
    // answers: every one of them misses (the first fills, the others find
    // it incomplete) and none may store a second copy.
    b.set_gated(true);
    let mut clients = Vec::new();
    for _ in 0..20 {
        clients.push(tokio::spawn(async move { get(addr, "/same").await }));
    }
    wait_until(
        Duration::from_secs(10),
        "20 requests at the server",
        || async { b.in_flight() == 20 },
    )
    .await;
    b.release(20);
    for c in clients {
        let r = c.await.unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), "s1\n");
        assert_eq!(r.header("x-hit"), Some("0"));
    }
    assert_eq!(objects(&s).await.len(), 1, "{:?}", objects(&s).await);
    b.set_gated(false);
    let r = get(addr, "/same").await;
    assert_eq!((r.header("x-hit"), r.text().as_str()), (Some("1"), "s1\n"));
    assert_eq!(b.hits(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_keeps_an_unchanged_cache() {
    let b = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let text = cfg(port, &b.hostport(), "    total-max-size 4\n");
    let s = Sluice::start(&text);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(get(addr, "/k").await.header("x-hit"), Some("0"));
    assert_eq!(get(addr, "/k").await.header("x-hit"), Some("1"));
    // The same section (another comment, another max-age in the proxy):
    // the object is still served.
    reload(&s, &format!("{text}# reloaded\n")).await;
    assert_eq!(get(addr, "/k").await.header("x-hit"), Some("1"));
    assert_eq!(b.hits(), 1);
    // Another size: a new, empty cache.
    reload(&s, &cfg(port, &b.hostport(), "    total-max-size 8\n")).await;
    assert_eq!(objects(&s).await.len(), 0);
    assert_eq!(get(addr, "/k").await.header("x-hit"), Some("0"));
    assert_eq!(b.hits(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn least_recently_used_objects_make_room() {
    let b = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    // 1 MiB: 1024 blocks, each object a block (small answers).
    let s = Sluice::start(&cfg(port, &b.hostport(), "    total-max-size 1\n"));
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    for i in 0..1024 {
        get(addr, &format!("/o{i}")).await;
    }
    assert_eq!(objects(&s).await.len(), 1024);
    // /o0 used again: the least recently used is now /o1.
    assert_eq!(get(addr, "/o0").await.header("x-hit"), Some("1"));
    get(addr, "/new").await;
    assert_eq!(objects(&s).await.len(), 1024);
    assert_eq!(get(addr, "/o0").await.header("x-hit"), Some("1"));
    assert_eq!(get(addr, "/o1").await.header("x-hit"), Some("0"), "evicted");
    assert_eq!(get(addr, "/new").await.header("x-hit"), Some("1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_clients_hit_the_cache() {
    let b = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let _s = Sluice::start(&cfg(port, &b.hostport(), "    total-max-size 4\n"));
    let url = format!("http://127.0.0.1:{port}/h2");
    let curl = |url: String| {
        tokio::task::spawn_blocking(move || {
            let out = Command::new("curl")
                .args([
                    "-s",
                    "-m",
                    "5",
                    "--http2-prior-knowledge",
                    "-D",
                    "/dev/stderr",
                ])
                .arg(&url)
                .output()
                .expect("run curl");
            (
                String::from_utf8_lossy(&out.stderr).into_owned(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        })
    };
    let (h1, b1) = curl(url.clone()).await.unwrap();
    let (h2, b2) = curl(url).await.unwrap();
    assert!(h1.starts_with("HTTP/2 200"), "{h1}");
    assert!(h1.contains("x-hit: 0"), "{h1}");
    assert!(h2.contains("x-hit: 1") && h2.contains("age: "), "{h2}");
    assert_eq!((b1.as_str(), b2.as_str()), ("s1\n", "s1\n"));
    assert_eq!(b.hits(), 1);
}

/// The Prometheus exporter reports the cache's and the compressor's
/// counters (read from the same rows as `show stat`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_reports_cache_and_compression() {
    let b = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let (_hold2, mport) = hold_port();
    let text = format!(
        "{}    default_backend be
frontend metrics
    bind 127.0.0.1:{mport}
    http-request use-service prometheus-exporter
backend be
    compression algo gzip
    http-request cache-use c
    http-response set-header cache-control max-age=60
    http-response cache-store c
    server s1 {}
cache c
    total-max-size 4
",
        reload_test_head(port),
        b.hostport()
    );
    let _s = Sluice::start(&text);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    for _ in 0..3 {
        let mut c = HttpConn::connect(addr).await;
        let r = c
            .raw(
                b"GET /m HTTP/1.1\r\nhost: x\r\naccept-encoding: gzip\r\nconnection: close\r\n\r\n",
                false,
            )
            .await
            .expect("answer");
        assert_eq!(r.status, 200);
    }
    let m = get(
        std::net::SocketAddr::from(([127, 0, 0, 1], mport)),
        "/metrics",
    )
    .await
    .text();
    for want in [
        "haproxy_backend_http_cache_lookups_total{proxy=\"be\"} 3",
        "haproxy_backend_http_cache_hits_total{proxy=\"be\"} 2",
        "haproxy_frontend_http_comp_responses_total{proxy=\"fe\"} 3",
        "haproxy_backend_http_comp_responses_total{proxy=\"be\"} 3",
        "haproxy_frontend_http_comp_bytes_in_total{proxy=\"fe\"} 9",
    ] {
        assert!(m.contains(want), "no {want:?} in\n{m}");
    }
}
