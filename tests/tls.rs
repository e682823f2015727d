//! TLS with rustls: termination on `bind ... ssl` (certificates picked by
//! SNI, versions, handshake failures counted and survived, `ssl_fc`
//! fetches, certificates replaced by a reload) and TLS to servers (`server
//! ... ssl` with verification, and its checks: L6OK, L6TOUT, L6RSP).
//! Certificates are made at test time.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::client::TlsStream;

use support::*;

/// A test CA that signs leaf certificates.
struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Ca { issuer }
    }

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A PEM holding the certificate then its key (HAProxy's layout).
    fn leaf(&self, names: &[&str]) -> String {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, names.first().copied().unwrap_or("x"));
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        format!("{}{}", cert.pem(), key.serialize_pem())
    }

    fn roots(&self) -> rustls::RootCertStore {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.issuer.der().clone()).unwrap();
        roots
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn client_config(roots: rustls::RootCertStore) -> Arc<rustls::ClientConfig> {
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(cfg)
}

/// Accepts any certificate: for looking at what the server presents.
/// `signatures`: the handshake signatures are still checked (webpki
/// parses the certificate for that, and refuses some OpenSSL accepts).
#[derive(Debug)]
struct AnyCert {
    signatures: bool,
}

impl rustls::client::danger::ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        if !self.signatures {
            return Ok(rustls::client::danger::HandshakeSignatureValid::assertion());
        }
        rustls::crypto::verify_tls12_signature(
            m,
            c,
            d,
            &provider().signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        if !self.signatures {
            return Ok(rustls::client::danger::HandshakeSignatureValid::assertion());
        }
        rustls::crypto::verify_tls13_signature(
            m,
            c,
            d,
            &provider().signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

fn any_cert_config() -> Arc<rustls::ClientConfig> {
    any_cert_config_with(true)
}

fn any_cert_config_with(signatures: bool) -> Arc<rustls::ClientConfig> {
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCert { signatures }))
            .with_no_client_auth(),
    )
}

async fn tls_connect(
    addr: SocketAddr,
    sni: &str,
    cfg: Arc<rustls::ClientConfig>,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from(sni.to_string()).unwrap();
    within(
        REQ_DEADLINE,
        "TLS handshake",
        tokio_rustls::TlsConnector::from(cfg).connect(name, tcp),
    )
    .await
}

/// The names of the certificate the server presented.
fn presented_names(s: &TlsStream<TcpStream>) -> Vec<String> {
    let certs = s.get_ref().1.peer_certificates().expect("a certificate");
    sluice::tls::certs::cert_names(&certs[0])
}

fn presented_der(s: &TlsStream<TcpStream>) -> Vec<u8> {
    s.get_ref().1.peer_certificates().expect("a certificate")[0].to_vec()
}

/// A GET over an established TLS connection (keep-alive).
async fn tls_get(s: &mut BufReader<TlsStream<TcpStream>>, path: &str) -> Response {
    let req = format!("GET {path} HTTP/1.1\r\nhost: site.test\r\n\r\n");
    s.get_mut().write_all(req.as_bytes()).await.unwrap();
    within(REQ_DEADLINE, "TLS response", read_response(s, false))
        .await
        .unwrap()
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Whether curl runs here; under CI it must (`.ci/run` installs it), so
/// the curl half of a test is never skipped there.
fn have_curl() -> bool {
    let ok = std::process::Command::new("curl")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok || std::env::var_os("CI").is_none(),
        "curl is required under CI (.ci/run installs it)"
    );
    ok
}

