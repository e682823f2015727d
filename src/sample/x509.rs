//! The certificate fetches, on `x509-parser`: the client's certificate as
//! the TLS handshake verified it (`ssl_c_*`), the server's on a connection
//! to it (`ssl_s_*`) and the one a listener presented (`ssl_f_*`), each
//! field as HAProxy prints it from OpenSSL (a DN as `/C=FR/CN=name`, times
//! as ASN.1 writes them, algorithms by OpenSSL's short names). The three
//! families are one code, on a different certificate.

use std::borrow::Cow;

use sha1::Digest as _;
use x509_parser::prelude::{FromDer, X509Certificate, X509Name};

use super::arg::{Arg, ArgSpec, ArgType as A};
use super::fetch::{Ctx, FetchDef, L5CLI, def};
use super::value::{Sample, SmpType as T};

/// `[<entry>[,<occ>[,<format>]]]` of the DN fetches.
const DN: ArgSpec = ArgSpec::of(&[A::Str, A::Sint, A::Str], 0);

/// Whose certificate a family of fetches reads: the client's (`ssl_c_*`),
/// the server's (`ssl_s_*`), the listener's own (`ssl_f_*`).
const CLIENT: u8 = 0;
const SERVER: u8 = 1;
const FRONT: u8 = 2;

/// One family's fetches of a certificate's fields: `$p` the prefix, `$w`
/// whose certificate; the chain fetch is declared apart (the listener's
/// own family has none).
macro_rules! cert_fetches {
    ($p:literal, $w:expr) => {
        [
            def(concat!($p, "der"), L5CLI, ArgSpec::NONE, T::Bin, |_, cx| {
                leaf::<{ $w }>(cx).map(|d| Sample::Bin(Cow::Borrowed(d)))
            }),
            def(
                concat!($p, "sha1"),
                L5CLI,
                ArgSpec::NONE,
                T::Bin,
                |_, cx| {
                    let d = leaf::<{ $w }>(cx)?;
                    Some(Sample::Bin(Cow::Owned(sha1::Sha1::digest(d).to_vec())))
                },
            ),
            def(
                concat!($p, "serial"),
                L5CLI,
                ArgSpec::NONE,
                T::Bin,
                |_, cx| {
                    with_cert::<{ $w }, _>(cx, |c| Sample::Bin(Cow::Owned(c.raw_serial().to_vec())))
                },
            ),
            def(
                concat!($p, "version"),
                L5CLI,
                ArgSpec::NONE,
                T::Sint,
                |_, cx| with_cert::<{ $w }, _>(cx, |c| Sample::Sint(i64::from(c.version().0) + 1)),
            ),
            def(concat!($p, "s_dn"), L5CLI, DN, T::Str, |a, cx| {
                with_cert::<{ $w }, _>(cx, |c| dn(c.subject(), a)).flatten()
            }),
            def(concat!($p, "i_dn"), L5CLI, DN, T::Str, |a, cx| {
                with_cert::<{ $w }, _>(cx, |c| dn(c.issuer(), a)).flatten()
            }),
            def(
                concat!($p, "notbefore"),
                L5CLI,
                ArgSpec::NONE,
                T::Str,
                |_, cx| {
                    with_cert::<{ $w }, _>(cx, |c| asn1_time(&c.validity().not_before)).flatten()
                },
            ),
            def(
                concat!($p, "notafter"),
                L5CLI,
                ArgSpec::NONE,
                T::Str,
                |_, cx| {
                    with_cert::<{ $w }, _>(cx, |c| asn1_time(&c.validity().not_after)).flatten()
                },
            ),
            def(
                concat!($p, "sig_alg"),
                L5CLI,
                ArgSpec::NONE,
                T::Str,
                |_, cx| {
                    with_cert::<{ $w }, _>(cx, |c| {
                        short_name(&c.signature_algorithm.algorithm.to_id_string())
                    })
                    .flatten()
                },
            ),
            def(
                concat!($p, "key_alg"),
                L5CLI,
                ArgSpec::NONE,
                T::Str,
                |_, cx| {
                    with_cert::<{ $w }, _>(cx, |c| {
                        short_name(&c.public_key().algorithm.algorithm.to_id_string())
                    })
                    .flatten()
                },
            ),
        ]
    };
}

