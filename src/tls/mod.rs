//! TLS with rustls: termination on `bind ... ssl` and TLS to servers
//! (`server ... ssl`). Certificates are loaded and configurations built
//! when the configuration is parsed, so a bad file is an error at its line
//! (at `-c` time too) and a reload brings new certificates in with the new
//! snapshot: new handshakes use them, established connections keep theirs.

pub mod certs;
pub(crate) mod stream;
pub(crate) mod tcp_conn;
pub(crate) mod upstream;

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::crypto::ring as provider;
use rustls::{ProtocolVersion, SupportedCipherSuite};

pub(crate) use certs::{LineOpts, LoadedCert};
pub(crate) use stream::Stream;
pub(crate) use tcp_conn::TcpConn;

/// A TLS version as HAProxy names it (`ssl-min-ver` / `ssl-max-ver`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TlsVersion {
    Ssl3,
    Tls10,
    Tls11,
    Tls12,
    Tls13,
}

impl TlsVersion {
    pub(crate) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "SSLv3" => TlsVersion::Ssl3,
            "TLSv1.0" => TlsVersion::Tls10,
            "TLSv1.1" => TlsVersion::Tls11,
            "TLSv1.2" => TlsVersion::Tls12,
            "TLSv1.3" => TlsVersion::Tls13,
            _ => return None,
        })
    }
}

/// `verify` on a bind line (client certificates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Verify {
    #[default]
    None,
    Optional,
    Required,
}

/// The TLS settings shared by both sides: versions and suites.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Suites {
    pub(crate) min_ver: Option<TlsVersion>,
    pub(crate) max_ver: Option<TlsVersion>,
    /// `ciphers`: OpenSSL names of TLS 1.2 suites, `:`-separated.
    pub(crate) ciphers: Option<String>,
    /// `ciphersuites`: TLS 1.3 suite names, `:`-separated.
    pub(crate) ciphersuites: Option<String>,
    /// `curves` (`:`-separated) or `ecdhe` (one name): the key exchange
    /// groups offered, in this order of preference.
    pub(crate) curves: Option<String>,
}

/// The key exchange groups of rustls's provider, by the names OpenSSL
/// (and so HAProxy's `curves` and `ecdhe`) gives them.
const GROUP_NAMES: &[(&str, &dyn rustls::crypto::SupportedKxGroup)] = &[
    ("X25519", provider::kx_group::X25519),
    ("x25519", provider::kx_group::X25519),
    ("P-256", provider::kx_group::SECP256R1),
    ("prime256v1", provider::kx_group::SECP256R1),
    ("secp256r1", provider::kx_group::SECP256R1),
    ("P-384", provider::kx_group::SECP384R1),
    ("secp384r1", provider::kx_group::SECP384R1),
];

