//! The socket options of `bind` lines (`backlog`, `defer-accept`, `tfo`,
//! `mss`, `tcp-ut`, `interface`), read back from the listening socket
//! handed to each process and compared with what haproxy 2.6 sets on the
//! same line; the options sluice accepts with a notice, or refuses with
//! the reason, as `-c` says them; and server options compared with
//! haproxy on the wire (`redir`).

mod support;

use std::os::fd::RawFd;

use support::*;

/// An integer socket option of `fd` at IPPROTO_TCP.
fn tcp_opt(fd: RawFd, name: libc::c_int) -> i32 {
    let mut v: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt into a c_int of the size given, on an open socket.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    assert_eq!(
        rc,
        0,
        "getsockopt({name}): {}",
        std::io::Error::last_os_error()
    );
    v
}

/// The accept queue's length of the listening socket `fd` (TCP_INFO's
/// `tcpi_sacked` on a listener: the backlog listen(2) was given, capped by
/// `net.core.somaxconn`).
fn backlog(fd: RawFd) -> u32 {
    // SAFETY: getsockopt into a zeroed tcp_info of the size given.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        assert_eq!(rc, 0);
        info.tcpi_sacked
    }
}

/// What a listening socket says of the options in question.
fn options(fd: RawFd) -> [(&'static str, i64); 5] {
    [
        ("backlog", backlog(fd) as i64),
        (
            "TCP_DEFER_ACCEPT",
            tcp_opt(fd, libc::TCP_DEFER_ACCEPT) as i64,
        ),
        ("TCP_FASTOPEN", tcp_opt(fd, libc::TCP_FASTOPEN) as i64),
        ("TCP_MAXSEG", tcp_opt(fd, libc::TCP_MAXSEG) as i64),
        (
            "TCP_USER_TIMEOUT",
            tcp_opt(fd, libc::TCP_USER_TIMEOUT) as i64,
        ),
    ]
}

fn config(bind: &str) -> String {
    format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    http-request return status 200 content-type text/plain string ok
"
    )
}

/// The same `bind` line under haproxy and sluice leaves the same options
/// on the socket each was handed; without them, both leave the socket's
/// (the test's listen(2) backlog, no TCP_DEFER_ACCEPT...) as it came.
#[test]
fn socket_options_are_set_as_haproxy_sets_them() {
    if !support::haproxy::available() {
        return;
    }
    for opts in [
        "backlog 7 defer-accept tfo mss 1200 tcp-ut 3s",
        "tfo backlog 33",
        "mss -1300 tcp-ut 1500",
    ] {
        let fronts = listens(2);
        let before = options(fronts[0].fd());
        let _hap = support::haproxy::Haproxy::start(
            "bindopts-hap",
            &config(&format!("{} {opts}", fronts[0])),
            &[&fronts[0]],
        );
        let _sl = Sluice::start(&config(&format!("{} {opts}", fronts[1])));
        let (h, s) = (options(fronts[0].fd()), options(fronts[1].fd()));
        assert_eq!(h, s, "{opts}: haproxy then sluice");
        assert_ne!(h, before, "{opts}: the options changed the socket");
    }
    // A negative `mss` leaves the socket's MSS alone, in both.
    let fronts = listens(2);
    let before = options(fronts[0].fd());
    let _hap = support::haproxy::Haproxy::start(
        "bindopts-hap",
        &config(&format!("{} mss -36", fronts[0])),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&config(&format!("{} mss -36", fronts[1])));
    for f in &fronts {
        assert_eq!(options(f.fd()), before, "mss -36");
    }
}

/// What `ss` shows of the socket listening on port `port`: its local
/// address (`<ip>%<device>:<port>` when bound to a device), once one
/// listens there.
async fn listening_as(port: u16) -> String {
    let mut found = String::new();
    wait_until(std::time::Duration::from_secs(10), "the listener", || {
        let out = std::process::Command::new("ss")
            .args(["-ltnH", &format!("sport = :{port}")])
            .output()
            .expect("ss");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        found = text.split_whitespace().nth(3).unwrap_or("").to_string();
        let ok = !found.is_empty();
        async move { ok }
    })
    .await;
    found
}

