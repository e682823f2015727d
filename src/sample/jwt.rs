//! JSON Web Tokens (RFC 7519) as HAProxy 2.6 reads them: `jwt_header_query`
//! and `jwt_payload_query` decode a part of a compact JWS and query it as
//! `json_query` does; `jwt_verify` checks its signature (RFC 7518 §3) with
//! a secret (HMAC) or a public key loaded with the configuration, and
//! returns HAProxy's codes (1 verified, 0 not, negative for errors).

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use base64::Engine as _;

use super::arg::{Arg, ArgSpec, ArgType as A};
use super::conv::{CheckError, ConvDef, checked};
use super::fetch::Ctx;
use super::value::{Sample, SmpType as T};

pub(crate) static CONVERTERS: &[ConvDef] = &[
    checked(
        "jwt_header_query",
        ArgSpec::of(&[A::Str, A::Str], 0),
        query_args,
        T::Bin,
        T::Any,
        |s, a, _| query(s.bytes()?, 0, a),
    ),
    checked(
        "jwt_payload_query",
        ArgSpec::of(&[A::Str, A::Str], 0),
        query_args,
        T::Bin,
        T::Any,
        |s, a, _| query(s.bytes()?, 1, a),
    ),
    checked(
        "jwt_verify",
        ArgSpec::of(&[A::Str, A::Str], 2),
        verify_args,
        T::Bin,
        T::Sint,
        |s, a, cx| Some(Sample::Sint(i64::from(verify(s.bytes()?, a, cx)?))),
    ),
];

/// `jwt_*_query([<json_path>],[<output_type>])`: `json_query`'s output
/// type (an empty path is taken, and finds nothing).
fn query_args(a: &mut [Arg]) -> Result<(), CheckError> {
    match a.get(1).map(Arg::as_str) {
        None | Some("int") => Ok(()),
        Some(_) => Err(CheckError::Invalid(
            "output_type only supports \"int\" as argument".to_string(),
        )),
    }
}

/// Part `part` of a token, decoded, queried. HAProxy 2.6 gives nothing
/// without a path (its manual says the decoded part).
fn query<'a>(token: &[u8], part: usize, a: &[Arg]) -> Option<Sample<'a>> {
    a.first()?;
    let text = token.split(|&b| b == b'.').nth(part)?;
    let doc = b64url(text)?;
    super::json::query_sample(&doc, a)
}

/// Base64url without padding (RFC 7515 §2), which HAProxy also takes padded.
fn b64url(text: &[u8]) -> Option<Vec<u8>> {
    let text = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()
}

/// The JWS algorithms (RFC 7518 §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alg {
    Hs(Sha),
    Rs(Sha),
    Es(Sha),
    Ps,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sha {
    S256,
    S384,
    S512,
}

impl Alg {
    fn parse(name: &[u8]) -> Option<Alg> {
        let sha = |bits: &[u8]| match bits {
            b"256" => Some(Sha::S256),
            b"384" => Some(Sha::S384),
            b"512" => Some(Sha::S512),
            _ => None,
        };
        match name {
            b"none" => Some(Alg::None),
            [b'H', b'S', bits @ ..] => sha(bits).map(Alg::Hs),
            [b'R', b'S', bits @ ..] => sha(bits).map(Alg::Rs),
            [b'E', b'S', bits @ ..] => sha(bits).map(Alg::Es),
            [b'P', b'S', bits @ ..] => sha(bits).map(|_| Alg::Ps),
            _ => None,
        }
    }
}

/// HAProxy's return codes.
const FAILURE: i32 = 0;
const SUCCESS: i32 = 1;
const UNKNOWN_ALG: i32 = -1;
const UNMANAGED_ALG: i32 = -2;
const INVALID_TOKEN: i32 = -3;
const UNKNOWN_CERT: i32 = -5;