/// The rustls names of the TLS 1.2 suites, by their OpenSSL names.
const TLS12_NAMES: &[(&str, SupportedCipherSuite)] = &[
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

const TLS13_NAMES: &[(&str, SupportedCipherSuite)] = &[
    (
        "TLS_AES_128_GCM_SHA256",
        provider::cipher_suite::TLS13_AES_128_GCM_SHA256,
    ),
    (
        "TLS_AES_256_GCM_SHA384",
        provider::cipher_suite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        provider::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
];

impl Suites {
    /// The crypto provider and versions these settings allow. `warnings`
    /// collects what rustls cannot do (skipped, not fatal); an error is a
    /// setting that leaves nothing usable.
    pub(crate) fn build(
        &self,
        warnings: &mut Vec<String>,
    ) -> Result<
        (
            Arc<CryptoProvider>,
            Vec<&'static rustls::SupportedProtocolVersion>,
        ),
        String,
    > {
        let min = self.min_ver.unwrap_or(TlsVersion::Tls12);
        let max = self.max_ver.unwrap_or(TlsVersion::Tls13);
        if min < TlsVersion::Tls12 {
            warnings.push(format!(
                "'ssl-min-ver {}' : sluice (rustls) does not do TLS versions below TLSv1.2, TLSv1.2 is the minimum.",
                version_name(min)
            ));
        }
        if max < TlsVersion::Tls12 {
            return Err(format!(
                "'ssl-max-ver {}' : sluice (rustls) does not do TLS versions below TLSv1.2.",
                version_name(max)
            ));
        }
        if min > max {
            return Err("'ssl-min-ver' is above 'ssl-max-ver'.".to_string());
        }
        let mut versions = Vec::new();
        if min <= TlsVersion::Tls12 {
            versions.push(&rustls::version::TLS12);
        }
        if max >= TlsVersion::Tls13 {
            versions.push(&rustls::version::TLS13);
        }
        let tls12 = match &self.ciphers {
            None => TLS12_NAMES.iter().map(|(_, s)| *s).collect(),
            Some(list) => pick(list, TLS12_NAMES, "ciphers", warnings),
        };
        let tls13 = match &self.ciphersuites {
            None => TLS13_NAMES.iter().map(|(_, s)| *s).collect(),
            Some(list) => pick(list, TLS13_NAMES, "ciphersuites", warnings),
        };
        if versions.contains(&&rustls::version::TLS12) && tls12.is_empty() {
            if versions.len() == 1 {
                return Err(format!(
                    "no cipher usable by sluice (rustls) in 'ciphers {}'",
                    self.ciphers.as_deref().unwrap_or("")
                ));
            }
            versions.retain(|v| v.version != ProtocolVersion::TLSv1_2);
        }
        if versions.contains(&&rustls::version::TLS13) && tls13.is_empty() {
            if versions.len() == 1 {
                return Err(format!(
                    "no cipher suite usable by sluice (rustls) in 'ciphersuites {}'",
                    self.ciphersuites.as_deref().unwrap_or("")
                ));
            }
            versions.retain(|v| v.version != ProtocolVersion::TLSv1_3);
        }
        let mut provider = CryptoProvider {
            cipher_suites: tls13.into_iter().chain(tls12).collect(),
            ..provider::default_provider()
        };
        if let Some(list) = &self.curves {
            let mut groups: Vec<&'static dyn rustls::crypto::SupportedKxGroup> = Vec::new();
            let mut skipped = Vec::new();
            for name in list.split(':').filter(|n| !n.is_empty()) {
                match GROUP_NAMES.iter().find(|(n, _)| *n == name) {
                    Some((_, g)) if !groups.iter().any(|h| h.name() == g.name()) => groups.push(*g),
                    Some(_) => {}
                    None => skipped.push(name),
                }
            }
            if !skipped.is_empty() {
                warnings.push(format!(
                    "'curves' : sluice (rustls) ignores '{}' (supported: X25519:P-256:P-384).",
                    skipped.join(":")
                ));
            }
            if groups.is_empty() {
                return Err(format!("no curve usable by sluice (rustls) in '{list}'"));
            }
            provider.kx_groups = groups;
        }
        Ok((Arc::new(provider), versions))
    }
}

/// The prefix of a TLS setting's message that is a notice, not a warning.
pub(crate) const NOTICE: &str = "notice: ";

/// The suites of `list` rustls has, in the list's order; the others are
/// reported (OpenSSL keywords like `HIGH` or `!aNULL` included).
///
/// A message of the list that starts with [`NOTICE`] is a notice.
fn pick(
    list: &str,
    table: &[(&str, SupportedCipherSuite)],
    what: &str,
    warnings: &mut Vec<String>,
) -> Vec<SupportedCipherSuite> {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for name in list.split(':').filter(|n| !n.is_empty()) {
        match table.iter().find(|(n, _)| *n == name) {
            Some((_, s)) if !out.contains(s) => out.push(*s),
            Some(_) => {}
            None if name.starts_with('!') || name.starts_with('-') => {}
            None => skipped.push(name),
        }
    }
    if !skipped.is_empty() {
        // Some of the list usable: the rest only says what rustls lacks
        // (DHE, CBC...), a notice, which `zero-warning` lets start.
        let level = if out.is_empty() { "" } else { NOTICE };
        warnings.push(format!(
            "{level}'{what}' : sluice (rustls) ignores '{}' (supported: {}).",
            skipped.join(":"),
            table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(":")
        ));
    }
    out
}

pub(crate) fn version_name(v: TlsVersion) -> &'static str {
    match v {
        TlsVersion::Ssl3 => "SSLv3",
        TlsVersion::Tls10 => "TLSv1.0",
        TlsVersion::Tls11 => "TLSv1.1",
        TlsVersion::Tls12 => "TLSv1.2",
        TlsVersion::Tls13 => "TLSv1.3",
    }
}

/// ALPN protocols sluice speaks, from an `alpn` list. `h2` is spoken
/// where `h2` says so (a `bind` line: the connection is then served as
/// HTTP/2); elsewhere it is dropped with a warning (never negotiated, so
/// the peer falls back to HTTP/1.1).
pub(crate) fn alpn_protocols(list: &str, h2: bool, warnings: &mut Vec<String>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for p in list.split(',').filter(|p| !p.is_empty()) {
        match p {
            "http/1.1" | "http/1.0" => out.push(p.as_bytes().to_vec()),
            "h2" if h2 => out.push(p.as_bytes().to_vec()),
            other => warnings.push(format!(
                "'alpn' : protocol '{other}' is not implemented by sluice yet, it is not offered."
            )),
        }
    }
    out
}

/// A `bind ... ssl` line's settings.
#[derive(Debug, Clone, Default)]
pub(crate) struct BindTls {
    pub(crate) certs: Vec<LoadedCert>,
    pub(crate) alpn: Vec<Vec<u8>>,
    pub(crate) suites: Suites,
    pub(crate) verify: Verify,
    pub(crate) ca: Option<Arc<rustls::RootCertStore>>,
    /// `strict-sni`: refuse clients whose SNI names no certificate.
    pub(crate) strict_sni: bool,
    /// `no-tls-tickets`: no stateless session tickets (sessions resume
    /// from the listener's cache instead).
    pub(crate) no_tickets: bool,
    /// `no-ca-names`: the certificate request names no CA.
    pub(crate) no_ca_names: bool,
    /// `crl-file`: revoked client certificates are refused.
    pub(crate) crls: Vec<rustls::pki_types::CertificateRevocationListDer<'static>>,
    /// The global `tune.ssl.cachesize` (None: HAProxy's default).
    pub(crate) session_cache: Option<usize>,
    /// The global `tune.ssl.hard-maxrecord`: the most plaintext bytes of
    /// a record.
    pub(crate) max_fragment: Option<usize>,
}

impl BindTls {
    /// The rustls configuration of the listener.
    pub(crate) fn server_config(
        &self,
        warnings: &mut Vec<String>,
    ) -> Result<Arc<rustls::ServerConfig>, String> {
        let (provider, versions) = self.suites.build(warnings)?;
        let resolver = certs::SniResolver::new(&self.certs, self.strict_sni)
            .ok_or_else(|| "no certificate loaded".to_string())?;
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| e.to_string())?;
        let builder = match (self.verify, &self.ca) {
            (Verify::None, _) => builder.with_no_client_auth(),
            (_, None) => {
                return Err(
                    "verify is enabled but no CA file specified (use 'ca-file').".to_string(),
                );
            }
            (v, Some(roots)) => {
                let b = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    roots.clone(),
                    provider,
                );
                let b = if v == Verify::Optional {
                    b.allow_unauthenticated()
                } else {
                    b
                };
                let b = if self.no_ca_names {
                    b.clear_root_hint_subjects()
                } else {
                    b
                };
                let b = b.with_crls(self.crls.iter().cloned());
                builder.with_client_cert_verifier(b.build().map_err(|e| e.to_string())?)
            }
        };
        let mut cfg = builder.with_cert_resolver(Arc::new(resolver));
        cfg.alpn_protocols = self.alpn.clone();
        // HAProxy's default session cache (`tune.ssl.cachesize`).
        cfg.session_storage = match self.session_cache {
            // `tune.ssl.cachesize 0`: no cache.
            Some(0) => Arc::new(rustls::server::NoServerSessionStorage {}),
            n => rustls::server::ServerSessionMemoryCache::new(n.unwrap_or(SESSION_CACHE)),
        };
        // rustls refuses records smaller than 32 bytes and larger than
        // TLS allows.
        cfg.max_fragment_size = self.max_fragment.map(|n| n.clamp(32, 16384));
        // `no-tls-tickets` turns the stateless tickets off, as OpenSSL's
        // option does under HAProxy: TLS 1.2 clients resume by session id
        // then, TLS 1.3 ones with tickets that name a cached session.
        if !self.no_tickets
            && let Some(t) = ticketer()
        {
            cfg.ticketer = t;
        }
        Ok(Arc::new(cfg))
    }
}