/// curl's status code and body (`-k` unless a CA is given).
fn curl(args: &[&str]) -> (String, String) {
    let out = std::process::Command::new("curl")
        .args(["-s", "-m", "10", "-o", "-", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.to_string(), body.to_string())
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminates_tls_for_rustls_and_curl_clients() {
    let ca = Ca::new("sluice test CA");
    let be = Backend::start("app").await;
    let fe = Listen::new();
    let port = fe.port();
    let dir = TempDir::new("tls");
    let pem = write(dir.path(), "site.pem", &ca.leaf(&["site.test"]));
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {fe} ssl crt {pem} alpn http/1.1
    http-request set-header x-proto https if {{ ssl_fc }}
    default_backend be
backend be
    server app {}
",
        be.hostport()
    ));
    // The harness's readiness probe connected without a handshake: a
    // failed one, counted.
    wait_until(Duration::from_secs(5), "the probe counted", || async {
        show_stat(&s.stats_socket())
            .await
            .num("fe", "FRONTEND", "ssl_failed_handshake")
            == 1
    })
    .await;
    let first = show_stat(&s.stats_socket()).await;
    let before = first.num("fe", "FRONTEND", "ssl_sess");
    let failed = first.num("fe", "FRONTEND", "ssl_failed_handshake");
    let tls = tls_connect(addr(port), "site.test", client_config(ca.roots()))
        .await
        .unwrap();
    // ALPN: the client offers h2 first, the listener only http/1.1 (h2
    // by ALPN is tested in tests/http2.rs).
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let mut conn = BufReader::new(tls);
    for i in 0..3 {
        let r = tls_get(&mut conn, &format!("/r{i}")).await;
        assert_eq!(r.status, 200, "{}", r.head);
        assert_eq!(r.backend(), "app");
    }
    assert_eq!(be.hits(), 3);
    let stat = show_stat(&s.stats_socket()).await;
    assert_eq!(stat.num("fe", "FRONTEND", "ssl_sess"), before + 1);
    assert_eq!(stat.num("fe", "FRONTEND", "ssl_failed_handshake"), failed);
    if have_curl() {
        let ca_file = write(dir.path(), "ca.pem", &ca.pem());
        let resolve = format!("site.test:{port}:127.0.0.1");
        let url = format!("https://site.test:{port}/curl");
        let (code, _) = curl(&["--cacert", &ca_file, "--resolve", &resolve, &url]);
        assert_eq!(code, "200", "curl through sluice with the CA");
        assert_eq!(be.hits(), 4);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sni_picks_the_certificate_from_a_directory() {
    let ca = Ca::new("sni CA");
    let (fe, fe_strict) = (Listen::new(), Listen::new());
    let (port, strict) = (fe.port(), fe_strict.port());
    let dir = TempDir::new("tlsdir");
    let certs = dir.path().join("certs");
    std::fs::create_dir(&certs).unwrap();
    write(&certs, "a.pem", &ca.leaf(&["a.test"]));
    write(&certs, "b.pem", &ca.leaf(&["*.b.test"]));
    write(&certs, "c.pem", &ca.leaf(&["c.test", "www.c.test"]));
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    timeout client 5s
frontend fe
    bind {fe} ssl crt {0}
    bind {fe_strict} ssl crt {0} strict-sni
    http-request return status 200 content-type text/plain string sni-b if {{ ssl_fc_sni -m end .b.test }}
    http-request return status 200 content-type text/plain string other
",
        certs.display()
    ));
    for (sni, want) in [
        ("a.test", "a.test"),
        ("x.b.test", "*.b.test"),
        ("www.c.test", "c.test"),
        // Unknown name: the default, the directory's first certificate.
        ("nobody.test", "a.test"),
    ] {
        let tls = tls_connect(addr(port), sni, any_cert_config())
            .await
            .unwrap();
        let names = presented_names(&tls);
        assert_eq!(names.first().map(String::as_str), Some(want), "SNI {sni}");
        let mut conn = BufReader::new(tls);
        let r = tls_get(&mut conn, "/").await;
        let expected = if sni.ends_with(".b.test") {
            "sni-b"
        } else {
            "other"
        };
        assert_eq!(r.text(), expected, "ssl_fc_sni for {sni}");
    }
    // The client verifying against the CA accepts the wildcard.
    let tls = tls_connect(addr(port), "deep.b.test", client_config(ca.roots())).await;
    assert!(tls.is_ok(), "{tls:?}");
    // `strict-sni`: an unknown name gets no certificate at all.
    assert!(
        tls_connect(addr(strict), "nobody.test", any_cert_config())
            .await
            .is_err()
    );
    let tls = tls_connect(addr(strict), "a.test", any_cert_config())
        .await
        .unwrap();
    assert_eq!(presented_names(&tls), ["a.test"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_handshakes_are_counted_and_survived() {
    let ca = Ca::new("fail CA");
    let fe = Listen::new();
    let port = fe.port();
    let dir = TempDir::new("tlsfail");
    let pem = write(dir.path(), "site.pem", &ca.leaf(&["site.test"]));
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout client 5s
frontend fe
    bind {fe} ssl crt {pem} ssl-min-ver TLSv1.3
    http-request return status 200 content-type text/plain string fine if {{ ssl_fc_protocol TLSv1.3 }}
"
    ));
    let sock = s.stats_socket();
    let before = show_stat(&sock)
        .await
        .num("fe", "FRONTEND", "ssl_failed_handshake");
    // A plaintext HTTP client on the TLS port.
    let mut plain = TcpStream::connect(addr(port)).await.unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let _ = within(
        REQ_DEADLINE,
        "plaintext closed",
        plain.read_to_end(&mut buf),
    )
    .await;
    assert!(
        !String::from_utf8_lossy(&buf).contains("HTTP/1.1 200"),
        "a plaintext request is not served"
    );
    // A TLS 1.2-only client against `ssl-min-ver TLSv1.3`.
    let tls12 = Arc::new(
        rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS12])
            .unwrap()
            .with_root_certificates(ca.roots())
            .with_no_client_auth(),
    );
    assert!(tls_connect(addr(port), "site.test", tls12).await.is_err());
    let mut expected = before + 2;
    if have_curl() {
        // TLS 1.1 (curl / OpenSSL): refused, rustls does not do it.
        let url = format!("https://127.0.0.1:{port}/");
        let (code, _) = curl(&["-k", "--tlsv1.1", "--tls-max", "1.1", &url]);
        assert_eq!(code, "000", "a TLS 1.1 client gets no response");
        expected += 1;
    }
    wait_until(Duration::from_secs(5), "failures counted", || async {
        show_stat(&sock)
            .await
            .num("fe", "FRONTEND", "ssl_failed_handshake")
            >= expected
    })
    .await;
    // The process is fine and serves the next client.
    let tls = tls_connect(addr(port), "site.test", client_config(ca.roots()))
        .await
        .unwrap();
    let mut conn = BufReader::new(tls);
    let r = tls_get(&mut conn, "/").await;
    assert_eq!((r.status, r.text().as_str()), (200, "fine"));
    assert!(
        s.stderr().contains("SSL handshake failure"),
        "{}",
        s.stderr()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_to_https_unless_ssl_fc() {
    let ca = Ca::new("redirect CA");
    let be = Backend::start("app").await;
    let (fe_plain, fe_secure) = (Listen::new(), Listen::new());
    let (plain, secure) = (fe_plain.port(), fe_secure.port());
    let dir = TempDir::new("tlsredir");
    let pem = write(dir.path(), "site.pem", &ca.leaf(&["site.test"]));
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {fe_plain}
    bind {fe_secure} ssl crt {pem}
    http-request redirect scheme https unless {{ ssl_fc }}
    default_backend be
backend be
    server app {}
",
        be.hostport()
    ));
    let mut c = HttpConn::connect(addr(plain)).await;
    let r = c
        .raw(b"GET /page?x=1 HTTP/1.1\r\nhost: site.test\r\n\r\n", false)
        .await
        .unwrap();
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("https://site.test/page?x=1"));
    assert_eq!(be.hits(), 0);
    let tls = tls_connect(addr(secure), "site.test", client_config(ca.roots()))
        .await
        .unwrap();
    let mut conn = BufReader::new(tls);
    let r = tls_get(&mut conn, "/page").await;
    assert_eq!(r.status, 200);
    assert_eq!(be.hits(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_serves_a_replaced_certificate_and_keeps_connections() {
    let ca = Ca::new("reload CA");
    let be = Backend::start("app").await;
    let (_hold, port) = hold_port();
    let cfg = format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 5s
frontend fe
    bind 127.0.0.1:{port} ssl crt @DIR@/site.pem
    default_backend be
backend be
    server app {}
",
        be.hostport()
    );
    // The file must exist before start: written where @DIR@ points.
    let s = {
        let b = Sluice::builder(&cfg);
        std::fs::write(b.dir_path().join("site.pem"), ca.leaf(&["site.test"])).unwrap();
        b.start()
    };
    let old = tls_connect(addr(port), "site.test", client_config(ca.roots()))
        .await
        .unwrap();
    let old_der = presented_der(&old);
    let mut old = BufReader::new(old);
    assert_eq!(tls_get(&mut old, "/before").await.status, 200);
    // A new certificate (new key) for the same name, then a reload.
    std::fs::write(s.path("site.pem"), ca.leaf(&["site.test"])).unwrap();
    let reply = cli(&s.stats_socket(), "reload").await;
    assert!(reply.starts_with("Success=1"), "{reply}");
    let fresh = tls_connect(addr(port), "site.test", client_config(ca.roots()))
        .await
        .unwrap();
    assert_ne!(
        presented_der(&fresh),
        old_der,
        "new handshakes get the new certificate"
    );
    let mut fresh = BufReader::new(fresh);
    assert_eq!(tls_get(&mut fresh, "/new").await.status, 200);
    // The connection made before the reload goes on.
    assert_eq!(tls_get(&mut old, "/after").await.status, 200);
    assert_eq!(be.hits(), 3);
}

/// A TLS HTTP server for the server-side tests: answers every request with
/// 200 and the SNI it was reached with.
async fn tls_backend(pem: &str) -> SocketAddr {
    let chain: Vec<CertificateDer<'static>> =
        rustls::pki_types::pem::PemObject::pem_slice_iter(pem.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
    let key = rustls::pki_types::pem::PemObject::from_pem_slice(pem.as_bytes()).unwrap();
    let cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = l.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let sni = tls.get_ref().1.server_name().unwrap_or("-").to_string();
                let mut r = BufReader::new(tls);
                loop {
                    let mut head = String::new();
                    loop {
                        let mut line = String::new();
                        match tokio::io::AsyncBufReadExt::read_line(&mut r, &mut line).await {
                            Ok(0) | Err(_) => return,
                            Ok(_) => {}
                        }
                        head.push_str(&line);
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let body = format!("sni={sni}");
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nx-backend: tls\r\n\r\n{body}",
                        body.len()
                    );
                    if r.get_mut().write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_servers_with_verification() {
    let ca = Ca::new("backend CA");
    let other_ca = Ca::new("someone else");
    let upstream = tls_backend(&ca.leaf(&["backend.test"])).await;
    let fe = Listen::new();
    let port = fe.port();
    let dir = TempDir::new("tlsup");
    let ca_file = write(dir.path(), "ca.pem", &ca.pem());
    let wrong_ca = write(dir.path(), "other.pem", &other_ca.pem());
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
    timeout check 1s
frontend fe
    bind {fe}
    use_backend bad if {{ path_beg /bad }}
    default_backend good
backend good
    server up {upstream} ssl verify required ca-file {ca_file} sni str(backend.test)
backend bad
    retries 0
    server up {upstream} ssl ca-file {wrong_ca} sni str(backend.test)
backend badchk
    server up {upstream} ssl ca-file {wrong_ca} sni str(backend.test) check inter 100ms fall 1
"
    ));
    let sock = s.stats_socket();
    let mut c = HttpConn::connect(addr(port)).await;
    for _ in 0..3 {
        let r = c.get("/ok").await;
        assert_eq!(r.status, 200, "{}", r.head);
        assert_eq!(r.text(), "sni=backend.test");
    }
    let stat = show_stat(&sock).await;
    // One TLS connection, reused from the pool.
    assert_eq!(stat.num("good", "up", "ssl_sess"), 1);
    assert_eq!(stat.num("good", "up", "reuse"), 2);
    // A server whose certificate does not verify: 503, and the check says why.
    let r = get(addr(port), "/bad").await;
    assert_eq!(r.status, 503);
    wait_until(
        Duration::from_secs(5),
        "check reports the TLS failure",
        || async {
            let st = show_stat(&sock).await;
            st.get("badchk", "up", "check_status") == "L6RSP"
                && st
                    .get("badchk", "up", "last_chk")
                    .contains("SSL handshake failure")
        },
    )
    .await;
    assert!(
        show_stat(&sock)
            .await
            .num("bad", "up", "ssl_failed_handshake")
            >= 1
    );
    assert!(
        s.stderr()
            .contains("Connection to server bad/up failed: SSL handshake failure"),
        "{}",
        s.stderr()
    );
}

/// A TCP check of an `ssl` server runs the TLS handshake too, as
/// HAProxy's: a server completing it is UP with `L6OK` ("Layer6 check
/// passed"); one that accepts TCP but never answers the ClientHello is
/// DOWN with `L6TOUT` ("Layer6 timeout") once `timeout connect` (300 ms,
/// inter is 3 s) has passed, as its check_duration shows. `check-ssl`
/// does the same for checks sent elsewhere (`port`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_checks_report_l6ok_and_l6tout() {
    let ca = Ca::new("check CA");
    let upstream = tls_backend(&ca.leaf(&["backend.test"])).await;
    let mute = tcp_server(|s| async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(s);
    })
    .await;
    let dir = TempDir::new("tlschk");
    let ca_file = write(dir.path(), "ca.pem", &ca.pem());
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 300ms
    timeout client 5s
    timeout server 5s
backend be
    server tls {upstream} ssl verify required ca-file {ca_file} sni str(backend.test) check inter 100ms rise 1 fall 1
    server mute {mute} ssl verify none check inter 3s fall 1
backend portchk
    server viassl 127.0.0.1:1 check check-ssl port {port} ca-file {ca_file} sni str(backend.test) inter 100ms rise 1
    server plain 127.0.0.1:1 check port {port} inter 100ms rise 1
",
        port = upstream.port()
    ));
    let sock = s.stats_socket();
    let csv = wait_check(&sock, "be", "tls", "UP", "L6OK").await;
    assert_eq!(csv.get("be", "tls", "check_desc"), "Layer6 check passed");
    let csv = wait_check(&sock, "be", "mute", "DOWN", "L6TOUT").await;
    assert_eq!(csv.get("be", "mute", "check_desc"), "Layer6 timeout");
    let ms = csv.num("be", "mute", "check_duration");
    assert!((290..1500).contains(&ms), "L6TOUT after {ms} ms");
    // `check-ssl`: the check sent to another port (of a server without
    // `ssl`) runs the handshake, verified with the server's `ca-file`;
    // without it the same check is a plain TCP connect.
    wait_check(&sock, "portchk", "viassl", "UP", "L6OK").await;
    wait_check(&sock, "portchk", "plain", "UP", "L4OK").await;
}

