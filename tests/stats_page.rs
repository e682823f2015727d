//! The `stats uri` page over HTTP with raw bytes: `stats auth` (HTTP
//! Basic, HAProxy's 401 with the realm), `stats realm`, `stats refresh`,
//! `stats hide-version`, `stats show-legends`, `;csv` and `;json`
//! (reference §1.9).

mod support;

use std::net::SocketAddr;

use support::*;

async fn start(extra: &str) -> (Sluice, SocketAddr, Backend) {
    let s1 = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
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
    bind {fe}
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
    // HEAD: the page's headers without its body; the connection goes on.
    let mut c = HttpConn::connect(addr).await;
    let h = c
        .raw(b"HEAD /st HTTP/1.1\r\nhost: x\r\n\r\n", true)
        .await
        .expect("HEAD");
    assert_eq!((h.status, h.body.len()), (200, 0));
    assert!(h.header("content-length").is_some_and(|l| l != "0"));
    let g = c
        .raw(b"GET /st;csv HTTP/1.1\r\nhost: x\r\n\r\n", false)
        .await
        .expect("GET after HEAD");
    assert_eq!(g.status, 200);
    assert!(g.text().starts_with("# pxname,"));
    // Legends stay empty by default, as on HAProxy's page.
    let csv = raw(addr, "GET /st;csv HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert!(!csv.text().contains("roundrobin"));
}

/// `stats admin` allowed for requests carrying `x-admin: yes` from
/// 127.0.0.1 (a named ACL and an anonymous one), two live servers, a
/// stats socket to read `show stat`.
async fn start_admin() -> (Sluice, SocketAddr, Backend, Backend) {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "global
    stats socket @DIR@/admin.sock mode 600 level admin

defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s

backend web_be
    server s1 {a1}
    server s2 {a2}

listen stats
    bind {fe}
    stats uri /st
    acl local src 127.0.0.1
    stats admin if local {{ hdr(x-admin) yes }}
",
        a1 = s1.hostport(),
        a2 = s2.hostport()
    );
    (
        Sluice::start(&cfg),
        SocketAddr::from(([127, 0, 0, 1], port)),
        s1,
        s2,
    )
}

fn post(path: &str, form: &str, admin: bool) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\n{}content-type: application/x-www-form-urlencoded\r\ncontent-length: {}\r\n\r\n{form}",
        if admin { "x-admin: yes\r\n" } else { "" },
        form.len()
    )
}

/// HAProxy 2.6's redirect, byte for byte (captured from haproxy 2.6.12
/// for the same form).
fn see_other(location: &str) -> String {
    format!(
        "HTTP/1.1 303 See Other\r\ncache-control: no-cache\r\ncontent-type: text/plain\r\ncontent-length: 0\r\nlocation: {location}\r\n\r\n"
    )
}