/// Sessions a listener remembers for resumption by session id (TLS 1.2
/// clients that take no ticket): HAProxy's `tune.ssl.cachesize` default.
const SESSION_CACHE: usize = 20_000;

/// The session-ticket keys of every listener, made once for the life of
/// the process (rustls rotates them): clients resume with stateless
/// tickets by default, in TLS 1.2 and 1.3, as with HAProxy, and a reload
/// keeps them valid, where HAProxy's new process makes new keys and costs
/// every returning client a full handshake. None if the system has no
/// randomness to make keys with: no tickets then.
fn ticketer() -> Option<Arc<dyn rustls::server::ProducesTickets>> {
    static TICKETER: std::sync::OnceLock<Option<Arc<dyn rustls::server::ProducesTickets>>> =
        std::sync::OnceLock::new();
    TICKETER
        .get_or_init(|| rustls::crypto::ring::Ticketer::new().ok())
        .clone()
}

/// The TLS of a listener: one rustls configuration, or, when crt-list
/// lines carry `[...]` options, one per certificate, picked by the SNI
/// of the ClientHello before the handshake goes on.
#[derive(Debug)]
pub(crate) struct ListenTls {
    /// Every handshake's when `per_cert` is None; else the one of
    /// `strict-sni` handshakes that name no certificate (it has none for
    /// them: the handshake fails as with a single configuration).
    pub(crate) config: Arc<rustls::ServerConfig>,
    pub(crate) per_cert: Option<PerCert>,
    /// The certificates by SNI, as the handshakes pick them: which one a
    /// connection was presented (`ssl_f_*`).
    chooser: certs::SniResolver,
}