/// `jwt_verify(<alg>,<key>)`: each may be a variable. A public key file
/// named with a known algorithm is loaded now, as HAProxy loads it at
/// start (never from disk while serving).
fn verify_args(a: &mut [Arg]) -> Result<(), CheckError> {
    let alg = a[0].as_str().to_string();
    let key = a[1].as_str().to_string();
    let alg_is_var = super::conv::var_name(&alg);
    if alg_is_var {
        a[0] = Arg::Var(super::conv::registered(&alg)?);
    } else {
        match Alg::parse(alg.as_bytes()) {
            None => {
                return Err(CheckError::Invalid(format!("unknown JWT algorithm: {alg}")));
            }
            Some(Alg::Ps) => {
                return Err(CheckError::Invalid(
                    "RSASSA-PSS JWS signing not managed yet".to_string(),
                ));
            }
            _ => {}
        }
    }
    if super::conv::var_name(&key) {
        a[1] = Arg::Var(super::conv::registered(&key)?);
        return Ok(());
    }
    let hmac = matches!(Alg::parse(alg.as_bytes()), Some(Alg::Hs(_) | Alg::None));
    if alg_is_var || !hmac {
        // A file that is no public key is left out: the token then gets
        // "unknown certificate" (HAProxy warns at start).
        load_key(&key);
    }
    Ok(())
}

/// A public key loaded from a file, as `ring` verifies with it.
#[derive(Debug)]
enum PublicKey {
    /// PKCS#1 RSAPublicKey.
    Rsa(Vec<u8>),
    /// An uncompressed EC point, with its curve.
    Ec(Curve, Vec<u8>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Curve {
    P256,
    P384,
    Other,
}

/// The public keys of `jwt_verify`, by file name: filled as the
/// configuration is read, read lock-free by the converter (a key may come
/// from a variable naming the file).
fn keys() -> &'static ArcSwap<HashMap<String, Arc<PublicKey>>> {
    static KEYS: std::sync::OnceLock<ArcSwap<HashMap<String, Arc<PublicKey>>>> =
        std::sync::OnceLock::new();
    KEYS.get_or_init(|| ArcSwap::from_pointee(HashMap::new()))
}

fn load_key(path: &str) {
    let Some(key) = std::fs::read(crate::sys::cfgdir::resolve(path))
        .ok()
        .and_then(|pem| parse_key(&pem))
    else {
        return;
    };
    let key = Arc::new(key);
    keys().rcu(|m| {
        let mut m = HashMap::clone(m);
        m.insert(path.to_string(), key.clone());
        m
    });
}

/// A PEM `PUBLIC KEY` (SubjectPublicKeyInfo), RSA or EC.
fn parse_key(pem: &[u8]) -> Option<PublicKey> {
    use x509_parser::prelude::FromDer;
    use x509_parser::x509::SubjectPublicKeyInfo;
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem).ok()?;
    if pem.label != "PUBLIC KEY" {
        return None;
    }
    let (_, spki) = SubjectPublicKeyInfo::from_der(&pem.contents).ok()?;
    let bits = spki.subject_public_key.data.to_vec();
    let oid = spki.algorithm.algorithm.to_id_string();
    match oid.as_str() {
        "1.2.840.113549.1.1.1" => Some(PublicKey::Rsa(bits)),
        "1.2.840.10045.2.1" => {
            let curve = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.as_oid().ok())
                .map(|o| o.to_id_string());
            let curve = match curve.as_deref() {
                Some("1.2.840.10045.3.1.7") => Curve::P256,
                Some("1.3.132.0.34") => Curve::P384,
                _ => Curve::Other,
            };
            Some(PublicKey::Ec(curve, bits))
        }
        _ => None,
    }
}

/// A sample argument's text: a literal, or a variable's value now.
fn text_of(a: &Arg, cx: &Ctx<'_>) -> Option<Vec<u8>> {
    match a {
        Arg::Var(v) => {
            let s = cx.var(v)?;
            s.bytes().map(<[u8]>::to_vec)
        }
        other => Some(other.as_bytes().to_vec()),
    }
}

/// HAProxy's code for `token`; None (no sample) when a variable named
/// for the algorithm or the key is not set.
fn verify(token: &[u8], a: &[Arg], cx: &Ctx<'_>) -> Option<i32> {
    let alg = text_of(&a[0], cx)?;
    let key = text_of(&a[1], cx)?;
    Some(match Alg::parse(&alg) {
        Some(Alg::Ps) => UNMANAGED_ALG,
        Some(alg) => verify_as(alg, token, &key),
        None => UNKNOWN_ALG,
    })
}