#[test]
fn tls_config_errors_name_the_line_and_the_reason() {
    let dir = TempDir::new("tlscfg");
    let ca = Ca::new("cfg CA");
    write(dir.path(), "good.pem", &ca.leaf(&["site.test"]));
    write(dir.path(), "nokey.pem", &ca.pem());
    write(dir.path(), "garbage.pem", "not a certificate\n");
    let check = |body: &str| {
        let text = format!(
            "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\n{body}"
        );
        std::fs::write(dir.join("t.cfg"), text).unwrap();
        run_sluice(&["-c", "-f", "t.cfg"], Some(dir.path()))
    };
    let out = check("frontend fe\n    bind 127.0.0.1:1 ssl crt nokey.pem\n");
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr.contains("[t.cfg:7]")
            && out
                .stderr
                .contains("unable to load SSL private key from PEM file 'nokey.pem'"),
        "{}",
        out.stderr
    );
    let out = check("frontend fe\n    bind 127.0.0.1:1 ssl crt garbage.pem\n");
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr.contains("[t.cfg:7]") && out.stderr.contains("garbage.pem"),
        "{}",
        out.stderr
    );
    let out = check("frontend fe\n    bind 127.0.0.1:1 ssl crt missing.pem\n");
    assert_ne!(out.code(), Some(0));
    assert!(out.stderr.contains("'missing.pem'"), "{}", out.stderr);
    let out = check("frontend fe\n    bind 127.0.0.1:1 ssl\n");
    assert!(
        out.stderr.contains("no SSL certificate specified for bind"),
        "{}",
        out.stderr
    );
    let out = check("frontend fe\n    bind 127.0.0.1:1 ssl crt good.pem bogus-opt\n");
    assert!(
        out.stderr
            .contains("'bind 127.0.0.1:1' unknown keyword 'bogus-opt'"),
        "{}",
        out.stderr
    );
    // HAProxy 2.6: `verify required` is the default, and needs a CA.
    let out = check("backend be\n    server s 127.0.0.1:1 ssl\n");
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr.contains("[t.cfg:7]")
            && out
                .stderr
                .contains("verify is enabled by default but no CA file specified"),
        "{}",
        out.stderr
    );
    let out = check("listen be\n    bind 127.0.0.1:1\n    server s 127.0.0.1:1 ssl verify none\n");
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let out = check(
        "frontend fe\n    bind 127.0.0.1:1 ssl crt good.pem ciphers ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-SHA alpn h2,http/1.1\n",
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    // A notice, not a warning: the list's other ciphers serve, and a
    // `zero-warning` configuration that names DHE ones still starts.
    assert!(
        out.stderr
            .lines()
            .any(|l| l.starts_with("[NOTICE]") && l.contains("ignores 'DHE-RSA-AES256-SHA'")),
        "{}",
        out.stderr
    );
    // h2 is spoken: no warning about it.
    assert!(!out.stderr.contains("'h2'"), "{}", out.stderr);
}

/// Log lines of a TLS frontend, as haproxy 2.6 writes them (checked
/// against it): a plaintext client on the TLS port is
/// `<client> [<date>] fe/1: SSL handshake failure`, a client that closed
/// without a byte is not logged, and `%ft` of a TLS request is `fe~`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_failures_and_tls_requests_are_logged_as_haproxy() {
    let ca = Ca::new("log CA");
    let sys = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sys.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let fe = Listen::new();
    let port = fe.port();
    let dir = TempDir::new("tlslog");
    let pem = write(dir.path(), "site.pem", &ca.leaf(&["site.test"]));
    let _s = Sluice::start(&format!(
        "global
    log {} local0
defaults
    mode http
    log global
    option httplog
    timeout client 5s
frontend fe
    bind {fe} ssl crt {pem}
    http-request return status 200 content-type text/plain string ok
",
        sys.local_addr().unwrap()
    ));
    let mut plain = TcpStream::connect(addr(port)).await.unwrap();
    let local = plain.local_addr().unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut sink = Vec::new();
    let _ = within(REQ_DEADLINE, "closed", plain.read_to_end(&mut sink)).await;
    let tls = tls_connect(addr(port), "site.test", client_config(ca.roots()))
        .await
        .unwrap();
    let mut conn = BufReader::new(tls);
    assert_eq!(tls_get(&mut conn, "/").await.status, 200);
    let lines = tokio::task::spawn_blocking(move || {
        let mut out: Vec<String> = Vec::new();
        let mut buf = vec![0u8; 4096];
        let end = std::time::Instant::now() + Duration::from_secs(10);
        while out.len() < 2 && std::time::Instant::now() < end {
            if let Ok(n) = sys.recv(&mut buf) {
                out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
            }
        }
        // Nothing more comes (the readiness probe sent no byte).
        std::thread::sleep(Duration::from_millis(200));
        if let Ok(n) = sys.recv(&mut buf) {
            out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        out
    })
    .await
    .unwrap();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    let failure = format!("]: {local} [");
    assert!(
        lines[0].contains(&failure) && lines[0].ends_with("] fe/1: SSL handshake failure\n"),
        "{lines:#?}"
    );
    assert!(lines[1].contains("] fe~ fe/<NOSRV> "), "{lines:#?}");
}

/// A plain TCP server that sends back what it reads, until the peer closes.
async fn echo_server() -> SocketAddr {
    tcp_server(|mut s| async move {
        let (mut r, mut w) = s.split();
        let _ = tokio::io::copy(&mut r, &mut w).await;
        let _ = w.shutdown().await;
    })
    .await
}

/// `mode tcp` terminates TLS on `bind ... ssl` (the server sees clear
/// bytes, half-close carried) and originates it to `server ... ssl`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode_tcp_terminates_and_originates_tls() {
    let ca = Ca::new("tcp CA");
    let echo = echo_server().await;
    let upstream = tls_backend(&ca.leaf(&["backend.test"])).await;
    let (fe_tls_in, fe_clear_in) = (Listen::new(), Listen::new());
    let (tls_in, clear_in) = (fe_tls_in.port(), fe_clear_in.port());
    let dir = TempDir::new("tlstcp");
    let pem = write(dir.path(), "site.pem", &ca.leaf(&["site.test"]));
    let ca_file = write(dir.path(), "ca.pem", &ca.pem());
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode tcp
    timeout connect 2s
    timeout client 5s
    timeout server 5s
frontend tls_in
    bind {fe_tls_in} ssl crt {pem}
    default_backend echo
backend echo
    server e {echo}
frontend clear_in
    bind {fe_clear_in}
    default_backend up
backend up
    server up {upstream} ssl verify required ca-file {ca_file} sni str(backend.test)
"
    ));
    let sock = s.stats_socket();
    let mut tls = tls_connect(addr(tls_in), "site.test", client_config(ca.roots()))
        .await
        .unwrap();
    tls.write_all(b"ping over tls").await.unwrap();
    // close_notify: the echo server sees the end and closes in turn.
    tls.shutdown().await.unwrap();
    let mut back = Vec::new();
    within(REQ_DEADLINE, "echo", tls.read_to_end(&mut back))
        .await
        .unwrap();
    assert_eq!(back, b"ping over tls");
    wait_until(Duration::from_secs(5), "session ended", || async {
        let st = show_stat(&sock).await;
        st.num("tls_in", "FRONTEND", "scur") == 0 && st.num("tls_in", "FRONTEND", "bin") == 13
    })
    .await;
    let st = show_stat(&sock).await;
    assert_eq!(st.num("tls_in", "FRONTEND", "bout"), 13);
    assert!(st.num("tls_in", "FRONTEND", "ssl_sess") >= 1);
    // Clear in, TLS (verified, with SNI) to the server.
    let mut c = TcpStream::connect(addr(clear_in)).await.unwrap();
    c.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut r = BufReader::new(c);
    let resp = within(REQ_DEADLINE, "response", read_response(&mut r, false))
        .await
        .unwrap();
    assert_eq!(resp.status, 200, "{}", resp.head);
    assert_eq!(resp.text(), "sni=backend.test");
    // (The harness's readiness probe made one too.)
    assert!(show_stat(&sock).await.num("up", "up", "ssl_sess") >= 1);
}

/// Certificates OpenSSL (so haproxy 2.6, checked against it) loads with
/// their key: an X.509 v1 certificate and one with a critical extension
/// nobody knows are valid, and served; a key that is not the
/// certificate's is refused with HAProxy's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_haproxy_loads_are_loaded_and_served() {
    let dir = TempDir::new("tlspem");
    let v1 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/x509-v1-ec.pem");
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["crit.test".to_string()]).unwrap();
    let mut ext = rcgen::CustomExtension::from_oid_content(&[1, 2, 3, 4], vec![0x05, 0x00]);
    ext.set_criticality(true);
    params.custom_extensions.push(ext);
    let cert = params.self_signed(&key).unwrap();
    let crit = write(
        dir.path(),
        "crit.pem",
        &format!("{}{}", cert.pem(), key.serialize_pem()),
    );
    let other = KeyPair::generate().unwrap();
    write(
        dir.path(),
        "mismatch.pem",
        &format!("{}{}", cert.pem(), other.serialize_pem()),
    );
    std::fs::write(
        dir.join("bad.cfg"),
        "defaults\n    mode http\n    timeout client 1s\nfrontend fe\n    bind 127.0.0.1:1 ssl crt mismatch.pem\n",
    )
    .unwrap();
    let out = run_sluice(&["-c", "-f", "bad.cfg"], Some(dir.path()));
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr.contains("[bad.cfg:5]")
            && out.stderr.contains(
                "inconsistencies between private key and certificate loaded from PEM file 'mismatch.pem'"
            ),
        "{}",
        out.stderr
    );
    let (_held, [p1, p2]) = hold_ports::<2>();
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    timeout client 5s
frontend fe
    bind 127.0.0.1:{p1} ssl crt {}
    bind 127.0.0.1:{p2} ssl crt {crit}
    http-request return status 200 content-type text/plain string ok
