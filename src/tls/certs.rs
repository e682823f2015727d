//! Certificates and keys from PEM files, HAProxy's way: one file holds the
//! chain and the key (in any order), a directory holds many such files, a
//! `crt-list` names files with their SNI filters. The served certificate is
//! picked by SNI among the names of the certificates (or the filters).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// Why a certificate could not be loaded (the message is the reason shown
/// at the config line).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CertError {
    #[error("unable to load SSL certificate from PEM file '{0}': {1}")]
    Read(String, std::io::Error),
    #[error("unable to load SSL certificate from PEM file '{0}': no certificate found")]
    NoCert(String),
    #[error("unable to load SSL private key from PEM file '{0}': no private key found")]
    NoKey(String),
    #[error("unable to load SSL private key from PEM file '{0}': {1}")]
    BadKey(String, String),
    #[error("inconsistencies between private key and certificate loaded from PEM file '{0}'")]
    Mismatch(String),
    #[error("unable to load SSL certificate from PEM file '{0}': {1}")]
    BadPem(String, String),
    #[error("unable to scan directory '{0}': {1}")]
    Dir(String, std::io::Error),
    #[error("no certificate found in directory '{0}'")]
    EmptyDir(String),
    #[error("'crt-list' : parsing [{0}:{1}]: {2}")]
    CrtList(String, usize, String),
    #[error("'crt-list' : no certificate in '{0}'")]
    EmptyCrtList(String),
    #[error("unable to load CA file '{0}': {1}")]
    Ca(String, String),
    #[error("unable to configure CRL file '{0}': {1}")]
    Crl(String, String),
}

/// One loaded certificate with the names it answers to.
#[derive(Debug, Clone)]
pub(crate) struct LoadedCert {
    pub(crate) key: Arc<CertifiedKey>,
    /// Exact names and `*.suffix` wildcards, lower-case.
    pub(crate) names: Vec<String>,
    /// The `!name` filters of its crt-list line: names its own wildcards
    /// do not cover (HAProxy's exclusions are per line).
    pub(crate) excluded: Vec<String>,
    /// The `[...]` options of its crt-list line, if any.
    pub(crate) opts: Option<Arc<LineOpts>>,
}

/// The `[...]` options of a crt-list line: they override the bind line's
/// for the handshakes that pick the line's certificate (and for those that
/// get the default certificate, when it is the line's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LineOpts {
    pub(crate) alpn: Option<String>,
    pub(crate) min_ver: Option<crate::tls::TlsVersion>,
    pub(crate) max_ver: Option<crate::tls::TlsVersion>,
    pub(crate) verify: Option<crate::tls::Verify>,
    pub(crate) ca_file: Option<PathBuf>,
    pub(crate) ciphers: Option<String>,
    pub(crate) ciphersuites: Option<String>,
}

/// The crt-list options HAProxy 2.6 allows that sluice cannot honour
/// (rustls has no NPN, no CRL on this path, no per-line curves; early
/// data would need sluice to replay-protect requests).
const LINE_UNSUPPORTED: &[(&str, usize)] = &[
    ("allow-0rtt", 0),
    ("ca-verify-file", 1),
    ("crl-file", 1),
    ("curves", 1),
    ("ecdhe", 1),
    ("no-ca-names", 0),
    ("npn", 1),
];