fn verify_as(alg: Alg, token: &[u8], key: &[u8]) -> i32 {
    let parts: Vec<&[u8]> = token.split(|&b| b == b'.').collect();
    // `none`: a token of two or three parts, verified when it has no
    // signature.
    if alg == Alg::None {
        return match parts.len() {
            2 => SUCCESS,
            3 if parts[2].is_empty() => SUCCESS,
            3 => FAILURE,
            _ => INVALID_TOKEN,
        };
    }
    if parts.len() != 3 || parts[2].is_empty() {
        return INVALID_TOKEN;
    }
    let Some(sig) = b64url(parts[2]) else {
        return INVALID_TOKEN;
    };
    let signed = &token[..parts[0].len() + 1 + parts[1].len()];
    match alg {
        Alg::Hs(sha) => {
            let alg = match sha {
                Sha::S256 => ring::hmac::HMAC_SHA256,
                Sha::S384 => ring::hmac::HMAC_SHA384,
                Sha::S512 => ring::hmac::HMAC_SHA512,
            };
            let k = ring::hmac::Key::new(alg, key);
            verdict(ring::hmac::verify(&k, signed, &sig).is_ok())
        }
        Alg::Rs(_) | Alg::Es(_) => {
            // An ECDSA signature is r and s side by side (RFC 7518 §3.4):
            // HAProxy takes one that cannot be cut in halves for no token.
            if matches!(alg, Alg::Es(_)) && sig.len() % 2 == 1 {
                return INVALID_TOKEN;
            }
            let Ok(path) = std::str::from_utf8(key) else {
                return UNKNOWN_CERT;
            };
            let keys = keys().load();
            let Some(public) = keys.get(path) else {
                return UNKNOWN_CERT;
            };
            verdict(verify_with(alg, public, signed, &sig))
        }
        Alg::Ps | Alg::None => FAILURE,
    }
}

fn verdict(ok: bool) -> i32 {
    if ok { SUCCESS } else { FAILURE }
}

/// A signature checked with `ring`. P-521 (ES512) is not in `ring`: such
/// a token is not verified.
fn verify_with(alg: Alg, key: &PublicKey, msg: &[u8], sig: &[u8]) -> bool {
    use ring::signature as rs;
    let scheme: &dyn rs::VerificationAlgorithm = match (alg, key) {
        (Alg::Rs(Sha::S256), PublicKey::Rsa(_)) => &rs::RSA_PKCS1_2048_8192_SHA256,
        (Alg::Rs(Sha::S384), PublicKey::Rsa(_)) => &rs::RSA_PKCS1_2048_8192_SHA384,
        (Alg::Rs(Sha::S512), PublicKey::Rsa(_)) => &rs::RSA_PKCS1_2048_8192_SHA512,
        (Alg::Es(Sha::S256), PublicKey::Ec(Curve::P256, _)) => &rs::ECDSA_P256_SHA256_FIXED,
        (Alg::Es(Sha::S384), PublicKey::Ec(Curve::P384, _)) => &rs::ECDSA_P384_SHA384_FIXED,
        _ => return false,
    };
    let bytes = match key {
        PublicKey::Rsa(b) | PublicKey::Ec(_, b) => b,
    };
    rs::UnparsedPublicKey::new(scheme, bytes)
        .verify(msg, sig)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithms_as_rfc_7518_names_them() {
        assert_eq!(Alg::parse(b"HS256"), Some(Alg::Hs(Sha::S256)));
        assert_eq!(Alg::parse(b"ES512"), Some(Alg::Es(Sha::S512)));
        assert_eq!(Alg::parse(b"PS384"), Some(Alg::Ps));
        assert_eq!(Alg::parse(b"none"), Some(Alg::None));
        assert_eq!(Alg::parse(b"RS1024"), None);
        assert_eq!(Alg::parse(b"hs256"), None);
    }

    #[test]
    fn base64url_with_or_without_padding() {
        assert_eq!(b64url(b"AA==").as_deref(), Some(&[0u8][..]));
        assert_eq!(b64url(b"AA").as_deref(), Some(&[0u8][..]));
        assert_eq!(b64url(b"A+/A"), None);
    }
}