",
        v1.display()
    ));
    for (port, name) in [(p1, "v1.test"), (p2, "crit.test")] {
        // webpki (rustls' client) refuses these certificates: their
        // signatures are not checked, only what is served.
        let tls = tls_connect(addr(port), name, any_cert_config_with(false))
            .await
            .unwrap();
        assert_eq!(presented_names(&tls), [name]);
        let mut conn = BufReader::new(tls);
        assert_eq!(tls_get(&mut conn, "/").await.text(), "ok");
    }
}

/// A rustls client accepting any server certificate, with these versions,
/// ALPN protocols and client certificate (a PEM: chain then key).
fn client_with(
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[&str],
    client_pem: Option<&str>,
) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::PrivateKeyDer;
    use rustls::pki_types::pem::PemObject;
    let b = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert { signatures: true }));
    let mut cfg = match client_pem {
        None => b.with_no_client_auth(),
        Some(pem) => {
            let chain = CertificateDer::pem_slice_iter(pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_slice(pem.as_bytes()).unwrap();
            b.with_client_auth_cert(chain, key).unwrap()
        }
    };
    cfg.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    Arc::new(cfg)
}

/// Whether a request over `tls` gets an answer (a client certificate the
/// server refuses in TLS 1.3 shows after the handshake, at the first read).
async fn answers(tls: TlsStream<TcpStream>) -> bool {
    let mut conn = BufReader::new(tls);
    let req = b"GET / HTTP/1.1\r\nhost: site.test\r\n\r\n";
    if conn.get_mut().write_all(req).await.is_err() {
        return false;
    }
    let mut first = [0u8; 12];
    let read = within(REQ_DEADLINE, "TLS answer", conn.read_exact(&mut first)).await;
    read.is_ok() && first.starts_with(b"HTTP/1.1 200")
}

/// `crt-list` lines with `[...]` options and SNI filters, as HAProxy 2.6
/// reads them: each line's options (ALPN, versions, client certificate
/// verification) apply to the handshakes whose SNI picks its certificate,
/// the first line's to those getting the default; `!*` keeps the default
/// certificate's own names out; `!name` keeps the line's wildcard off one
/// name. Options rustls cannot honour, or unknown ones, are errors naming
/// the crt-list file and line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crt_list_line_options_apply_to_the_handshakes_they_pick() {
    use rustls::version::{TLS12, TLS13};
    let ca = Ca::new("crt-list CA");
    let client_ca = Ca::new("client CA");
    let dir = TempDir::new("crtlist");
    write(dir.path(), "default.pem", &ca.leaf(&["default.test"]));
    write(dir.path(), "a.pem", &ca.leaf(&["a.test"]));
    write(dir.path(), "w.pem", &ca.leaf(&["*.w.test"]));
    write(dir.path(), "m.pem", &ca.leaf(&["m.test"]));
    write(dir.path(), "client-ca.pem", &client_ca.pem());
    let client = client_ca.leaf(&["client.test"]);
    let list = write(
        dir.path(),
        "list.txt",
        &format!(
            "# the default certificate, by no name of its own
default.pem !*
a.pem [alpn h2,http/1.1 ssl-min-ver TLSv1.3] a.test
{0}/w.pem [ssl-max-ver TLSv1.2] *.w.test !bad.w.test

m.pem [verify required ca-file {0}/client-ca.pem] m.test
",
            dir.path().display()
        ),
    );
    let (_held, port) = hold_port();
    let _s = Sluice::builder(&format!(
        "global
    crt-base {0}
defaults
    mode http
    timeout client 5s
frontend fe
    bind 127.0.0.1:{port} ssl crt-list {list} alpn http/1.1
    http-request return status 200 content-type text/plain string ok
",
        dir.path().display()
    ))
    .start();
    let both = &[&TLS12, &TLS13][..];
    let h2 = &["h2", "http/1.1"][..];
    // a.test: its line's ALPN (h2) and minimum version (TLS 1.3).
    let tls = tls_connect(addr(port), "a.test", client_with(both, h2, None))
        .await
        .unwrap();
    assert_eq!(presented_names(&tls), ["a.test"]);
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    assert!(
        tls_connect(addr(port), "a.test", client_with(&[&TLS12], h2, None))
            .await
            .is_err(),
        "TLS 1.2 to a TLS 1.3-only line"
    );
    // The default certificate (no SNI match, `!*`): the bind line's ALPN.
    for sni in ["default.test", "nobody.test"] {
        let tls = tls_connect(addr(port), sni, client_with(both, h2, None))
            .await
            .unwrap();
        assert_eq!(presented_names(&tls), ["default.test"], "{sni}");
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
        assert!(answers(tls).await);
    }
    // The wildcard line: TLS 1.2 at most; `!bad.w.test` is not its.
    let tls = tls_connect(addr(port), "x.w.test", client_with(both, h2, None))
        .await
        .unwrap();
    assert_eq!(presented_names(&tls), ["*.w.test"]);
    assert_eq!(
        tls.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    assert!(answers(tls).await);
    let tls = tls_connect(addr(port), "bad.w.test", client_with(both, h2, None))
        .await
        .unwrap();
    assert_eq!(presented_names(&tls), ["default.test"]);
    assert_eq!(
        tls.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
    // m.test verifies client certificates against its line's CA.
    let tls = tls_connect(addr(port), "m.test", client_with(both, h2, None))
        .await
        .unwrap();
    assert!(!answers(tls).await, "no client certificate");
    let tls = tls_connect(addr(port), "m.test", client_with(both, h2, Some(&client)))
        .await
        .unwrap();
    assert!(answers(tls).await, "a client certificate of the CA");
    // The other lines ask for none.
    let tls = tls_connect(addr(port), "x.w.test", client_with(both, h2, None))
        .await
        .unwrap();
    assert!(answers(tls).await);

    let check = |line: &str| {
        std::fs::write(dir.join("bad.txt"), format!("# one\n{line}\n")).unwrap();
        std::fs::write(
            dir.join("t.cfg"),
            "defaults\n    mode http\n    timeout client 1s\nfrontend fe\n    bind 127.0.0.1:1 ssl crt-list bad.txt\n",
        )
        .unwrap();
        run_sluice(&["-c", "-f", "t.cfg"], Some(dir.path()))
    };
    for (line, why) in [
        ("a.pem [npn h2] a.test", "'npn' is not supported by sluice"),
        (
            "a.pem [allow-0rtt]",
            "'allow-0rtt' is not supported by sluice",
        ),
        ("a.pem [no-tlsv10] a.test", "unknown ssl keyword no-tlsv10"),
        ("a.pem [alpn]", "ssl args out of '[]' for alpn"),
        (
            "a.pem [verify sometimes]",
            "'verify' : unknown verify method 'sometimes'",
        ),
        (
            "a.pem [ssl-min-ver TLSv9]",
            "'TLSv9' : unknown ssl/tls version",
        ),
        ("[alpn h2] a.pem", "file must start with a cert"),
        ("a.pem [alpn h2 a.test", "missing ']'"),
    ] {
        let out = check(line);
        assert_ne!(out.code(), Some(0), "{line}");
        assert!(
            out.stderr.contains("parsing [t.cfg:5]")
                && out
                    .stderr
                    .contains(&format!("'crt-list' : parsing [bad.txt:2]: {why}")),
            "{line}: {}",
            out.stderr
        );
    }
    let out = check(
        "a.pem [alpn h2,http/1.1 ciphers ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-SHA] a.test",
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("ignores 'DHE-RSA-AES256-SHA'"),
        "{}",
        out.stderr
    );
}

/// A client offering one protocol version and one suite, with ALPN
/// `alpn` (empty: none), accepting any certificate.
fn one_suite_config(
    version: &'static rustls::SupportedProtocolVersion,
    suite: rustls::CipherSuite,
    alpn: &[&[u8]],
) -> Arc<rustls::ClientConfig> {
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites.retain(|s| s.suite() == suite);
    let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(p))
        .with_protocol_versions(&[version])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert { signatures: true }))
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    Arc::new(cfg)
}

/// The TLS fetches of the client connection give haproxy 2.6's bytes on
/// the same certificate, for TLS 1.3 and 1.2 suites, with and without
/// ALPN and SNI. Nothing is masked: OpenSSL's suite names are sluice's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_fetches_give_haproxys_bytes() {
    if !support::haproxy::available() {
        return;
    }
    let ca = Ca::new("sluice test CA");
    let dir = TempDir::new("tlsfetch");
    let pem = write(dir.path(), "site.pem", &ca.leaf(&["site.test"]));
    let fetches = "ssl_fc ssl_fc_alpn ssl_fc_cipher ssl_fc_has_sni ssl_fc_is_resumed \
                   ssl_fc_use_keysize ssl_fc_alg_keysize ssl_c_verify ssl_fc_has_crt \
                   ssl_fc_protocol ssl_fc_sni ssl_fc_err ssl_fc_err_str ssl_fc_has_early \
                   ssl_fc_npn";
    let line: Vec<String> = fetches
        .split_whitespace()
        .map(|f| format!("{f}=%[{f}]"))
        .collect();
    let config = |bind: &str| {
        format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind} ssl crt {pem} alpn h2,http/1.1
    http-request return status 200 content-type text/plain lf-string \"{}\"
