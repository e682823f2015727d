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
pub enum CertError {
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
    #[error("crt-list '{0}' line {1}: {2}")]
    CrtList(String, usize, String),
    #[error("unable to load CA file '{0}': {1}")]
    Ca(String, String),
}

/// One loaded certificate with the names it answers to.
#[derive(Debug, Clone)]
pub struct LoadedCert {
    pub key: Arc<CertifiedKey>,
    /// Exact names and `*.suffix` wildcards, lower-case.
    pub names: Vec<String>,
}

/// Loads a PEM holding a chain (leaf first) and its private key. When the
/// file has no key, `<file>.key` is tried, as HAProxy does.
pub fn load_pem(path: &Path) -> Result<LoadedCert, CertError> {
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
    })
}

/// Files of a `crt <dir>`: every regular file, in name order, except the
/// companions HAProxy skips (`.key`, `.ocsp`, `.issuer`, `.sctl`).
pub fn load_dir(dir: &Path) -> Result<Vec<LoadedCert>, CertError> {
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

/// A `crt-list` file: `<pem> [[ssl options]] [sni filter ...]` per line;
/// `#` comments and blank lines skipped. Filters replace the certificate's
/// own names; negative filters (`!name`) are ignored.
pub fn load_crt_list(list: &Path, base: Option<&Path>) -> Result<Vec<LoadedCert>, CertError> {
    let shown = list.display().to_string();
    let text = std::fs::read_to_string(list).map_err(|e| CertError::Read(shown.clone(), e))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let Some(file) = words.next() else { continue };
        let mut path = PathBuf::from(file);
        if path.is_relative()
            && let Some(b) = base
        {
            path = b.join(path);
        }
        let rest: Vec<&str> = words.collect();
        let filters: Vec<&str> = if rest.first().is_some_and(|w| w.starts_with('[')) {
            // Per-line ssl options are not supported: say so.
            return Err(CertError::CrtList(
                shown,
                n + 1,
                "per-certificate '[...]' options are not supported by sluice yet".into(),
            ));
        } else {
            rest
        };
        let certs = if path.is_dir() {
            load_dir(&path)?
        } else {
            vec![load_pem(&path)?]
        };
        for mut c in certs {
            let positive: Vec<String> = filters
                .iter()
                .filter(|f| !f.starts_with('!'))
                .map(|f| f.to_ascii_lowercase())
                .collect();
            if !positive.is_empty() {
                c.names = positive;
            }
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err(CertError::CrtList(shown, 0, "no certificate".into()));
    }
    Ok(out)
}

/// Picks the certificate by SNI: an exact name first, then a wildcard
/// covering the first label, else the default (the first loaded).
#[derive(Debug)]
pub struct SniResolver {
    exact: HashMap<String, Arc<CertifiedKey>>,
    wildcard: HashMap<String, Arc<CertifiedKey>>,
    default: Arc<CertifiedKey>,
    /// `strict-sni`: no default, a client must name a known host.
    strict: bool,
}

impl SniResolver {
    /// None when `certs` is empty.
    pub fn new(certs: &[LoadedCert], strict: bool) -> Option<Self> {
        let default = certs.first()?.key.clone();
        let mut exact = HashMap::new();
        let mut wildcard = HashMap::new();
        for c in certs {
            for n in &c.names {
                // The first certificate naming a host wins, as in HAProxy.
                match n.strip_prefix("*.") {
                    Some(suffix) => wildcard.entry(suffix.to_string()),
                    None => exact.entry(n.clone()),
                }
                .or_insert_with(|| c.key.clone());
            }
        }
        Some(SniResolver {
            exact,
            wildcard,
            default,
            strict,
        })
    }

    fn lookup(&self, sni: &str) -> Option<Arc<CertifiedKey>> {
        let sni = sni.trim_end_matches('.').to_ascii_lowercase();
        if let Some(k) = self.exact.get(&sni) {
            return Some(k.clone());
        }
        if let Some((_, parent)) = sni.split_once('.')
            && let Some(k) = self.wildcard.get(parent)
        {
            return Some(k.clone());
        }
        None
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let found = hello.server_name().and_then(|n| self.lookup(n));
        match found {
            Some(k) => Some(k),
            // Strict: the handshake fails (counted as a failed one).
            None if self.strict => None,
            None => Some(self.default.clone()),
        }
    }
}

/// Loads a CA bundle (`ca-file`).
pub fn load_ca(path: &Path) -> Result<rustls::RootCertStore, CertError> {
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