/// `interface` (SO_BINDTODEVICE) on sockets each process binds, as
/// haproxy binds them. It needs privileges: skipped, saying so, without.
#[tokio::test]
async fn interface_binds_as_with_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    let probe = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    if probe.bind_device(Some(b"lo")).is_err() {
        eprintln!("skipped: SO_BINDTODEVICE needs CAP_NET_RAW");
        return;
    }
    let (_held, [hp, sp]) = hold_ports::<2>();
    let bind = |p: u16| format!("127.0.0.1:{p} interface lo");
    let _hap = support::haproxy::Haproxy::start("bindopts-dev", &config(&bind(hp)), &[]);
    let _sl = Sluice::start(&config(&bind(sp)));
    assert_eq!(
        listening_as(hp).await,
        format!("127.0.0.1%lo:{hp}"),
        "haproxy"
    );
    assert_eq!(
        listening_as(sp).await,
        format!("127.0.0.1%lo:{sp}"),
        "sluice"
    );
}

/// The accept queue length `ss` shows for the socket listening on
/// 127.0.0.1:`port` (its Send-Q), once one listens there.
async fn listen_queue(port: u16) -> u32 {
    let mut found = None;
    wait_until(std::time::Duration::from_secs(10), "the listener", || {
        let out = std::process::Command::new("ss")
            .args(["-ltnH", &format!("sport = :{port}")])
            .output()
            .expect("ss");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        found = text
            .split_whitespace()
            .nth(2)
            .and_then(|q| q.parse::<u32>().ok());
        let ok = found.is_some();
        async move { ok }
    })
    .await;
    found.unwrap_or(0)
}

/// `backlog` on a socket each process binds itself: the queue listen(2)
/// was given, as haproxy gives it. (A socket handed over listening keeps
/// its queue, in both.)
#[tokio::test]
async fn backlog_is_the_listen_queue_as_with_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    let (_held, [hp, sp]) = hold_ports::<2>();
    let _hap = support::haproxy::Haproxy::start(
        "bindopts-backlog",
        &config(&format!("127.0.0.1:{hp} backlog 17")),
        &[],
    );
    let _sl = Sluice::start(&config(&format!("127.0.0.1:{sp} backlog 17")));
    assert_eq!(listen_queue(hp).await, 17, "haproxy");
    assert_eq!(listen_queue(sp).await, 17, "sluice");
}

/// `-c`: the options sluice cannot honour are accepted with a notice that
/// says why (never silently), or refused with the reason; the values it
/// reads give HAProxy's messages.
#[test]
fn check_says_what_becomes_of_each_option() {
    let dir = TempDir::new("bindopts-check");
    let run = |bind_opts: &str, server_opts: &str| {
        let cfg = format!(
            "{}backend be\n    server s 127.0.0.1:1 {server_opts}\n",
            config(&format!("127.0.0.1:1 {bind_opts}"))
        );
        let p = dir.write("t.cfg", &cfg);
        run_sluice(&["-c", "-f", p.to_str().unwrap()], None)
    };
    for (bind, server, said) in [
        (
            "nice 10",
            "",
            "'bind 127.0.0.1:1' : 'nice' is accepted and ignored: sluice's threads serve every listener's connections alike",
        ),
        (
            "thread 1 process 1 shards 2",
            "",
            "'shards' is accepted and ignored: each of sluice's threads accepts on every listener, through one socket.",
        ),
        (
            "npn h2",
            "",
            "'npn' is accepted and ignored: rustls has no NPN",
        ),
        (
            "",
            "allow-0rtt npn h2",
            "'server be/s' : 'npn' is accepted and ignored: rustls has no NPN",
        ),
        (
            "",
            "max-reuse 10 pool-low-conn 2",
            "'max-reuse' is accepted and ignored: as HAProxy 2.6 with HTTP/1 servers",
        ),
        (
            "",
            "log-proto octet-count",
            "'log-proto' is accepted and ignored: a proxy's servers are sent no logs",
        ),
    ] {
        let out = run(bind, server);
        assert_eq!(out.code(), Some(0), "{bind}/{server}: {}", out.stderr);
        assert!(
            out.stderr.contains("[NOTICE]") && out.stderr.contains(said),
            "{bind}/{server}: {}",
            out.stderr
        );
    }
    for (bind, server, said) in [
        (
            "force-tlsv10",
            "",
            "'force-tlsv10' : TLS versions below TLSv1.2 are not supported by sluice",
        ),
        (
            "",
            "ssl verify none force-tlsv11",
            "'force-tlsv11' : TLS versions below TLSv1.2 are not supported by sluice",
        ),
        (
            "namespace blue",
            "",
            "'namespace' : network namespaces are not supported by sluice",
        ),
        (
            "",
            "proto h2 ws h1",
            "'ws h1' with 'proto h2' is not supported by sluice yet",
        ),
    ] {
        let out = run(bind, server);
        assert_eq!(out.code(), Some(1), "{bind}/{server}: {}", out.stderr);
        assert!(out.stderr.contains(said), "{bind}/{server}: {}", out.stderr);
    }
}