",
            line.join(" ")
        )
    };
    let fronts = listens(2);
    let _hap = support::haproxy::Haproxy::start(
        "tlsfetch-hap",
        &config(&fronts[0].to_string()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&config(&fronts[1].to_string()));
    use rustls::CipherSuite as C;
    let cases: [(&str, Arc<rustls::ClientConfig>, &str); 4] = [
        (
            "1.3 aes128 alpn http/1.1",
            one_suite_config(
                &rustls::version::TLS13,
                C::TLS13_AES_128_GCM_SHA256,
                &[b"http/1.1"],
            ),
            "site.test",
        ),
        (
            "1.3 chacha no alpn",
            one_suite_config(
                &rustls::version::TLS13,
                C::TLS13_CHACHA20_POLY1305_SHA256,
                &[],
            ),
            "site.test",
        ),
        (
            "1.2 ecdsa aes256 no sni",
            one_suite_config(
                &rustls::version::TLS12,
                C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
                &[b"http/1.1"],
            ),
            "127.0.0.1",
        ),
        (
            "1.2 ecdsa aes128",
            one_suite_config(
                &rustls::version::TLS12,
                C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
                &[b"http/1.1"],
            ),
            "site.test",
        ),
    ];
    let mut differ = Vec::new();
    for (name, cfg, sni) in cases {
        let mut bodies = Vec::new();
        for f in &fronts {
            let tls = tls_connect(f.addr(), sni, cfg.clone()).await.unwrap();
            let mut conn = BufReader::new(tls);
            let r = tls_get(&mut conn, "/").await;
            assert_eq!(r.status, 200, "{name}: {}", r.head);
            bodies.push(r.text().to_string());
        }
        if bodies[0] != bodies[1] {
            differ.push(format!(
                "{name}: haproxy {:?}, sluice {:?}",
                bodies[0], bodies[1]
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// The client certificate's fetches give haproxy 2.6's bytes: a client
/// certificate with a rich subject (two `OU`s, an e-mail address), signed
/// by the CA the listener verifies with, over TLS 1.3 and 1.2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificate_fetches_give_haproxys_bytes() {
    if !support::haproxy::available() {
        return;
    }
    let ca = Ca::new("sluice test CA");
    let dir = TempDir::new("tlsccert");
    let site = write(dir.path(), "site.pem", &ca.leaf(&["site.test"]));
    let ca_file = write(dir.path(), "ca.pem", &ca.pem());
    // Two certificates: rcgen's default validity (1975 to 4096, which
    // HAProxy shows no time of) and one of this century.
    let client = |dated: bool| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        let dn = &mut params.distinguished_name;
        dn.push(DnType::CountryName, "FR");
        dn.push(DnType::StateOrProvinceName, "Ile-de-France");
        dn.push(DnType::OrganizationName, "Sluice, Tests & Co");
        dn.push(DnType::OrganizationalUnitName, "unit one");
        dn.push(DnType::OrganizationalUnitName, "unit two");
        dn.push(DnType::CommonName, "client.test");
        dn.push(
            DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]),
            "ops@client.test",
        );
        params.serial_number = Some(rcgen::SerialNumber::from(vec![0x01, 0x9a, 0x42]));
        if dated {
            params.not_before = rcgen::date_time_ymd(2024, 1, 2);
            params.not_after = rcgen::date_time_ymd(2049, 6, 30);
        }
        let cert = params.signed_by(&key, &ca.issuer).unwrap();
        format!("{}{}", cert.pem(), key.serialize_pem())
    };
    let fetches = [
        "ssl_c_used",
        "ssl_c_version",
        "ssl_c_serial,hex",
        "ssl_c_sha1,hex",
        "ssl_c_der,length",
        "ssl_c_chain_der,length",
        "ssl_c_s_dn",
        "ssl_c_i_dn",
        "ssl_c_s_dn(CN)",
        "ssl_c_s_dn(OU)",
        "ssl_c_s_dn(OU,2)",
        "ssl_c_s_dn(OU,-1)",
        "ssl_c_s_dn(OU,3)",
        "ssl_c_s_dn(emailAddress)",
        "ssl_c_s_dn(,0,rfc2253)",
        "ssl_c_s_dn(CN,1,rfc2253)",
        "ssl_c_i_dn(,0,rfc2253)",
        "ssl_c_notbefore",
        "ssl_c_notafter",
        "ssl_c_sig_alg",
        "ssl_c_key_alg",
        "ssl_c_err",
        "ssl_c_ca_err",
        "ssl_c_ca_err_depth",
        "ssl_c_verify",
    ];
    let line: Vec<String> = fetches.iter().map(|f| format!("{f}=%[{f}]")).collect();
    let config = |bind: &str| {
        format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind} ssl crt {site} ca-file {ca_file} verify required
    http-request return status 200 content-type text/plain lf-string \"{}\"
",
            line.join("|")
        )
    };
    let fronts = listens(2);
    let _hap = support::haproxy::Haproxy::start(
        "tlsccert-hap",
        &config(&fronts[0].to_string()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&config(&fronts[1].to_string()));
    let mut differ = Vec::new();
    for (versions, dated) in [
        (&[&rustls::version::TLS13][..], false),
        (&[&rustls::version::TLS12][..], false),
        (&[&rustls::version::TLS13][..], true),
    ] {
        let cfg = client_with(versions, &["http/1.1"], Some(&client(dated)));
        let mut bodies = Vec::new();
        for f in &fronts {
            let tls = tls_connect(f.addr(), "site.test", cfg.clone())
                .await
                .unwrap();
            let mut conn = BufReader::new(tls);
            let r = tls_get(&mut conn, "/").await;
            assert_eq!(r.status, 200, "{}", r.head);
            bodies.push(r.text().to_string());
        }
        let (h, s): (Vec<&str>, Vec<&str>) = (
            bodies[0].split('|').collect(),
            bodies[1].split('|').collect(),
        );
        for (h, s) in h.iter().zip(&s) {
            if h != s {
                differ.push(format!(
                    "{versions:?} dated {dated}: haproxy {h:?}, sluice {s:?}"
                ));
            }
        }
        // Not a vacuous comparison: the subject and the times came through.
        assert!(bodies[0].contains("CN=client.test"), "{}", bodies[0]);
        assert_eq!(
            bodies[0].contains("ssl_c_notbefore=240102000000Z"),
            dated,
            "{}",
            bodies[0]
        );
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// The server connection's fetches give haproxy 2.6's bytes: `bc_*`,
/// `ssl_bc*` and the server certificate's `ssl_s_*`, in `http-response`
/// rules (a plain server and a TLS one) and in the log line (those two,
/// a server that refuses the connection, and a TLS handshake with a
/// plain server). Both proxies reach the same servers; what must differ
/// is masked, with the reason where it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_connection_fetches_give_haproxys_bytes() {
    if !support::haproxy::available() {
        return;
    }
    let ca = Ca::new("backend CA");
    let tls_up = tls_backend(&ca.leaf(&["backend.test"])).await;
    let plain = Backend::start("plain").await;
    let plain_up = plain.hostport();
    let refused = Port::new();
    // The source port is the kernel's choice: only whether there is one.
    let facts = "bc_src bc_src_port,bool bc_dst bc_dst_port bc_err bc_err_str bc_http_major \
                 ssl_bc ssl_bc_protocol ssl_bc_cipher ssl_bc_alg_keysize ssl_bc_use_keysize \
                 ssl_bc_alpn ssl_bc_is_resumed ssl_bc_err ssl_bc_err_str ssl_bc_npn \
                 ssl_s_der,length ssl_s_chain_der,length ssl_s_sha1,hex ssl_s_serial,hex \
                 ssl_s_version ssl_s_s_dn ssl_s_i_dn ssl_s_s_dn(CN) ssl_s_notbefore \
                 ssl_s_notafter ssl_s_sig_alg ssl_s_key_alg";
    let line: Vec<String> = facts
        .split_whitespace()
        .map(|f| format!("{f}=%[{f}]"))
        .collect();
    let line = line.join("|");
    let cfg = |bind: &str, log: &str| {
        format!(
            "global
    log {log} format raw local0 info
defaults
    mode http
    log global
    option dontlognull
    timeout connect 2s
    timeout client 5s
    timeout server 5s
    retries 0
frontend fe
    bind {bind}
    log-format \"%b|{line}\"
    use_backend tls if {{ path /tls }}
    use_backend refused if {{ path /refused }}
    use_backend tlsbad if {{ path /tlsbad }}
    default_backend plain
backend plain
    http-response set-header x-bc \"{line}\"
    server s1 {plain_up}
backend tls
    http-response set-header x-bc \"{line}\"
    server s1 {tls_up} ssl verify none sni str(backend.test) ciphersuites TLS_AES_128_GCM_SHA256
backend refused
    server s1 {refused}
backend tlsbad
    server s1 {plain_up} ssl verify none
",
            refused = refused.addr()
        )
    };
    let fronts = listens(2);
    let logs = [
        support::syslog::Syslog::new(),
        support::syslog::Syslog::new(),
    ];
    let _hap = support::haproxy::Haproxy::start(
        "tlsbc-hap",
        &cfg(&fronts[0].to_string(), &logs[0].addr()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&cfg(&fronts[1].to_string(), &logs[1].addr()));
    let mut d = support::haproxy::Differences::default();
    for path in ["/plain", "/tls", "/refused", "/tlsbad"] {
        let mut seen = Vec::new();
        for (f, log) in fronts.iter().zip(&logs) {
            let r = get(f.addr(), path).await;
            let line = log.take(1).remove(0);
            seen.push((r.status, r.header("x-bc").map(str::to_string), line));
        }
        if path == "/tls" {
            // Not a vacuous comparison: haproxy saw the TLS server.
            assert!(
                seen[0].2.contains("ssl_s_s_dn(CN)=backend.test|"),
                "{}",
                seen[0].2
            );
        }
        if path == "/refused" || path == "/tlsbad" {
            // A connection that failed: haproxy shows the unconnected
            // socket's source (0.0.0.0 and a port) where sluice, which
            // has no socket left, shows none; and of a failed handshake
            // OpenSSL's own facts (the version it offered, `(NONE)` for
            // the suite, its error code and text), which rustls has no
            // equivalent of.
            for (_, _, line) in seen.iter_mut() {
                *line = line
                    .split('|')
                    .map(|f| match f.split_once('=') {
                        Some((k, _))
                            if [
                                "bc_src",
                                "bc_src_port,bool",
                                "ssl_bc_protocol",
                                "ssl_bc_cipher",
                                "ssl_bc_err",
                                "ssl_bc_err_str",
                            ]
                            .contains(&k) =>
                        {
                            format!("{k}=MASKED")
                        }
                        _ => f.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join("|");
            }
        }
        d.compare(path, &seen[0], &seen[1]);
    }
    d.assert_none();
}

/// The certificate the listener presented (`ssl_f_*`), picked by SNI
/// among two, and the client connection's TLS facts in the log line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listener_certificate_fetches_give_haproxys_bytes() {
    if !support::haproxy::available() {
        return;
    }
    let ca = Ca::new("sluice test CA");
    let dir = TempDir::new("tlsfcert");
    let one = write(dir.path(), "one.pem", &ca.leaf(&["one.test"]));
    let two = write(dir.path(), "two.pem", &ca.leaf(&["two.test", "*.two.test"]));
    let fetches = [
        "ssl_f_der,length",
        "ssl_f_sha1,hex",
        "ssl_f_serial,hex",
        "ssl_f_version",
        "ssl_f_s_dn",
        "ssl_f_i_dn",
        "ssl_f_s_dn(CN)",
        "ssl_f_i_dn(CN,1,rfc2253)",
        "ssl_f_notbefore",
        "ssl_f_notafter",
        "ssl_f_sig_alg",
        "ssl_f_key_alg",
        "ssl_fc",
        "ssl_fc_sni",
        "ssl_fc_protocol",
        "ssl_fc_cipher",
    ];
    let line: Vec<String> = fetches.iter().map(|f| format!("{f}=%[{f}]")).collect();
    let line = line.join("|");
    let cfg = |bind: &str, log: &str| {
        format!(
            "global
    log {log} format raw local0 info
defaults
    mode http
    log global
    option dontlognull
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind} ssl crt {one} crt {two}
    log-format \"{line}\"
    http-request return status 200 content-type text/plain lf-string \"{line}\"
"
        )
    };
    let fronts = listens(2);
    let logs = [
        support::syslog::Syslog::new(),
        support::syslog::Syslog::new(),
    ];
    let _hap = support::haproxy::Haproxy::start(
        "tlsfcert-hap",
        &cfg(&fronts[0].to_string(), &logs[0].addr()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&cfg(&fronts[1].to_string(), &logs[1].addr()));
    let client = one_suite_config(
        &rustls::version::TLS13,
        rustls::CipherSuite::TLS13_AES_128_GCM_SHA256,
        &[b"http/1.1"],
    );
    let mut d = support::haproxy::Differences::default();
    for sni in ["one.test", "x.two.test", "other.test"] {
        let mut seen = Vec::new();
        for (f, log) in fronts.iter().zip(&logs) {
            let tls = tls_connect(f.addr(), sni, client.clone()).await.unwrap();
            let mut conn = BufReader::new(tls);
            let r = tls_get(&mut conn, "/").await;
            drop(conn);
            seen.push((r.status, r.text().to_string(), log.take(1).remove(0)));
        }
        assert!(
            seen[0].1.contains("ssl_f_s_dn(CN)="),
            "{sni}: {:?}",
            seen[0]
        );
        d.compare(sni, &seen[0], &seen[1]);
    }
    d.assert_none();
}

/// The ClientHello as `tune.ssl.capture-buffer-size` keeps it: the
/// `ssl_fc_cipherlist_*`, `ssl_fc_*list_bin` and
/// `ssl_fc_protocol_hello_id` fetches give haproxy 2.6's bytes for an
/// OpenSSL client (curl: many suites, groups, point formats) and rustls
/// ones (TLS 1.3 and 1.2), with room for all and with the buffer cutting
/// the lists at several places; without the setting they give nothing.
/// (rustls sends its extensions in an order of its own for each
/// connection: the extension list is compared on curl's hellos only, and
/// each rustls connection is a fresh client, which resumes nothing.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_hello_captures_give_haproxys_bytes() {
    if !support::haproxy::available() {
        return;
    }
    let ca = Ca::new("sluice test CA");
    let dir = TempDir::new("tlshello");
    let pem = write(dir.path(), "site.pem", &ca.leaf(&["site.test"]));
    let fetches = [
        "ssl_fc_protocol_hello_id",
        "ssl_fc_cipherlist_bin,hex",
        "ssl_fc_cipherlist_bin(1),hex",
        "ssl_fc_cipherlist_hex",
        "ssl_fc_cipherlist_hex(1)",
        "ssl_fc_cipherlist_str",
        "ssl_fc_cipherlist_str(1)",
        "ssl_fc_cipherlist_xxh",
        "ssl_fc_extlist_bin,hex",
        "ssl_fc_extlist_bin(1),hex",
        "ssl_fc_eclist_bin,hex",
        "ssl_fc_eclist_bin(1),hex",
        "ssl_fc_ecformats_bin,hex",
        // HAProxy's JA3 example.
        "ssl_fc_cipherlist_bin(1),be2dec(-,2)",
        "ssl_fc_extlist_bin(1),be2dec(-,2)",
    ];
    let line: Vec<String> = fetches.iter().map(|f| format!("{f}=%[{f}]")).collect();
    let line = line.join("|");
    let mut d = support::haproxy::Differences::default();
    for size in [0, 4096, 20, 70, 90, 106] {
        let cfg = |bind: &str| {
            format!(
                "global
    tune.ssl.capture-buffer-size {size}
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind} ssl crt {pem}
    http-request return status 200 content-type text/plain lf-string \"{line}\"
"
            )
        };
        let fronts = listens(2);
        let _hap = support::haproxy::Haproxy::start(
            "tlshello-hap",
            &cfg(&fronts[0].to_string()),
            &[&fronts[0]],
        );
        let _sl = Sluice::start(&cfg(&fronts[1].to_string()));
        let rustls_clients = [
            ("rustls TLS 1.3", &rustls::version::TLS13, &["http/1.1"][..]),
            ("rustls TLS 1.2", &rustls::version::TLS12, &[][..]),
        ];
        for (name, version, alpn) in rustls_clients {
            let mut bodies = Vec::new();
            for f in &fronts {
                let cfg = client_with(&[version], alpn, None);
                let tls = tls_connect(f.addr(), "site.test", cfg).await.unwrap();
                let mut conn = BufReader::new(tls);
                let body = tls_get(&mut conn, "/").await.text().to_string();
                let kept: Vec<&str> = body
                    .split('|')
                    .filter(|f| !f.starts_with("ssl_fc_extlist_bin"))
                    .collect();
                bodies.push(kept.join("|"));
            }
            d.compare(format!("{name}, {size} bytes"), &bodies[0], &bodies[1]);
        }
        if have_curl() {
            let bodies: Vec<String> = fronts
                .iter()
                .map(|f| curl(&["-k", &format!("https://127.0.0.1:{}/", f.port())]).1)
                .collect();
            if size == 4096 {
                // Not a comparison of nothing: haproxy kept the lists.
                assert!(
                    bodies[0].contains("ssl_fc_ecformats_bin,hex=00"),
                    "{}",
                    bodies[0]
                );
            }
            d.compare(format!("curl, {size} bytes"), &bodies[0], &bodies[1]);
        }
    }
    d.assert_none();
}

/// `tune.ssl.capture-buffer-size` and its deprecated name, as `haproxy
/// -c` takes them.
#[test]
fn capture_buffer_size_checked_as_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    let cfg = |line: &str| {
        format!(
            "global\n    {line}\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 5s\n    timeout server 5s\nfrontend fe\n    bind 127.0.0.1:1\n    http-request return status 200\n"
        )
    };
    let cases = [
        "tune.ssl.capture-buffer-size 96",
        "tune.ssl.capture-buffer-size x",
        "tune.ssl.capture-buffer-size -1",
        "tune.ssl.capture-buffer-size",
        "tune.ssl.capture-cipherlist-size 64",
    ]
    .map(|l| (l.to_string(), cfg(l)));
    // The deprecation is a warning: compared with its text, from the
    // place on (each reads its own file; HAProxy writes no space before
    // the colon there).
    let alert = |stderr: &str| {
        stderr
            .lines()
            .find_map(|l| l.split_once("parsing [").map(|(_, r)| r))
            .and_then(|r| r.split_once(']').map(|(_, m)| m.to_string()))
            .unwrap_or_else(|| "(accepted)".to_string())
    };
    support::haproxy::assert_check_agrees("capture-size", cases, alert);
}