async fn status(sl: &Sluice, sv: &str) -> String {
    server_status(&sl.path("admin.sock"), "web_be", sv).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_form_applies_actions_as_the_cli() {
    let (sl, addr, _b1, _b2) = start_admin().await;
    let be_id = show_stat(&sl.path("admin.sock"))
        .await
        .get("web_be", "BACKEND", "iid");
    // The page offers the form only when the condition holds.
    let page = raw(addr, "GET /st HTTP/1.1\r\nhost: x\r\nx-admin: yes\r\n\r\n").await;
    let html = page.text();
    assert!(
        html.contains("<input class='web_be-checkbox' type=\"checkbox\" name=\"s\" value=\"s1\">")
    );
    assert!(html.contains(&format!(
        "<input type=\"hidden\" name=\"b\" value=\"#{be_id}\">"
    )));
    let plain = raw(addr, "GET /st HTTP/1.1\r\nhost: x\r\n\r\n").await;
    // (The scope box, a GET form, is on every page, as in HAProxy.)
    assert!(!plain.text().contains("checkbox") && !plain.text().contains("<form method=\"post\""));

    // Both servers to DRAIN, as the form posts it (`b=#<id>` last).
    let mut c = HttpConn::connect(addr).await;
    let form = format!("s=s1&s=s2&action=drain&b=%23{be_id}");
    let r = c
        .raw(post("/st", &form, true).as_bytes(), false)
        .await
        .expect("303");
    assert_eq!(r.status, 303);
    assert_eq!(r.head, see_other("/st;st=DONE"));
    assert_eq!(status(&sl, "s1").await, "DRAIN");
    assert_eq!(status(&sl, "s2").await, "DRAIN");
    // The connection goes on: the redirect's target shows the message.
    let r = c
        .raw(b"GET /st;st=DONE HTTP/1.1\r\nhost: x\r\n\r\n", false)
        .await
        .expect("page");
    assert!(
        r.text().contains("Action processed successfully."),
        "{}",
        r.text()
    );

    // MAINT by backend name, one unknown server: PART; `;up` is kept.
    let r = raw(
        addr,
        &post("/st;up", "s=s1&s=nope&action=maint&b=web_be", true),
    )
    .await;
    assert_eq!(r.head, see_other("/st;st=PART;up"));
    assert_eq!(status(&sl, "s1").await, "MAINT");
    assert_eq!(status(&sl, "s2").await, "DRAIN");
    // Not allowed (no x-admin header): DENY, nothing changes, the
    // connection goes on (the form was read and dropped, as HAProxy).
    let r = c
        .raw(
            post("/st", "s=s1&s=s2&action=ready&b=web_be", false).as_bytes(),
            false,
        )
        .await
        .expect("303");
    assert_eq!(r.head, see_other("/st;st=DENY"));
    let r = c
        .raw(b"GET /st;csv HTTP/1.1\r\nhost: x\r\n\r\n", false)
        .await
        .expect("csv");
    assert_eq!(r.status, 200);
    assert_eq!(status(&sl, "s1").await, "MAINT");
    assert_eq!(status(&sl, "s2").await, "DRAIN");
    // Bad action, unknown backend: ERRP; no server: NONE.
    for (form, code) in [
        ("s=s1&action=bogus&b=web_be", "ERRP"),
        ("s=s1&action=ready&b=nope", "ERRP"),
        ("action=ready&b=web_be", "NONE"),
    ] {
        let r = raw(addr, &post("/st", form, true)).await;
        assert_eq!(r.head, see_other(&format!("/st;st={code}")), "{form}");
    }
    assert_eq!(status(&sl, "s1").await, "MAINT");
    // A body larger than the buffer: EXCD, nothing read or applied.
    let big = format!("{}action=ready&b=web_be", "s=s1&".repeat(4000));
    let r = raw(addr, &post("/st", &big, true)).await;
    assert_eq!(
        r.head.replace("\r\nconnection: close", ""),
        see_other("/st;st=EXCD")
    );
    assert_eq!(status(&sl, "s1").await, "MAINT");
    // Back to READY: UP again.
    let r = raw(addr, &post("/st", "s=s1&s=s2&action=ready&b=web_be", true)).await;
    assert_eq!(r.head, see_other("/st;st=DONE"));
    assert_eq!(status(&sl, "s1").await, "no check");
    assert_eq!(status(&sl, "s2").await, "no check");
    let page = raw(addr, "GET /st;st=DENY HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert!(page.text().contains("<b>Action denied.</b>"));
}

#[test]
fn stats_admin_needs_a_condition() {
    let dir = TempDir::new("stats-admin");
    dir.write(
        "s.cfg",
        "defaults
    mode http
listen stats
    bind 127.0.0.1:0
    stats uri /st
    stats admin
",
    );
    let out = run_sluice(&["-c", "-f", "s.cfg"], Some(dir.path())).stderr;
    assert!(
        out.contains("'stats admin' requires either 'if' or 'unless' followed by a condition."),
        "{out}"
    );
}

/// `scope=<text>` (`;scope=` or the `?scope=` the scope box submits) shows
/// only the proxies whose name contains the text, in any case, in HTML,
/// CSV and JSON; HAProxy 2.6 ignores a text of one byte at the end of the
/// URI and one with a byte outside `[A-Za-z0-9.:_-]`. The HTML has
/// HAProxy's scope box, filled in. (Rows as haproxy 2.6.12 lists them for
/// the same URIs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scope_shows_only_the_matching_proxies() {
    let (_s, addr, _b) = start("").await;
    assert_eq!(
        proxies(addr, "/st;csv;scope=WEB").await,
        ["web_be/s1", "web_be/BACKEND"]
    );
    assert_eq!(
        proxies(addr, "/st;scope=stat;csv").await,
        ["stats/FRONTEND", "stats/BACKEND"]
    );
    assert_eq!(
        proxies(addr, "/st;csv?scope=_be").await,
        ["web_be/s1", "web_be/BACKEND"]
    );
    assert!(proxies(addr, "/st;csv;scope=nomatch").await.is_empty());
    let all = [
        "web_be/s1",
        "web_be/BACKEND",
        "stats/FRONTEND",
        "stats/BACKEND",
    ];
    for ignored in ["/st;csv;scope=w", "/st;csv;scope=we*", "/st;csv"] {
        assert_eq!(proxies(addr, ignored).await, all, "{ignored}");
    }
    let json = raw(addr, "GET /st;json;scope=web HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .text();
    assert!(
        json.contains("\"web_be\"") && !json.contains("\"stats\""),
        "{json}"
    );
    let html = raw(addr, "GET /st?scope=web HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .text();
    assert!(
        html.contains("<form method=\"GET\">Scope : <input value=\"web\" name=\"scope\" size=\"8\" maxlength=\"20\" tabindex=\"1\"/></form>"),
        "{html}"
    );
    assert!(
        html.contains("<h2>web_be</h2>") && !html.contains("<h2>stats</h2>"),
        "{html}"
    );
}

/// The `pxname/svname` of each CSV row of `path`.
async fn proxies(addr: SocketAddr, path: &str) -> Vec<String> {
    let r = raw(addr, &format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n")).await;
    assert_eq!(r.status, 200, "{path}: {}", r.head);
    r.text()
        .lines()
        .skip(1)
        .map(|l| l.split(',').take(2).collect::<Vec<_>>().join("/"))
        .collect()
}