/// The configurations of a listener whose crt-list lines have options.
#[derive(Debug)]
pub(crate) struct PerCert {
    resolver: certs::SniResolver,
    /// By certificate index, each serving its certificate only.
    configs: Vec<Arc<rustls::ServerConfig>>,
}

impl ListenTls {
    /// The certificate a handshake whose ClientHello named `sni` was
    /// presented.
    pub(crate) fn presented(&self, sni: Option<&str>) -> Option<Arc<rustls::sign::CertifiedKey>> {
        self.chooser.key(sni)
    }

    /// The configuration of a handshake whose ClientHello names `sni`.
    pub(crate) fn pick(&self, sni: Option<&str>) -> Arc<rustls::ServerConfig> {
        match &self.per_cert {
            None => self.config.clone(),
            Some(p) => p
                .resolver
                .choose(sni)
                .and_then(|i| p.configs.get(i).cloned())
                .unwrap_or_else(|| self.config.clone()),
        }
    }
}

impl BindTls {
    /// The listener's TLS: the bind line's configuration, plus one per
    /// certificate when some crt-list line has options (each line's
    /// options over the bind line's).
    pub(crate) fn listen_tls(&self, warnings: &mut Vec<String>) -> Result<ListenTls, String> {
        let config = self.server_config(warnings)?;
        let chooser = certs::SniResolver::new(&self.certs, self.strict_sni)
            .ok_or_else(|| "no certificate loaded".to_string())?;
        if self.certs.iter().all(|c| c.opts.is_none()) {
            return Ok(ListenTls {
                config,
                per_cert: None,
                chooser,
            });
        }
        let resolver = certs::SniResolver::new(&self.certs, self.strict_sni)
            .ok_or_else(|| "no certificate loaded".to_string())?;
        let mut configs = Vec::with_capacity(self.certs.len());
        for c in &self.certs {
            let mut one = BindTls {
                certs: vec![LoadedCert {
                    names: Vec::new(),
                    excluded: Vec::new(),
                    opts: None,
                    ..c.clone()
                }],
                strict_sni: false,
                ..self.clone()
            };
            // Lines sharing options would repeat the same warnings: each
            // is said once.
            let mut said = Vec::new();
            if let Some(o) = &c.opts {
                apply_line_opts(&mut one, o, &mut said)?;
            }
            configs.push(one.server_config(&mut said)?);
            for w in said {
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
        }
        Ok(ListenTls {
            config,
            per_cert: Some(PerCert { resolver, configs }),
            chooser,
        })
    }
}

/// A crt-list line's options over a copy of the bind line's settings.
fn apply_line_opts(
    t: &mut BindTls,
    o: &LineOpts,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    if let Some(a) = &o.alpn {
        t.alpn = alpn_protocols(a, true, warnings);
    }
    if o.min_ver.is_some() {
        t.suites.min_ver = o.min_ver;
    }
    if o.max_ver.is_some() {
        t.suites.max_ver = o.max_ver;
    }
    if o.ciphers.is_some() {
        t.suites.ciphers = o.ciphers.clone();
    }
    if o.ciphersuites.is_some() {
        t.suites.ciphersuites = o.ciphersuites.clone();
    }
    if let Some(v) = o.verify {
        t.verify = v;
    }
    if let Some(ca) = &o.ca_file {
        t.ca = Some(Arc::new(certs::load_ca(ca).map_err(|e| e.to_string())?));
    }
    Ok(())
}

/// What the ACL fetches of a TLS client connection read, taken once after
/// the handshake.
#[derive(Debug, Clone, Default)]
pub(crate) struct TlsFacts {
    pub(crate) sni: Option<Box<str>>,
    /// `ssl_fc_protocol`: `TLSv1.2` or `TLSv1.3`.
    pub(crate) protocol: &'static str,
    /// `ssl_c_used`: the client presented a certificate.
    pub(crate) client_cert: bool,
    /// ALPN chose `h2`: the connection speaks HTTP/2.
    pub(crate) h2: bool,
    /// `ssl_fc_alpn`: the protocol ALPN chose.
    pub(crate) alpn: Option<Box<[u8]>>,
    /// `ssl_fc_cipher`: the suite, as OpenSSL (so HAProxy) names it.
    pub(crate) cipher: &'static str,
    /// `ssl_fc_use_keysize`, `ssl_fc_alg_keysize`: the suite's key bits.
    pub(crate) keysize: i64,
    /// `ssl_fc_is_resumed`: the handshake resumed a session.
    pub(crate) resumed: bool,
    /// The peer's certificate chain, leaf first, as DER: the client's on
    /// a listener (`ssl_c_*`; empty without one), the server's on a
    /// server connection (`ssl_s_*`).
    pub(crate) peer_chain: Box<[Box<[u8]>]>,
    /// The certificate a listener presented (`ssl_f_*`): the one its
    /// certificates give the ClientHello's SNI.
    pub(crate) own_cert: Option<Arc<rustls::sign::CertifiedKey>>,
    /// The ClientHello as `tune.ssl.capture-buffer-size` keeps it
    /// (`ssl_fc_cipherlist_*`, `ssl_fc_*list_bin`,
    /// `ssl_fc_protocol_hello_id`); None without the setting.
    pub(crate) hello: Option<Box<HelloCapture>>,
}

/// The parts of a ClientHello a listener captures for the `ssl_fc_*list`
/// fetches, as HAProxy 2.6 keeps them: one buffer of
/// `tune.ssl.capture-buffer-size` bytes holding, in order and each cut to
/// what room is left, the cipher suites, the extensions' types, the
/// supported groups and the point formats; the hash of the whole cipher
/// list and the hello's version besides. `wire::client_hello::capture`
/// reads it from the hello's bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HelloCapture {
    /// The ClientHello's legacy version (`ssl_fc_protocol_hello_id`).
    pub(crate) version: u16,
    /// xxh64 of the whole cipher suite list (`ssl_fc_cipherlist_xxh`).
    pub(crate) xxh: u64,
    /// The parts, one after the other (`wire::client_hello::capture`
    /// fills them).
    pub(crate) data: Box<[u8]>,
    pub(crate) ciphers: usize,
    pub(crate) exts: (usize, usize),
    pub(crate) groups: (usize, usize),
    pub(crate) formats: (usize, usize),
}