/// `req.ssl_ec_ext` and `req.ssl_st_ext` read the ClientHello `tcp-request
/// content` rules wait for in `mode tcp`, as haproxy 2.6 reads them (the
/// TLS goes through to a TLS server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_hello_extensions_in_content_rules_as_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    let ca = Ca::new("backend CA");
    let upstream = tls_backend(&ca.leaf(&["backend.test"])).await;
    let cfg = |bind: &str, log: &str| {
        format!(
            "global
    log {log} format raw local0 info
defaults
    mode tcp
    log global
    option dontlognull
    timeout connect 5s
    timeout client 5s
    timeout server 5s
listen tcpfe
    bind {bind}
    tcp-request inspect-delay 5s
    tcp-request content set-var(sess.hello) bool(1) if {{ req.ssl_hello_type 1 }}
    tcp-request content set-var(sess.ec) req.ssl_ec_ext if {{ req.ssl_hello_type 1 }}
    tcp-request content set-var(sess.st) req.ssl_st_ext if {{ req.ssl_hello_type 1 }}
    tcp-request content accept if {{ req.ssl_hello_type 1 }}
    log-format \"hello=%[var(sess.hello)] ec=%[var(sess.ec)] st=%[var(sess.st)]\"
    server s1 {upstream}
"
        )
    };
    let fronts = listens(2);
    let logs = [
        support::syslog::Syslog::new(),
        support::syslog::Syslog::new(),
    ];
    let _hap = support::haproxy::Haproxy::start(
        "tlsext-hap",
        &cfg(&fronts[0].to_string(), &logs[0].addr()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&cfg(&fronts[1].to_string(), &logs[1].addr()));
    let mut d = support::haproxy::Differences::default();
    for (name, version) in [
        ("TLS 1.3", &rustls::version::TLS13),
        ("TLS 1.2", &rustls::version::TLS12),
    ] {
        let mut lines = Vec::new();
        for (f, log) in fronts.iter().zip(&logs) {
            let cfg = client_with(&[version], &[], None);
            let tls = tls_connect(f.addr(), "backend.test", cfg).await.unwrap();
            let mut conn = BufReader::new(tls);
            assert_eq!(tls_get(&mut conn, "/").await.status, 200, "{name}");
            drop(conn);
            // haproxy may log its readiness probe's connection (a race
            // with the connection to the server): lines without a hello
            // are not the test's.
            let line = loop {
                let l = log.take(1).remove(0);
                if l.starts_with("hello=1 ") {
                    break l;
                }
            };
            lines.push(line);
        }
        d.compare(name, &lines[0], &lines[1]);
        assert!(
            lines[0].starts_with("hello=1 ec=1 st="),
            "{name}: {:?}",
            lines
        );
    }
    d.assert_none();
}