impl LineOpts {
    /// Parses the words between `[` and `]`; the error is the reason.
    fn parse(words: &[&str], ca_base: Option<&Path>) -> Result<LineOpts, String> {
        let mut o = LineOpts::default();
        let mut i = 0;
        while let Some(&w) = words.get(i) {
            if let Some((_, skip)) = LINE_UNSUPPORTED.iter().find(|(k, _)| *k == w) {
                if i + skip >= words.len() {
                    return Err(format!("ssl args out of '[]' for {w}"));
                }
                return Err(format!("'{w}' is not supported by sluice"));
            }
            let known = [
                "alpn",
                "ca-file",
                "ciphers",
                "ciphersuites",
                "ssl-min-ver",
                "ssl-max-ver",
                "verify",
            ];
            if !known.contains(&w) {
                return Err(format!("unknown ssl keyword {w}"));
            }
            let Some(&a) = words.get(i + 1) else {
                return Err(format!("ssl args out of '[]' for {w}"));
            };
            match w {
                "alpn" => o.alpn = Some(a.to_string()),
                "ca-file" => {
                    o.ca_file = Some(match ca_base {
                        Some(b) if !a.starts_with('/') => b.join(a),
                        _ => PathBuf::from(a),
                    })
                }
                "ciphers" => o.ciphers = Some(a.to_string()),
                "ciphersuites" => o.ciphersuites = Some(a.to_string()),
                "verify" => {
                    o.verify = Some(match a {
                        "none" => crate::tls::Verify::None,
                        "optional" => crate::tls::Verify::Optional,
                        "required" => crate::tls::Verify::Required,
                        _ => {
                            return Err(format!(
                                "'verify' : unknown verify method '{a}', only 'none', 'optional', and 'required' are supported"
                            ));
                        }
                    })
                }
                _ => {
                    let v = crate::tls::TlsVersion::parse(a)
                        .ok_or_else(|| format!("'{a}' : unknown ssl/tls version"))?;
                    if w == "ssl-min-ver" {
                        o.min_ver = Some(v);
                    } else {
                        o.max_ver = Some(v);
                    }
                }
            }
            i += 2;
        }
        Ok(o)
    }
}

/// Loads a PEM holding a chain (leaf first) and its private key. When the
/// file has no key, `<file>.key` is tried, as HAProxy does.
pub(crate) fn load_pem(path: &Path) -> Result<LoadedCert, CertError> {
    let shown = path.display().to_string();
    let data = std::fs::read(path).map_err(|e| CertError::Read(shown.clone(), e))?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&data)
        .collect::<Result<_, _>>()
        .map_err(|e| CertError::BadPem(shown.clone(), e.to_string()))?;
    if chain.is_empty() {
        return Err(CertError::NoCert(shown));
    }
    let key = match PrivateKeyDer::from_pem_slice(&data) {
        Ok(k) => k,
        Err(rustls::pki_types::pem::Error::NoItemsFound) => {
            let mut side = path.as_os_str().to_owned();
            side.push(".key");
            let side = PathBuf::from(side);
            match std::fs::read(&side) {
                Ok(d) => PrivateKeyDer::from_pem_slice(&d)
                    .map_err(|_| CertError::NoKey(shown.clone()))?,
                Err(_) => return Err(CertError::NoKey(shown)),
            }
        }
        Err(e) => return Err(CertError::BadKey(shown, e.to_string())),
    };
    let signer = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| CertError::BadKey(shown.clone(), e.to_string()))?;
    let names = cert_names(&chain[0]);
    // The key must be the leaf's: compared here on the public key alone.
    // rustls' own `keys_match` parses the whole certificate with webpki
    // first, which refuses valid certificates OpenSSL (so HAProxy) loads:
    // X.509 v1 ones, ones with a critical extension webpki does not know.
    if !signer
        .public_key()
        .is_some_and(|spki| same_public_key(&spki, &chain[0]))
    {
        return Err(CertError::Mismatch(shown));
    }
    let key = CertifiedKey::new(chain, signer);
    Ok(LoadedCert {
        key: Arc::new(key),
        names,
        excluded: Vec::new(),
        opts: None,
    })
}

/// Files of a `crt <dir>`: every regular file, in name order, except the
/// companions HAProxy skips (`.key`, `.ocsp`, `.issuer`, `.sctl`).
pub(crate) fn load_dir(dir: &Path) -> Result<Vec<LoadedCert>, CertError> {
    let shown = dir.display().to_string();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| CertError::Dir(shown.clone(), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| {
            let name = p.to_string_lossy();
            ![".key", ".ocsp", ".issuer", ".sctl"]
                .iter()
                .any(|s| name.ends_with(s))
        })
        .collect();
    files.sort();
    let certs = files
        .iter()
        .map(|p| load_pem(p))
        .collect::<Result<Vec<_>, _>>()?;
    if certs.is_empty() {
        return Err(CertError::EmptyDir(shown));
    }
    Ok(certs)
}