impl HelloCapture {
    pub(crate) fn ciphers(&self) -> &[u8] {
        &self.data[..self.ciphers]
    }
    pub(crate) fn extensions(&self) -> &[u8] {
        &self.data[self.exts.0..self.exts.0 + self.exts.1]
    }
    pub(crate) fn groups(&self) -> &[u8] {
        &self.data[self.groups.0..self.groups.0 + self.groups.1]
    }
    pub(crate) fn formats(&self) -> &[u8] {
        &self.data[self.formats.0..self.formats.0 + self.formats.1]
    }
}

/// OpenSSL's name and key size of a suite rustls negotiated.
fn suite_facts(suite: Option<rustls::SupportedCipherSuite>) -> (&'static str, i64) {
    use rustls::CipherSuite as C;
    match suite.map(|s| s.suite()) {
        Some(C::TLS13_AES_128_GCM_SHA256) => ("TLS_AES_128_GCM_SHA256", 128),
        Some(C::TLS13_AES_256_GCM_SHA384) => ("TLS_AES_256_GCM_SHA384", 256),
        Some(C::TLS13_CHACHA20_POLY1305_SHA256) => ("TLS_CHACHA20_POLY1305_SHA256", 256),
        Some(C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) => ("ECDHE-RSA-AES128-GCM-SHA256", 128),
        Some(C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384) => ("ECDHE-RSA-AES256-GCM-SHA384", 256),
        Some(C::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256) => {
            ("ECDHE-RSA-CHACHA20-POLY1305", 256)
        }
        Some(C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256) => ("ECDHE-ECDSA-AES128-GCM-SHA256", 128),
        Some(C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384) => ("ECDHE-ECDSA-AES256-GCM-SHA384", 256),
        Some(C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256) => {
            ("ECDHE-ECDSA-CHACHA20-POLY1305", 256)
        }
        _ => ("", 0),
    }
}