/// A client's configuration offering only `version`, trusting `ca`, with
/// a session cache of its own.
fn version_config(
    version: &'static rustls::SupportedProtocolVersion,
    ca: &Ca,
) -> Arc<rustls::ClientConfig> {
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[version])
            .unwrap()
            .with_root_certificates(ca.roots())
            .with_no_client_auth(),
    )
}

/// One connection's handshake (full or resumed) and what the proxy saw
/// (`ssl_fc_is_resumed`).
async fn resumed(addr: SocketAddr, cfg: Arc<rustls::ClientConfig>) -> (String, String) {
    let tls = tls_connect(addr, "site.test", cfg).await.unwrap();
    let kind = format!("{:?}", tls.get_ref().1.handshake_kind());
    // The answer comes after the session tickets: the client has them
    // when it has read it.
    let mut s = BufReader::new(tls);
    let r = tls_get(&mut s, "/").await;
    (kind, r.text())
}

/// Sessions resume as with HAProxy: a client that comes back, in TLS 1.3
/// or 1.2, skips the full handshake with its ticket (or, without tickets,
/// its session id), by default and with `no-tls-tickets` alike; and
/// sluice's ticket keys outlive a reload, where HAProxy's new process
/// makes new ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_resume_as_with_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    let ca = Ca::new("sluice test CA");
    let dir = TempDir::new("tlsresume");
    let pem = write(dir.path(), "site.pem", &ca.leaf(&["site.test"]));
    let config = |bind: &str, opts: &str, global: &str| {
        format!(
            "global
{global}defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind} ssl crt {pem} {opts}
    http-request return status 200 content-type text/plain lf-string \"%[ssl_fc_is_resumed]\"
"
        )
    };
    let stats = "    stats socket @DIR@/stats.sock level admin\n";
    for opts in ["", "no-tls-tickets"] {
        let fronts = listens(2);
        let _hap = support::haproxy::Haproxy::start(
            "tlsresume-hap",
            &config(&fronts[0].to_string(), opts, ""),
            &[&fronts[0]],
        );
        let sl = Sluice::start(&config(&fronts[1].to_string(), opts, stats));
        for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
            let mut seen = Vec::new();
            for front in &fronts {
                let client = version_config(version, &ca);
                let first = resumed(front.addr(), client.clone()).await;
                let again = resumed(front.addr(), client).await;
                seen.push((first, again));
            }
            assert_eq!(
                seen[0], seen[1],
                "{:?} {opts:?}: haproxy then sluice",
                version.version
            );
            assert_eq!(
                seen[1].1,
                ("Some(Resumed)".to_string(), "1".to_string()),
                "{:?} {opts:?}",
                version.version
            );
        }
        // sluice only: a reload keeps the keys, so a session of before it
        // resumes after it.
        if opts.is_empty() {
            let client = version_config(&rustls::version::TLS13, &ca);
            assert_eq!(resumed(fronts[1].addr(), client.clone()).await.1, "0");
            let reply = cli(&sl.stats_socket(), "reload").await;
            assert!(reply.starts_with("Success=1"), "{reply}");
            assert_eq!(
                resumed(fronts[1].addr(), client).await,
                ("Some(Resumed)".to_string(), "1".to_string())
            );
        }
    }
}

/// A client offering `version` and the key exchange groups `groups`,
/// trusting `ca`.
fn group_config(
    version: &'static rustls::SupportedProtocolVersion,
    groups: Vec<&'static dyn rustls::crypto::SupportedKxGroup>,
    ca: &Ca,
) -> Arc<rustls::ClientConfig> {
    let provider = rustls::crypto::CryptoProvider {
        kx_groups: groups,
        ..rustls::crypto::ring::default_provider()
    };
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(&[version])
            .unwrap()
            .with_root_certificates(ca.roots())
            .with_no_client_auth(),
    )
}

/// Version pins (`force-tlsv12`, `force-tlsv13`, `no-tlsv13`) and key
/// exchange groups (`curves`, `ecdhe`, the global
/// `ssl-default-bind-curves` and a line's own over it) on a `bind` line: each client
/// (one version, one group) completes its handshake or not, with the
/// version and group haproxy 2.6 gives it on the same line. A TLS 1.2
/// client offers P-256 second: OpenSSL serves its ECDSA P-256
/// certificate in TLS 1.2 only to a client that names that curve; the
/// group of a TLS 1.2 handshake is not compared (rustls takes the
/// client's first usable one, OpenSSL under HAProxy its own first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_pins_and_curves_as_with_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    use rustls::crypto::ring::kx_group::{SECP256R1, SECP384R1, X25519};
    let ca = Ca::new("sluice test CA");
    let dir = TempDir::new("tlspins");
    let pem = write(dir.path(), "site.pem", &ca.leaf(&["site.test"]));
    // `@<curves> <opts>`: the global `ssl-default-bind-curves <curves>`
    // and the bind line's `<opts>`.
    let config = |bind: &str, opts: &str| {
        let (global, opts) = match opts.strip_prefix('@') {
            Some(rest) => {
                let (c, o) = rest.split_once(' ').unwrap_or((rest, ""));
                (format!("global\n    ssl-default-bind-curves {c}\n"), o)
            }
            None => (String::new(), opts),
        };
        format!(
            "{global}defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind} ssl crt {pem} {opts}
    http-request return status 200 content-type text/plain string ok
"
        )
    };
    let mut d = support::haproxy::Differences::default();
    for opts in [
        "force-tlsv12",
        "force-tlsv13",
        "no-tlsv13",
        "curves P-384",
        "curves X25519:P-256",
        "ecdhe secp384r1",
        "ecdhe prime256v1 force-tlsv12",
        "@P-384",
        "@P-384 curves X25519:P-256",
    ] {
        let fronts = listens(2);
        let _hap = support::haproxy::Haproxy::start(
            "tlspins-hap",
            &config(&fronts[0].to_string(), opts),
            &[&fronts[0]],
        );
        let _sl = Sluice::start(&config(&fronts[1].to_string(), opts));
        for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
            for group in [X25519, SECP256R1, SECP384R1] {
                let mut seen = Vec::new();
                for front in &fronts {
                    let mut groups = vec![group];
                    if version.version == rustls::ProtocolVersion::TLSv1_2
                        && group.name() != SECP256R1.name()
                    {
                        groups.push(SECP256R1);
                    }
                    let client = group_config(version, groups, &ca);
                    let got = match tls_connect(front.addr(), "site.test", client).await {
                        Ok(tls) => {
                            let c = tls.get_ref().1;
                            let group = match c.protocol_version() {
                                Some(rustls::ProtocolVersion::TLSv1_3) => {
                                    c.negotiated_key_exchange_group().map(|g| g.name())
                                }
                                _ => None,
                            };
                            format!("{:?} {group:?}", c.protocol_version())
                        }
                        Err(_) => "refused".to_string(),
                    };
                    seen.push(got);
                }
                d.compare(
                    format!("{opts}, {:?} {:?}", version.version, group.name()),
                    &seen[0],
                    &seen[1],
                );
            }
        }
    }
    d.assert_none();
}

/// A TLS server (`pem`) answering each request with the version of its
/// connection and whether the handshake resumed a session; `tickets_only`:
/// it keeps no sessions, so only a client with a ticket resumes.
async fn tls_version_backend(pem: &str, tickets_only: bool) -> SocketAddr {
    let chain: Vec<CertificateDer<'static>> =
        rustls::pki_types::pem::PemObject::pem_slice_iter(pem.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
    let key = rustls::pki_types::pem::PemObject::from_pem_slice(pem.as_bytes()).unwrap();
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    if tickets_only {
        cfg.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        cfg.ticketer = rustls::crypto::ring::Ticketer::new().unwrap();
    }
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let c = tls.get_ref().1;
                let body = format!("{:?} {:?}", c.protocol_version(), c.handshake_kind());
                let mut r = BufReader::new(tls);
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    match tokio::io::AsyncBufReadExt::read_line(&mut r, &mut line).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    head.push_str(&line);
                    if line == "\r\n" {
                        break;
                    }
                }
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = r.get_mut().write_all(resp.as_bytes()).await;
                let _ = r.get_mut().shutdown().await;
            });
        }
    });
    a
}