/// A `crt-list` file: `<pem|dir> [[<ssl options>]] [[!]<sni filter> ...]`
/// per line; `#` comments and blank lines skipped. Filters replace the
/// certificate's own names (a line with only `!` filters has none);
/// `!name` keeps the line's wildcards off `name`, `!*` does nothing (it
/// only keeps the certificate's own names out), as in HAProxy 2.6.
/// Relative paths are under `crt_base` (certificates) and `ca_base`
/// (`ca-file`).
pub(crate) fn load_crt_list(
    list: &Path,
    crt_base: Option<&Path>,
    ca_base: Option<&Path>,
) -> Result<Vec<LoadedCert>, CertError> {
    let shown = list.display().to_string();
    let text = std::fs::read_to_string(list).map_err(|e| CertError::Read(shown.clone(), e))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = |msg: String| CertError::CrtList(shown.clone(), n + 1, msg);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (file, opts, filters) = split_line(line).map_err(|m| at(m.to_string()))?;
        let opts = match opts {
            Some(words) => Some(Arc::new(LineOpts::parse(&words, ca_base).map_err(at)?)),
            None => None,
        };
        let mut path = PathBuf::from(file);
        if path.is_relative()
            && let Some(b) = crt_base
        {
            path = b.join(path);
        }
        let certs = if path.is_dir() {
            load_dir(&path)?
        } else {
            vec![load_pem(&path)?]
        };
        let lower = |f: &str| f.to_ascii_lowercase();
        let positive: Vec<String> = filters
            .iter()
            .filter(|f| !f.starts_with('!'))
            .map(|f| lower(f))
            .collect();
        let excluded: Vec<String> = filters
            .iter()
            .filter_map(|f| f.strip_prefix('!'))
            .filter(|f| !f.starts_with('*'))
            .map(lower)
            .collect();
        for mut c in certs {
            if !filters.is_empty() {
                c.names = positive.clone();
            }
            c.excluded = excluded.clone();
            c.opts = opts.clone();
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err(CertError::EmptyCrtList(shown));
    }
    Ok(out)
}

/// A crt-list line's certificate, `[...]` words and filters, with
/// HAProxy's complaints about misplaced brackets.
/// A crt-list line cut in three: certificate, `[...]` words, filters.
type LineParts<'a> = (&'a str, Option<Vec<&'a str>>, Vec<&'a str>);

fn split_line(line: &str) -> Result<LineParts<'_>, &'static str> {
    let Some(open) = line.find('[') else {
        if line.contains(']') {
            return Err("missing '['");
        }
        let mut words = line.split_whitespace();
        let file = words.next().unwrap_or_default();
        return Ok((file, None, words.collect()));
    };
    let (head, rest) = (&line[..open], &line[open + 1..]);
    let mut head_words = head.split_whitespace();
    let Some(file) = head_words.next() else {
        return Err("file must start with a cert");
    };
    if head_words.next().is_some() || head.contains(']') {
        return Err("the '[...]' options must follow the certificate");
    }
    let Some(close) = rest.find(']') else {
        return Err("missing ']'");
    };
    let (inside, after) = (&rest[..close], &rest[close + 1..]);
    if inside.contains('[') || after.contains('[') {
        return Err("too many '['");
    }
    if after.contains(']') {
        return Err("too many ']'");
    }
    Ok((
        file,
        Some(inside.split_whitespace().collect()),
        after.split_whitespace().collect(),
    ))
}

/// Picks the certificate by SNI, as HAProxy 2.6: an exact name first (the
/// first certificate naming it), then a wildcard covering the first label
/// (unless that certificate's line excludes the name), else the default
/// (the first loaded).
#[derive(Debug)]
pub(crate) struct SniResolver {
    keys: Vec<Arc<CertifiedKey>>,
    excluded: Vec<Vec<String>>,
    exact: HashMap<String, usize>,
    /// By suffix (`example.com` for `*.example.com`), in load order.
    wildcard: HashMap<String, Vec<usize>>,
    /// `strict-sni`: no default, a client must name a known host.
    strict: bool,
}