/// Bad values of the socket options: haproxy's exit code and message.
#[test]
fn bad_socket_option_values_are_refused_as_haproxy_refuses_them() {
    if !support::haproxy::available() {
        return;
    }
    let cases = [
        "backlog",
        "backlog 12",
        "maxconn",
        "maxconn 10",
        "defer-accept tfo",
        "mss",
        "mss 70000",
        "mss 1400",
        "tcp-ut",
        "tcp-ut x",
        "tcp-ut 20s",
        "interface",
        "curves",
        "ecdhe",
    ]
    .map(|o| (o.to_string(), config(&format!("127.0.0.1:1 {o}"))));
    support::haproxy::assert_check_agrees("bindopts-values", cases, |e| {
        support::haproxy::first_alert(e)
    });
}

/// `server ... redir <prefix>`: GET and HEAD requests get haproxy's 302
/// to the prefix and the path (the same bytes, the connection closed),
/// other methods reach the server; `show stat` counts them alike.
#[tokio::test]
async fn redir_answers_get_and_head_as_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    let backend = Backend::start("img").await;
    let dir = TempDir::new("redir");
    let fronts = listens(2);
    let cfg = |front: &Listen, sock: &str| {
        format!(
            "global
    stats socket {sock} level admin
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {front}
    default_backend be
backend be
    server s1 {} redir http://img.example.com
",
            backend.hostport()
        )
    };
    let hsock = dir.join("hap.sock");
    let _hap = support::haproxy::Haproxy::start(
        "redir-hap",
        &cfg(&fronts[0], hsock.to_str().unwrap()),
        &[&fronts[0]],
    );
    let sl = Sluice::start(&cfg(&fronts[1], "@DIR@/stats.sock"));
    let mut d = support::haproxy::Differences::default();
    for req in [
        &b"GET /a/b?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        b"HEAD http://x/q HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /a HTTP/1.0\r\n\r\n",
    ] {
        let mut got = Vec::new();
        for f in &fronts {
            got.push(support::haproxy::exchange(f.addr(), req, false).await);
        }
        d.compare(
            String::from_utf8_lossy(req).lines().next().unwrap_or(""),
            &String::from_utf8_lossy(&got[0]),
            &String::from_utf8_lossy(&got[1]),
        );
        assert!(got[1].starts_with(b"HTTP/1.1 302 Found\r\n"));
    }
    // Not redirected: the server answers.
    let post = b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let mut lines = Vec::new();
    for f in &fronts {
        let out = support::haproxy::exchange(f.addr(), post, false).await;
        lines.push(
            String::from_utf8_lossy(&out)
                .lines()
                .next()
                .unwrap_or("")
                .to_string(),
        );
    }
    d.compare("POST", &lines[0], &lines[1]);
    assert_eq!(lines[1], "HTTP/1.1 200 OK");
    assert_eq!(backend.hits(), 2, "the two POSTs only");
    let (h, s) = (show_stat(&hsock).await, show_stat(&sl.stats_socket()).await);
    for (px, sv) in [("be", "s1"), ("be", "BACKEND"), ("fe", "FRONTEND")] {
        for field in ["stot", "lbtot", "hrsp_2xx", "hrsp_3xx", "req_tot"] {
            // haproxy counts the empty connection of the readiness probe
            // (`Haproxy::start`) in its frontend's `req_tot`. (`bout` is
            // not compared: haproxy counts its forged 302s at its internal
            // size, a few bytes off the wire's.)
            if h.try_row(px, sv).is_some() && !(sv == "FRONTEND" && field == "req_tot") {
                d.compare(
                    format!("{px}/{sv} {field}"),
                    &h.get(px, sv, field),
                    &s.get(px, sv, field),
                );
            }
        }
    }
    d.assert_none();
}

