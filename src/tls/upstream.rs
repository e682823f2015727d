//! TLS to servers (`server ... ssl`): the client configuration and the
//! identity that keys the connection pool.

use std::hash::{Hash, Hasher};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;

use crate::tls::{Stream, Suites, certs};

/// `sni <expr>` of a server line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum SniSpec {
    /// `str(<name>)`
    Fixed(String),
    /// `req.hdr(host)` / `hdr(host)`: the request's Host, port removed.
    Host,
}

impl SniSpec {
    pub(crate) fn parse(expr: &str) -> Option<Self> {
        if let Some(name) = expr.strip_prefix("str(").and_then(|r| r.strip_suffix(')')) {
            return (!name.is_empty()).then(|| SniSpec::Fixed(name.to_string()));
        }
        match expr.to_ascii_lowercase().as_str() {
            "req.hdr(host)" | "hdr(host)" | "req.fhdr(host)" => Some(SniSpec::Host),
            _ => None,
        }
    }
}

/// The TLS options of a server line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ServerTlsOpts {
    /// `ssl` given (options without it are kept for a later `ssl`, as in
    /// a `default-server` line).
    pub(crate) enabled: bool,
    /// `no-ssl` said last (`show servers state` tells it from nothing said).
    pub(crate) no_ssl: bool,
    pub(crate) verify_required: bool,
    pub(crate) ca_file: Option<String>,
    pub(crate) sni: Option<SniSpec>,
    pub(crate) alpn: Option<String>,
    pub(crate) crt: Option<String>,
    pub(crate) suites: Suites,
    /// `crl-file`: revoked server certificates are refused.
    pub(crate) crl_file: Option<String>,
    /// `no-ssl-reuse`: every connection makes a full handshake.
    pub(crate) no_reuse: bool,
    /// `no-tls-tickets`: TLS 1.2 sessions resume by session id only.
    pub(crate) no_tickets: bool,
    /// `verifyhost <name>`: the certificate must be valid for this name
    /// (instead of the SNI's).
    pub(crate) verifyhost: Option<String>,
    /// `check-sni <name>`: the SNI of the health checks.
    pub(crate) check_sni: Option<String>,
    /// `check-alpn <list>`: the ALPN of the health checks.
    pub(crate) check_alpn: Option<String>,
}

/// A server's TLS settings, ready to connect.
pub(crate) struct UpstreamTls {
    config: Arc<rustls::ClientConfig>,
    pub(crate) sni: Option<SniSpec>,
    /// Everything that tells two TLS peers apart besides the address:
    /// verification, CA and client certificate (their contents too), SNI,
    /// ALPN. Pools are replaced when it changes.
    pub(crate) identity: String,
}

/// Two server TLS settings are the same when nothing tells their peers
/// apart (`identity`); each load builds its own rustls configuration.
impl PartialEq for UpstreamTls {
    fn eq(&self, other: &UpstreamTls) -> bool {
        self.identity == other.identity
    }
}

impl std::fmt::Debug for UpstreamTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.identity)
    }
}

fn file_hash(path: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::fs::read(path).unwrap_or_default().hash(&mut h);
    h.finish()
}