impl SniResolver {
    /// None when `certs` is empty.
    pub(crate) fn new(certs: &[LoadedCert], strict: bool) -> Option<Self> {
        certs.first()?;
        let mut exact = HashMap::new();
        let mut wildcard: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, c) in certs.iter().enumerate() {
            for n in &c.names {
                match n.strip_prefix("*.") {
                    Some(suffix) => wildcard.entry(suffix.to_string()).or_default().push(i),
                    None => {
                        // The first certificate naming a host wins.
                        exact.entry(n.clone()).or_insert(i);
                    }
                }
            }
        }
        Some(SniResolver {
            keys: certs.iter().map(|c| c.key.clone()).collect(),
            excluded: certs.iter().map(|c| c.excluded.clone()).collect(),
            exact,
            wildcard,
            strict,
        })
    }

    /// The index of the certificate for `sni` (None: no name matches).
    pub(crate) fn pick(&self, sni: &str) -> Option<usize> {
        let sni = sni.trim_end_matches('.').to_ascii_lowercase();
        if let Some(&i) = self.exact.get(&sni) {
            return Some(i);
        }
        let (_, parent) = sni.split_once('.')?;
        self.wildcard
            .get(parent)?
            .iter()
            .copied()
            .find(|&i| !self.excluded[i].contains(&sni))
    }

    /// The certificate index a handshake naming `sni` gets: the match, else
    /// the default (index 0) unless `strict-sni`.
    pub(crate) fn choose(&self, sni: Option<&str>) -> Option<usize> {
        match sni.and_then(|n| self.pick(n)) {
            Some(i) => Some(i),
            None if self.strict => None,
            None => Some(0),
        }
    }
}

impl SniResolver {
    /// The certificate a handshake naming `sni` gets.
    pub(crate) fn key(&self, sni: Option<&str>) -> Option<Arc<CertifiedKey>> {
        self.choose(sni).map(|i| self.keys[i].clone())
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // Strict with no match: no certificate, the handshake fails
        // (counted as a failed one).
        self.choose(hello.server_name())
            .map(|i| self.keys[i].clone())
    }
}

/// Loads a CA bundle (`ca-file`).
pub(crate) fn load_ca(path: &Path) -> Result<rustls::RootCertStore, CertError> {
    let shown = path.display().to_string();
    let data = std::fs::read(path).map_err(|e| CertError::Ca(shown.clone(), e.to_string()))?;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(&data) {
        let c = c.map_err(|e| CertError::Ca(shown.clone(), e.to_string()))?;
        roots
            .add(c)
            .map_err(|e| CertError::Ca(shown.clone(), e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(CertError::Ca(shown, "no CA certificate found".into()));
    }
    Ok(roots)
}

/// The certificate revocation lists of a PEM file (`crl-file`), for
/// webpki to check the peer's chain against.
pub(crate) fn load_crls(
    path: &Path,
) -> Result<Vec<rustls::pki_types::CertificateRevocationListDer<'static>>, CertError> {
    let shown = path.display().to_string();
    let data = std::fs::read(path).map_err(|e| CertError::Crl(shown.clone(), e.to_string()))?;
    let crls = rustls::pki_types::CertificateRevocationListDer::pem_slice_iter(&data)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CertError::Crl(shown.clone(), e.to_string()))?;
    if crls.is_empty() {
        return Err(CertError::Crl(shown, "no CRL found".into()));
    }
    Ok(crls)
}

/// The DNS names of a certificate: its subjectAltName dNSNames, or its
/// subject's CN when it has none. Lower-case. A small DER walk: only these
/// two fields are needed, not a whole X.509 parser.
pub fn cert_names(cert: &[u8]) -> Vec<String> {
    parse_names(cert).unwrap_or_default()
}