/// The TLS options of server lines, seen by the server: version pins
/// (`force-tlsv12`, `force-tlsv13`, `no-tlsv13`, `no-tlsv12`), session
/// reuse (`no-ssl-reuse`: every connection a full handshake; by default
/// the next one resumes), and `verifyhost` (the certificate checked
/// against that name, whatever the SNI).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_tls_options_as_the_server_sees_them() {
    let ca = Ca::new("backend CA");
    let upstream = tls_version_backend(&ca.leaf(&["backend.test"]), false).await;
    let ticketing = tls_version_backend(&ca.leaf(&["backend.test"]), true).await;
    let fe = Listen::new();
    let dir = TempDir::new("tlssrvopts");
    let ca_file = write(dir.path(), "ca.pem", &ca.pem());
    let mut backends = String::new();
    for (name, opts) in [
        ("f12", "verify none force-tlsv12"),
        ("f13", "verify none force-tlsv13"),
        ("n13", "verify none no-tlsv13"),
        ("n12", "verify none no-tlsv12"),
        ("reuse", "verify none"),
        ("noreuse", "verify none no-ssl-reuse"),
        ("ids12", "verify none force-tlsv12 no-tls-tickets"),
        (
            "hostok",
            &format!("ca-file {ca_file} sni str(other.test) verifyhost backend.test"),
        ),
        (
            "hostbad",
            &format!("ca-file {ca_file} sni str(backend.test) verifyhost wrong.test"),
        ),
        (
            "hostno",
            &format!("ca-file {ca_file} verifyhost wrong.test no-verifyhost"),
        ),
    ] {
        backends.push_str(&format!(
            "backend {name}\n    retries 0\n    server s {upstream} ssl {opts}\n"
        ));
    }
    // A server that resumes TLS 1.2 sessions by ticket only.
    for (name, opts) in [
        ("tk12", "verify none force-tlsv12"),
        ("notk12", "verify none force-tlsv12 no-tls-tickets"),
    ] {
        backends.push_str(&format!(
            "backend {name}\n    retries 0\n    server s {ticketing} ssl {opts}\n"
        ));
    }
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {fe}
    use_backend %[path,field(2,/)]
{backends}"
    ));
    let front = fe.addr();
    let ask = |b: &'static str| async move {
        let r = get(front, &format!("/{b}")).await;
        (r.status, r.text())
    };
    let full = |v: &str| format!("Some({v}) Some(Full)");
    assert_eq!(ask("f12").await, (200, full("TLSv1_2")));
    assert_eq!(ask("f13").await, (200, full("TLSv1_3")));
    assert_eq!(ask("n13").await, (200, full("TLSv1_2")));
    assert_eq!(ask("n12").await, (200, full("TLSv1_3")));
    // The server closes each connection: the second one resumes, unless
    // `no-ssl-reuse`.
    assert_eq!(ask("reuse").await, (200, full("TLSv1_3")));
    assert_eq!(
        ask("reuse").await,
        (200, "Some(TLSv1_3) Some(Resumed)".to_string())
    );
    assert_eq!(ask("noreuse").await, (200, full("TLSv1_3")));
    assert_eq!(ask("noreuse").await, (200, full("TLSv1_3")));
    // TLS 1.2 without tickets resumes by session id, not by ticket.
    assert_eq!(ask("ids12").await, (200, full("TLSv1_2")));
    assert_eq!(
        ask("ids12").await,
        (200, "Some(TLSv1_2) Some(Resumed)".to_string())
    );
    assert_eq!(ask("tk12").await, (200, full("TLSv1_2")));
    assert_eq!(
        ask("tk12").await,
        (200, "Some(TLSv1_2) Some(Resumed)".to_string())
    );
    assert_eq!(ask("notk12").await, (200, full("TLSv1_2")));
    assert_eq!(ask("notk12").await, (200, full("TLSv1_2")));
    assert_eq!(ask("hostok").await.0, 200);
    assert_eq!(ask("hostbad").await.0, 503);
    assert_eq!(ask("hostno").await.0, 200);
}

impl Ca {
    /// A leaf certificate and key (PEM) with the serial number `serial`.
    fn leaf_serial(&self, name: &str, serial: u64) -> String {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec![name.to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.serial_number = Some(rcgen::SerialNumber::from(serial));
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        format!("{}{}", cert.pem(), key.serialize_pem())
    }

    /// A CRL of this CA revoking the serial numbers `revoked`.
    fn crl(&self, revoked: &[u64]) -> String {
        let params = rcgen::CertificateRevocationListParams {
            this_update: rcgen::date_time_ymd(2024, 1, 1),
            next_update: rcgen::date_time_ymd(2099, 1, 1),
            crl_number: rcgen::SerialNumber::from(1u64),
            issuing_distribution_point: None,
            revoked_certs: revoked
                .iter()
                .map(|s| rcgen::RevokedCertParams {
                    serial_number: rcgen::SerialNumber::from(*s),
                    revocation_time: rcgen::date_time_ymd(2024, 1, 1),
                    reason_code: None,
                    invalidity_date: None,
                })
                .collect(),
            key_identifier_method: rcgen::KeyIdMethod::Sha256,
        };
        params.signed_by(&self.issuer).unwrap().pem().unwrap()
    }
}

/// `crl-file` on a bind line: a client certificate the CRL revokes is
/// refused, another of the same CA is served; `ca-verify-file` adds the
/// roots a client certificate may chain to; `no-ca-names` changes none of
/// that; as haproxy 2.6 decides on the same lines. A file without a CRL
/// is an error at the line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_against_crl_and_verify_files() {
    use rustls::version::{TLS12, TLS13};
    let ca = Ca::new("client CA");
    let other = Ca::new("other client CA");
    let site = Ca::new("site CA");
    let dir = TempDir::new("tlscrl");
    let pem = write(dir.path(), "site.pem", &site.leaf(&["site.test"]));
    let ca_file = write(dir.path(), "ca.pem", &ca.pem());
    let other_file = write(dir.path(), "other.pem", &other.pem());
    let crl = write(dir.path(), "crl.pem", &ca.crl(&[42]));
    let (revoked, good) = (
        ca.leaf_serial("a.client", 42),
        ca.leaf_serial("b.client", 43),
    );
    let from_other = other.leaf_serial("c.client", 44);
    let config = |f: &[Listen]| {
        format!(
            "defaults
    mode http
    timeout client 5s
frontend fe
    bind {} ssl crt {pem} verify required ca-file {ca_file} ca-verify-file {other_file} crl-file {crl} no-ca-names
    bind {} ssl crt {pem} verify required ca-file {ca_file} ca-verify-file {other_file}
    http-request return status 200 content-type text/plain string ok
",
            f[0], f[1]
        )
    };
    let fronts = listens(2);
    let _s = Sluice::start(&config(&fronts));
    let haproxy_fronts = listens(2);
    let _hap = support::haproxy::available().then(|| {
        support::haproxy::Haproxy::start(
            "tlscrl-hap",
            &config(&haproxy_fronts),
            &[&haproxy_fronts[0], &haproxy_fronts[1]],
        )
    });
    let both = &[&TLS12, &TLS13][..];
    // With the CRL: the revoked one is refused; so is one of a CA the
    // CRL file has no list of (OpenSSL under HAProxy checks every
    // certificate of the chain and refuses one whose CRL it lacks).
    for (front, client, served) in [
        (0, &revoked, false),
        (0, &good, true),
        (0, &from_other, false),
        (1, &revoked, true),
        (1, &from_other, true),
    ] {
        let mut seen = Vec::new();
        for fs in [&fronts, &haproxy_fronts] {
            if fs[0].addr() == haproxy_fronts[0].addr() && _hap.is_none() {
                continue;
            }
            let got = match tls_connect(
                fs[front].addr(),
                "site.test",
                client_with(both, &[], Some(client)),
            )
            .await
            {
                Ok(tls) => answers(tls).await,
                Err(_) => false,
            };
            seen.push(got);
        }
        assert!(
            seen.iter().all(|g| *g == served),
            "front {front} (sluice, haproxy): {seen:?}: {}",
            &client[..80]
        );
    }
    std::fs::write(dir.join("t.cfg"), format!(
        "defaults\n    mode http\n    timeout client 1s\nfrontend fe\n    bind 127.0.0.1:1 ssl crt {pem} verify required ca-file {ca_file} crl-file {ca_file}\n"
    ))
    .unwrap();
    let out = run_sluice(&["-c", "-f", "t.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("parsing [t.cfg:5]")
            && out.stderr.contains("unable to configure CRL file"),
        "{}",
        out.stderr
    );
}

/// `check-sni`: the TLS health checks send that name (the server answers
/// with the SNI it got, which the check expects); `check-alpn` sets what
/// they offer without changing the SNI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_sni_is_what_the_checks_send() {
    let ca = Ca::new("backend CA");
    let upstream = tls_backend(&ca.leaf(&["backend.test"])).await;
    let fe = Listen::new();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
    timeout check 300ms
frontend fe
    bind {fe}
    default_backend b
backend b
    option httpchk GET /
    http-check expect string sni=health.test
    server right {upstream} ssl verify none check check-ssl inter 100ms check-sni health.test check-alpn http/1.1
    server wrong {upstream} ssl verify none check check-ssl inter 100ms check-sni other.test
"
    ));
    let sock = s.stats_socket();
    wait_check(&sock, "b", "right", "UP", "L7OK").await;
    // The answer without the name: the check waits for more until its
    // timeout (the server keeps the connection).
    wait_check(&sock, "b", "wrong", "DOWN", "L7TOUT").await;
}