/// `pool-max-conn 0` and `pool-purge-delay 0` keep no idle connection to
/// the server: separate clients each get a new one (`connect`), where by
/// default the second reuses the first's (`reuse`), whatever `max-reuse`
/// says; as haproxy counts them.
#[tokio::test]
async fn pool_limits_and_max_reuse_as_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    let backend = Backend::start("pooled").await;
    let dir = TempDir::new("poolmax");
    let mut d = support::haproxy::Differences::default();
    for (opts, connects) in [
        ("", 1),
        ("pool-max-conn 0", 3),
        ("pool-purge-delay 0", 3),
        // haproxy 2.6 counts no reuse of an HTTP/1 connection: the
        // option changes nothing there (sluice says so in a notice).
        ("max-reuse 0", 1),
        ("max-reuse 1", 1),
        // TCP Fast Open: the same exchanges (the backend takes no Fast
        // Open, so each connection does a plain handshake after its SYN).
        ("tfo", 1),
    ] {
        let fronts = listens(2);
        let cfg = |front: &Listen, sock: &str| {
            format!(
                "global
    stats socket {sock} level admin
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {front}
    default_backend be
backend be
    http-reuse always
    server s1 {} {opts}
",
                backend.hostport()
            )
        };
        let hsock = dir.join("hap.sock");
        let _hap = support::haproxy::Haproxy::start(
            "poolmax-hap",
            &cfg(&fronts[0], hsock.to_str().unwrap()),
            &[&fronts[0]],
        );
        let sl = Sluice::start(&cfg(&fronts[1], "@DIR@/stats.sock"));
        let socks = [hsock.clone(), sl.stats_socket()];
        for (f, sock) in fronts.iter().zip(&socks) {
            // One client after the other, each on its own connection,
            // once the previous one's server connection is back in the
            // pool (or closed), as `idle_conn_cur` tells.
            for _ in 0..3 {
                let mut c = HttpConn::connect(f.addr()).await;
                assert_eq!(c.get("/").await.status, 200);
                drop(c);
                let want = u64::from(connects == 1);
                wait_until(
                    std::time::Duration::from_secs(5),
                    "the idle count",
                    || async {
                        let st = show_stat(sock).await;
                        st.num("be", "s1", "idle_conn_cur") + st.num("be", "s1", "safe_conn_cur")
                            == want
                    },
                )
                .await;
            }
        }
        let (h, s) = (show_stat(&hsock).await, show_stat(&sl.stats_socket()).await);
        for field in ["connect", "reuse"] {
            d.compare(
                format!("{opts:?} be/s1 {field}"),
                &h.get("be", "s1", field),
                &s.get("be", "s1", field),
            );
        }
        assert_eq!(s.num("be", "s1", "connect"), connects, "{opts:?}");
    }
    d.assert_none();
}

/// Server option values: haproxy's exit code and message.
#[test]
fn server_option_values_are_refused_as_haproxy_refuses_them() {
    if !support::haproxy::available() {
        return;
    }
    let cases = [
        "ws",
        "ws foo",
        "ws auto",
        "ws h1",
        "ws h2 proto h2",
        "redir",
        "redir http://img.example.com",
        "pool-max-conn",
        "pool-max-conn -2",
        "pool-max-conn -1",
        "pool-max-conn 10",
        "pool-purge-delay",
        "pool-purge-delay x",
        "pool-purge-delay 0",
        "max-reuse",
        "tfo",
        "no-tfo",
        "tfo extra",
    ]
    .map(|o| {
        (
            o.to_string(),
            format!(
                "{}backend be\n    server s 127.0.0.1:1 {o}\n",
                config("127.0.0.1:1")
            ),
        )
    });
    support::haproxy::assert_check_agrees("srvopts-values", cases, |e| {
        support::haproxy::first_alert(e)
    });
}