fn parse_names(cert: &[u8]) -> Option<Vec<String>> {
    let (_, cert_body, _) = tlv(cert)?;
    let (_, mut tbs, _) = tlv(cert_body)?;
    // version [0] (optional), serial, signature, issuer, validity, subject
    let (tag, _, rest) = tlv(tbs)?;
    if tag == 0xa0 {
        tbs = rest;
        tbs = tlv(tbs)?.2; // serial
    } else {
        tbs = rest; // that was the serial
    }
    tbs = tlv(tbs)?.2; // signature algorithm
    tbs = tlv(tbs)?.2; // issuer
    tbs = tlv(tbs)?.2; // validity
    let (_, subject, rest) = tlv(tbs)?;
    tbs = tlv(rest)?.2; // subject public key info
    let mut names = Vec::new();
    while let Some((tag, body, rest)) = tlv(tbs) {
        tbs = rest;
        if tag != 0xa3 {
            continue;
        }
        let (_, mut exts, _) = tlv(body)?;
        while let Some((_, ext, rest)) = tlv(exts) {
            exts = rest;
            let (_, oid, mut val) = tlv(ext)?;
            if oid != [0x55, 0x1d, 0x11] {
                continue;
            }
            let (tag, _, after) = tlv(val)?;
            if tag == 0x01 {
                val = after; // critical flag
            }
            let (_, octets, _) = tlv(val)?;
            let (_, mut gns, _) = tlv(octets)?;
            while let Some((tag, v, rest)) = tlv(gns) {
                gns = rest;
                if tag == 0x82 {
                    names.push(String::from_utf8_lossy(v).to_ascii_lowercase());
                }
            }
        }
    }
    if names.is_empty() {
        // Subject: SEQUENCE of SET of SEQUENCE { OID, value }.
        let mut rdns = subject;
        while let Some((_, set, rest)) = tlv(rdns) {
            rdns = rest;
            let (_, atv, _) = tlv(set)?;
            let (_, oid, val) = tlv(atv)?;
            if oid == [0x55, 0x04, 0x03] {
                let (_, v, _) = tlv(val)?;
                names.push(String::from_utf8_lossy(v).to_ascii_lowercase());
            }
        }
    }
    Some(names)
}

/// Whether the SubjectPublicKeyInfo `spki` (as the signing key gives it)
/// is the one of certificate `cert`: same algorithm, same curve for EC
/// keys, same key bits. The parameters of an RSA key are not compared:
/// they are NULL or absent, both meaning none.
fn same_public_key(spki: &[u8], cert: &[u8]) -> bool {
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
    let (Some(key), Some(cert)) = (spki_parts(spki), cert_spki(cert).and_then(spki_parts)) else {
        return false;
    };
    key.oid == cert.oid && key.bits == cert.bits && (key.oid == RSA || key.params == cert.params)
}

/// The pieces of a SubjectPublicKeyInfo that tell keys apart.
struct SpkiParts<'a> {
    oid: &'a [u8],
    /// The algorithm's parameters (the curve of an EC key): tag, value.
    params: Option<(u8, &'a [u8])>,
    bits: &'a [u8],
}

fn spki_parts(spki: &[u8]) -> Option<SpkiParts<'_>> {
    let (_, body, _) = tlv(spki)?;
    let (_, alg, rest) = tlv(body)?;
    let (_, bits, _) = tlv(rest)?;
    let (_, oid, params) = tlv(alg)?;
    let params = tlv(params).map(|(t, v, _)| (t, v));
    Some(SpkiParts { oid, params, bits })
}

/// The SubjectPublicKeyInfo of a certificate, tag and length included.
fn cert_spki(cert: &[u8]) -> Option<&[u8]> {
    let (_, cert_body, _) = tlv(cert)?;
    let (_, mut tbs, _) = tlv(cert_body)?;
    // version [0] (absent in a v1 certificate), serial, signature, issuer,
    // validity, subject, then the key.
    if tbs.first() == Some(&0xa0) {
        tbs = tlv(tbs)?.2;
    }
    for _ in 0..5 {
        tbs = tlv(tbs)?.2;
    }
    let (_, _, rest) = tlv(tbs)?;
    Some(&tbs[..tbs.len() - rest.len()])
}

/// One DER tag-length-value: (tag, value, rest).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        first as usize
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let mut len = 0usize;
        for &b in &rest[..n] {
            len = (len << 8) | b as usize;
        }
        rest = &rest[n..];
        len
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}