impl UpstreamTls {
    /// `h2`: the server speaks HTTP/2 (`proto h2`): `h2` is offered by
    /// ALPN (alone when the line has no `alpn`).
    pub(crate) fn new(
        opts: &ServerTlsOpts,
        h2: bool,
        warnings: &mut Vec<String>,
    ) -> Result<Self, String> {
        let (provider, versions) = opts.suites.build(warnings)?;
        let verifier: Arc<dyn ServerCertVerifier> = if opts.verify_required {
            let Some(ca) = &opts.ca_file else {
                return Err("verify is enabled by default but no CA file specified. If you're running on a LAN where you're certain to trust the server's certificate, please set an explicit 'verify none' statement on the 'server' line, or use 'ssl-server-verify none' in the global section to disable server-side verifications by default.".to_string());
            };
            let roots = certs::load_ca(Path::new(ca)).map_err(|e| e.to_string())?;
            let crls = match &opts.crl_file {
                Some(f) => certs::load_crls(Path::new(f)).map_err(|e| e.to_string())?,
                None => Vec::new(),
            };
            let inner =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .with_crls(crls)
                    .build()
                    .map_err(|e| e.to_string())?;
            let host = match &opts.verifyhost {
                Some(h) => Some(
                    ServerName::try_from(h.clone())
                        .map_err(|_| format!("'verifyhost' : '{h}' is not a valid host name."))?,
                ),
                None => None,
            };
            Arc::new(Verified {
                inner,
                check_host: opts.sni.is_some() || host.is_some(),
                host,
            })
        } else {
            Arc::new(Unverified(provider.clone()))
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&versions)
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let mut config = match &opts.crt {
            Some(crt) => {
                let loaded = certs::load_pem(Path::new(crt)).map_err(|e| e.to_string())?;
                builder.with_client_cert_resolver(Arc::new(ClientCert(loaded.key)))
            }
            None => builder.with_no_client_auth(),
        };
        if opts.no_reuse {
            config.resumption = rustls::client::Resumption::disabled();
        } else if opts.no_tickets {
            config.resumption = rustls::client::Resumption::default()
                .tls12_resumption(rustls::client::Tls12Resumption::SessionIdOnly);
        }
        match &opts.alpn {
            Some(list) => config.alpn_protocols = crate::tls::alpn_protocols(list, h2, warnings),
            None if h2 => config.alpn_protocols = vec![b"h2".to_vec()],
            None => {}
        }
        let identity = format!(
            "verify={};ca={}#{:x};crt={}#{:x};sni={:?};alpn={:?};suites={:?}/{:?}/{:?}/{:?}/{:?};crl={:?}#{:x};reuse={}/{};host={:?}",
            opts.verify_required,
            opts.ca_file.as_deref().unwrap_or(""),
            opts.ca_file.as_deref().map_or(0, file_hash),
            opts.crt.as_deref().unwrap_or(""),
            opts.crt.as_deref().map_or(0, file_hash),
            opts.sni,
            opts.alpn,
            opts.suites.min_ver,
            opts.suites.max_ver,
            opts.suites.ciphers,
            opts.suites.ciphersuites,
            opts.suites.curves,
            opts.crl_file,
            opts.crl_file.as_deref().map_or(0, file_hash),
            opts.no_reuse,
            opts.no_tickets,
            opts.verifyhost,
        );
        Ok(UpstreamTls {
            config: Arc::new(config),
            sni: opts.sni.clone(),
            identity,
        })
    }

    /// The SNI to send for a request whose Host is `host` (None: no SNI).
    pub(crate) fn sni_for<'a>(&'a self, host: Option<&'a [u8]>) -> Option<&'a str> {
        match &self.sni {
            None => None,
            Some(SniSpec::Fixed(n)) => Some(n),
            Some(SniSpec::Host) => {
                let h = std::str::from_utf8(host?).ok()?.trim();
                // The port goes (an IPv6 literal keeps its brackets out).
                let h = match h.strip_prefix('[') {
                    Some(v6) => v6.split(']').next()?,
                    None => h.rsplit_once(':').map_or(h, |(n, _)| n),
                };
                (!h.is_empty()).then_some(h)
            }
        }
    }

    /// The TLS handshake over a connected socket. Without an SNI the
    /// address is the name (rustls then sends no SNI, as HAProxy without
    /// `sni`).
    pub(crate) async fn handshake(
        &self,
        tcp: TcpStream,
        addr: SocketAddr,
        sni: Option<&str>,
    ) -> std::io::Result<Stream> {
        let name = match sni.map(|s| ServerName::try_from(s.to_string())) {
            Some(Ok(n)) => n,
            _ => ServerName::IpAddress(addr.ip().into()),
        };
        let tls = tokio_rustls::TlsConnector::from(self.config.clone())
            .connect(name, tcp)
            .await?;
        Ok(Stream::Tls(Box::new(tokio_rustls::TlsStream::Client(tls))))
    }
}

/// `verify required`: the chain must lead to the CA file; the name is
/// checked only against an `sni` (HAProxy checks the host only with
/// `sni` or `verifyhost`).
#[derive(Debug)]
struct Verified {
    inner: Arc<WebPkiServerVerifier>,
    check_host: bool,
    /// `verifyhost`: the name checked, whatever the SNI.
    host: Option<ServerName<'static>>,
}

impl ServerCertVerifier for Verified {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let server_name = self.host.as_ref().unwrap_or(server_name);
        match self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_host => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `verify none`: any certificate is accepted (the handshake signatures
/// are still checked, so the peer holds the key it presents).
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `crt <pem>` on a server line: the client certificate, always offered.
#[derive(Debug)]
struct ClientCert(Arc<CertifiedKey>);

impl rustls::client::ResolvesClientCert for ClientCert {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}