static CLIENT_CERT: [FetchDef; 10] = cert_fetches!("ssl_c_", CLIENT);
/// The server's certificate, on the connection to it. HAProxy 2.6 takes
/// them where the client's are (its "usable in" list says so).
static SERVER_CERT: [FetchDef; 10] = cert_fetches!("ssl_s_", SERVER);
/// The certificate the listener presented to the client.
static FRONT_CERT: [FetchDef; 10] = cert_fetches!("ssl_f_", FRONT);

/// The families, for `fetch::TABLES`.
pub(crate) static CERT_TABLES: [&[FetchDef]; 3] = [&CLIENT_CERT, &SERVER_CERT, &FRONT_CERT];

pub(crate) static FETCHES: &[FetchDef] = &[
    // The certificates after the leaf, one DER after the other.
    def("ssl_c_chain_der", L5CLI, ArgSpec::NONE, T::Bin, |_, cx| {
        chain_der(&cx.tls?.peer_chain)
    }),
    // A server's chain holds its own certificate too (OpenSSL gives the
    // peer's chain so on a client connection).
    def("ssl_s_chain_der", L5CLI, ArgSpec::NONE, T::Bin, |_, cx| {
        let chain = &cx.server_conn?.tls.as_ref()?.peer_chain;
        let all: Vec<u8> = chain.iter().flat_map(|c| c.iter().copied()).collect();
        (!all.is_empty()).then_some(Sample::Bin(Cow::Owned(all)))
    }),
    // rustls refuses a handshake whose client certificate does not
    // verify: a connection that got here has OpenSSL's X509_V_OK, 0, at
    // every depth.
    def("ssl_c_err", L5CLI, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.tls.map(|_| Sample::Sint(0))
    }),
    def("ssl_c_ca_err", L5CLI, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.tls.map(|_| Sample::Sint(0))
    }),
    def(
        "ssl_c_ca_err_depth",
        L5CLI,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| cx.tls.map(|_| Sample::Sint(0)),
    ),
];

fn chain_der(chain: &[Box<[u8]>]) -> Option<Sample<'static>> {
    let rest: Vec<u8> = chain
        .iter()
        .skip(1)
        .flat_map(|c| c.iter().copied())
        .collect();
    (!rest.is_empty()).then_some(Sample::Bin(Cow::Owned(rest)))
}

/// The leaf certificate of family `W`, as DER.
fn leaf<'a, const W: u8>(cx: &Ctx<'a>) -> Option<&'a [u8]> {
    match W {
        CLIENT => cx.tls?.peer_chain.first().map(|c| &c[..]),
        SERVER => cx
            .server_conn?
            .tls
            .as_ref()?
            .peer_chain
            .first()
            .map(|c| &c[..]),
        _ => cx.tls?.own_cert.as_ref()?.cert.first().map(|c| c.as_ref()),
    }
}

/// `f` of family `W`'s certificate, parsed (once per fetch: a fetch is
/// rare, a certificate small).
fn with_cert<'a, const W: u8, R>(
    cx: &Ctx<'a>,
    f: impl FnOnce(&X509Certificate<'_>) -> R,
) -> Option<R> {
    let (_, cert) = X509Certificate::from_der(leaf::<W>(cx)?).ok()?;
    Some(f(&cert))
}

/// OpenSSL's short name of an attribute or algorithm, by OID; the dotted
/// OID for one it does not name here.
fn attr_name(oid: &str) -> Cow<'static, str> {
    Cow::Borrowed(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "street",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.5" => "serialNumber",
        "2.5.4.4" => "SN",
        "2.5.4.42" => "GN",
        "2.5.4.12" => "title",
        "2.5.4.46" => "dnQualifier",
        "1.2.840.113549.1.9.1" => "emailAddress",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return Cow::Owned(oid.to_string()),
    })
}

