//! The `stats uri` page over HTTP with raw bytes: `stats auth` (HTTP
//! Basic, HAProxy's 401 with the realm), `stats realm`, `stats refresh`,
//! `stats hide-version`, `stats show-legends`, `;csv` and `;json`
//! (reference §1.9).

mod support;

use std::net::SocketAddr;

use support::*;

async fn start(extra: &str) -> (Sluice, SocketAddr, Backend) {
    let s1 = Backend::start("s1").await;
    let port = free_port();
    let cfg = format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s

backend web_be
    balance roundrobin
    server s1 {a}

listen stats
    bind 127.0.0.1:{port}
    stats uri /st
{extra}",
        a = s1.hostport()
    );
    (
        Sluice::start(&cfg),
        SocketAddr::from(([127, 0, 0, 1], port)),
        s1,
    )
}

async fn raw(addr: SocketAddr, req: &str) -> Response {
    let mut c = HttpConn::connect(addr).await;
    c.raw(req.as_bytes(), false).await.expect("response")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_realm_refresh() {
    let (_s, addr, _b) = start(
        "    stats auth admin:secret
    stats auth bob:pw
    stats realm My\\ Realm
    stats refresh 7s
",
    )
    .await;
    // No credentials: HAProxy's 401, byte for byte, with the realm.
    let r = raw(addr, "GET /st HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert_eq!(r.status, 401, "{}", r.head);
    assert_eq!(
        r.header("www-authenticate"),
        Some("Basic realm=\"My Realm\"")
    );
    assert_eq!(r.header("content-type"), Some("text/html"));
    assert_eq!(
        r.text(),
        "<html><body><h1>401 Unauthorized</h1>\nYou need a valid user and password to access this content.\n</body></html>\n"
    );
    assert_eq!(r.header("refresh"), None);
    // Wrong password, other scheme: 401 too.
    for auth in ["Basic YWRtaW46d3Jvbmc=", "Bearer YWRtaW46c2VjcmV0"] {
        let r = raw(
            addr,
            &format!("GET /st;csv HTTP/1.1\r\nhost: x\r\nauthorization: {auth}\r\n\r\n"),
        )
        .await;
        assert_eq!(r.status, 401, "{auth}");
    }
    // Either account works; the refresh header is on every variant.
    for (auth, suffix, ctype) in [
        ("YWRtaW46c2VjcmV0", "", "text/html"),
        ("Ym9iOnB3", ";csv", "text/plain"),
        ("Ym9iOnB3", ";json", "application/json"),
    ] {
        let r = raw(
            addr,
            &format!("GET /st{suffix} HTTP/1.1\r\nhost: x\r\nAuthorization: Basic {auth}\r\n\r\n"),
        )
        .await;
        assert_eq!(r.status, 200, "{suffix}: {}", r.head);
        assert_eq!(r.header("content-type"), Some(ctype));
        assert_eq!(r.header("refresh"), Some("7"));
        assert_eq!(r.header("cache-control"), Some("no-cache"));
    }
    let r = raw(
        addr,
        "GET /st;norefresh HTTP/1.1\r\nhost: x\r\nAuthorization: Basic Ym9iOnB3\r\n\r\n",
    )
    .await;
    assert_eq!((r.status, r.header("refresh")), (200, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_realm_legends_version_json() {
    let (_s, addr, b) = start(
        "    stats auth admin:secret
    stats hide-version
    stats show-legends
",
    )
    .await;
    let r = raw(addr, "GET /st HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert_eq!(
        (r.status, r.header("www-authenticate")),
        (401, Some("Basic realm=\"HAProxy Statistics\""))
    );
    let auth = "Authorization: Basic YWRtaW46c2VjcmV0\r\n";
    let page = raw(addr, &format!("GET /st HTTP/1.1\r\nhost: x\r\n{auth}\r\n")).await;
    assert_eq!(page.status, 200);
    assert!(
        page.text()
            .contains("<h1>Statistics Report for sluice</h1>")
    );
    assert!(page.text().contains("<h2>web_be</h2>"));
    let csv = raw(
        addr,
        &format!("GET /st;csv HTTP/1.1\r\nhost: x\r\n{auth}\r\n"),
    )
    .await;
    let text = csv.text();
    let line = text
        .lines()
        .find(|l| l.starts_with("web_be,s1,"))
        .expect("s1 row");
    assert!(line.contains(&b.hostport()), "addr filled: {line}");
    let be = text
        .lines()
        .find(|l| l.starts_with("web_be,BACKEND,"))
        .expect("BACKEND row");
    assert!(be.contains(",roundrobin,"), "algo filled: {be}");
    let json = raw(
        addr,
        &format!("GET /st;json HTTP/1.1\r\nhost: x\r\n{auth}\r\n"),
    )
    .await;
    assert_eq!(json.header("content-type"), Some("application/json"));
    let body = json.text();
    assert!(body.starts_with("[[{\"objType\":\"Server\""), "{body:.100}");
    assert!(body.contains("{\"objType\":\"Frontend\""));
    assert!(body.contains("\"name\":\"pxname\""));
    assert!(
        body.trim_end().ends_with("]]"),
        "{}",
        &body[body.len().saturating_sub(40)..]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auth_the_page_is_open_and_shows_the_version() {
    let (_s, addr, _b) = start("").await;
    let r = raw(addr, "GET /st HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert_eq!(r.status, 200);
    assert!(r.text().contains("<h1>Statistics Report for sluice 0."));
    assert_eq!(r.header("refresh"), None);
    // Legends stay empty by default, as on HAProxy's page.
    let csv = raw(addr, "GET /st;csv HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert!(!csv.text().contains("roundrobin"));
}