/// A TLS version as OpenSSL names it.
fn protocol_name(v: Option<ProtocolVersion>) -> &'static str {
    match v {
        Some(ProtocolVersion::TLSv1_3) => "TLSv1.3",
        Some(ProtocolVersion::TLSv1_2) => "TLSv1.2",
        _ => "",
    }
}

impl TlsFacts {
    /// A listener's connection, once its handshake is done; `own` the
    /// certificate it presented.
    pub(crate) fn of(
        conn: &rustls::ServerConnection,
        own: Option<Arc<rustls::sign::CertifiedKey>>,
    ) -> Self {
        let (cipher, keysize) = suite_facts(conn.negotiated_cipher_suite());
        TlsFacts {
            sni: conn.server_name().map(Into::into),
            protocol: protocol_name(conn.protocol_version()),
            client_cert: conn.peer_certificates().is_some_and(|c| !c.is_empty()),
            h2: conn.alpn_protocol() == Some(b"h2"),
            alpn: conn.alpn_protocol().map(Into::into),
            cipher,
            keysize,
            resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            peer_chain: conn
                .peer_certificates()
                .unwrap_or_default()
                .iter()
                .map(|c| Box::from(c.as_ref()))
                .collect(),
            own_cert: own,
            hello: None,
        }
    }

    /// A connection to a server, once its handshake is done (`ssl_bc_*`,
    /// `ssl_s_*`).
    pub(crate) fn of_server(conn: &rustls::ClientConnection) -> Self {
        let (cipher, keysize) = suite_facts(conn.negotiated_cipher_suite());
        TlsFacts {
            sni: None,
            protocol: protocol_name(conn.protocol_version()),
            client_cert: false,
            h2: conn.alpn_protocol() == Some(b"h2"),
            alpn: conn.alpn_protocol().map(Into::into),
            cipher,
            keysize,
            resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            peer_chain: conn
                .peer_certificates()
                .unwrap_or_default()
                .iter()
                .map(|c| Box::from(c.as_ref()))
                .collect(),
            own_cert: None,
            hello: None,
        }
    }
}