fn short_name(oid: &str) -> Option<Sample<'static>> {
    let name = match oid {
        "1.2.840.113549.1.1.1" => "rsaEncryption",
        "1.2.840.113549.1.1.5" => "RSA-SHA1",
        "1.2.840.113549.1.1.11" => "RSA-SHA256",
        "1.2.840.113549.1.1.12" => "RSA-SHA384",
        "1.2.840.113549.1.1.13" => "RSA-SHA512",
        "1.2.840.113549.1.1.10" => "RSASSA-PSS",
        "1.2.840.10045.2.1" => "id-ecPublicKey",
        "1.2.840.10045.4.3.2" => "ecdsa-with-SHA256",
        "1.2.840.10045.4.3.3" => "ecdsa-with-SHA384",
        "1.2.840.10045.4.3.4" => "ecdsa-with-SHA512",
        "1.3.101.112" => "ED25519",
        "1.3.101.113" => "ED448",
        other => return Some(Sample::owned_str(other.to_string())),
    };
    Some(Sample::str(name.as_bytes()))
}

/// A DN: whole, as `/<name>=<value>` per entry (or RFC 2253's
/// `<name>=<value>,...`, last entry first, with the format `rfc2253`), or
/// the value of the `<occ>`th `<entry>` (1 the first, -1 the last).
fn dn(name: &X509Name<'_>, a: &[Arg]) -> Option<Sample<'static>> {
    let entries: Vec<(Cow<'static, str>, String)> = name
        .iter_attributes()
        .map(|e| {
            let value = match e.as_str() {
                Ok(v) => v.to_string(),
                Err(_) => String::from_utf8_lossy(e.attr_value().data).into_owned(),
            };
            (attr_name(&e.attr_type().to_id_string()), value)
        })
        .collect();
    let entry = a.first().map_or("", Arg::as_str);
    if !entry.is_empty() {
        let occ = a.get(1).map_or(1, Arg::as_int);
        let found: Vec<&String> = entries
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(entry))
            .map(|(_, v)| v)
            .collect();
        let at = match occ {
            0 => return None,
            n if n > 0 => found.get(n as usize - 1)?,
            n => found.get(found.len().checked_sub(n.unsigned_abs() as usize)?)?,
        };
        return Some(Sample::owned_str((*at).clone()));
    }
    let text = if a.get(2).is_some_and(|f| f.as_str() == "rfc2253") {
        entries
            .iter()
            .rev()
            .map(|(n, v)| format!("{n}={}", rfc2253_escape(v)))
            .collect::<Vec<_>>()
            .join(",")
    } else {
        entries.iter().map(|(n, v)| format!("/{n}={v}")).collect()
    };
    Some(Sample::owned_str(text))
}

/// RFC 2253 §2.4: `,+"\<>;` escaped, and a leading `#` or space and a
/// trailing space.
fn rfc2253_escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let last = v.chars().count().saturating_sub(1);
    for (i, c) in v.chars().enumerate() {
        let edge = (i == 0 && (c == '#' || c == ' ')) || (i == last && c == ' ');
        if edge || matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A validity time as HAProxy gives it: `YYMMDDhhmmssZ`, from a UTCTime
/// of this century (its years 50 to 99 being the 1900s, none), or a
/// GeneralizedTime of the 2000s cut to two digits of year; none for any
/// other.
fn asn1_time(t: &x509_parser::time::ASN1Time) -> Option<Sample<'static>> {
    let d = t.to_datetime();
    let year = d.year();
    if !(2000..2100).contains(&year) || (t.is_utctime() && year >= 2050) {
        return None;
    }
    Some(Sample::owned_str(format!(
        "{:02}{:02}{:02}{:02}{:02}{:02}Z",
        year % 100,
        u8::from(d.month()),
        d.day(),
        d.hour(),
        d.minute(),
        d.second()
    )))
}
