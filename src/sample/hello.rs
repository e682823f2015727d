//! The client's ClientHello as a listener captured it
//! (`tune.ssl.capture-buffer-size`, `wire::client_hello::capture`): the
//! cipher suites, extensions, supported groups and point formats it
//! offered (`ssl_fc_cipherlist_*`, `ssl_fc_*list_bin`, the parts of a JA3
//! fingerprint) and its version (`ssl_fc_protocol_hello_id`). Without the
//! setting none is kept and these fetches give nothing, as in HAProxy.

use std::borrow::Cow;

use super::arg::{Arg, ArgSpec, ArgType as A};
use super::fetch::{Ctx, FetchDef, L5CLI, def};
use super::value::{Sample, SmpType as T};
use crate::tls::HelloCapture;
use crate::wire::client_hello::is_grease;

/// `[<filter_option>]`: 1 leaves the GREASE values out.
const FILTER: ArgSpec = ArgSpec::of(&[A::Sint], 0);

pub(crate) static FETCHES: &[FetchDef] = &[
    def("ssl_fc_cipherlist_bin", L5CLI, FILTER, T::Str, |a, cx| {
        list(cx, a, HelloCapture::ciphers).map(Sample::Bin)
    }),
    def("ssl_fc_cipherlist_hex", L5CLI, FILTER, T::Bin, |a, cx| {
        let l = list(cx, a, HelloCapture::ciphers)?;
        let hex: String = l.iter().map(|b| format!("{b:02X}")).collect();
        Some(Sample::owned_str(hex))
    }),
    def("ssl_fc_cipherlist_str", L5CLI, FILTER, T::Str, |a, cx| {
        let l = list(cx, a, HelloCapture::ciphers)?;
        let names: Vec<Cow<'static, str>> = l
            .chunks_exact(2)
            .map(|c| suite_name(u16::from_be_bytes([c[0], c[1]])))
            .collect();
        Some(Sample::owned_str(names.join(",")))
    }),
    // The hash of the whole list, however much of it was kept.
    def(
        "ssl_fc_cipherlist_xxh",
        L5CLI,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| Some(Sample::Sint(hello(cx)?.xxh as i64)),
    ),
    def("ssl_fc_extlist_bin", L5CLI, FILTER, T::Str, |a, cx| {
        list(cx, a, HelloCapture::extensions).map(Sample::Bin)
    }),
    def("ssl_fc_eclist_bin", L5CLI, FILTER, T::Str, |a, cx| {
        list(cx, a, HelloCapture::groups).map(Sample::Bin)
    }),
    def(
        "ssl_fc_ecformats_bin",
        L5CLI,
        ArgSpec::NONE,
        T::Str,
        |_, cx| Some(Sample::Bin(Cow::Borrowed(hello(cx)?.formats()))),
    ),
    def(
        "ssl_fc_protocol_hello_id",
        L5CLI,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| Some(Sample::Sint(i64::from(hello(cx)?.version))),
    ),
];

fn hello<'a>(cx: &Ctx<'a>) -> Option<&'a HelloCapture> {
    cx.tls?.hello.as_deref()
}

/// Part `part` of the captured hello, its GREASE values left out when the
/// filter asks.
fn list<'a>(cx: &Ctx<'a>, a: &[Arg], part: fn(&HelloCapture) -> &[u8]) -> Option<Cow<'a, [u8]>> {
    let l = part(hello(cx)?);
    if a.first().is_none_or(|f| f.as_int() == 0) {
        return Some(Cow::Borrowed(l));
    }
    Some(Cow::Owned(
        l.chunks(2)
            .filter(|c| !is_grease(c))
            .flatten()
            .copied()
            .collect(),
    ))
}

/// A cipher suite by OpenSSL's name (HAProxy names them through it), or
/// `UNKNOWN(<id>)` for one OpenSSL does not know.
fn suite_name(id: u16) -> Cow<'static, str> {
    let name = match id {
        0x1301 => "TLS_AES_128_GCM_SHA256",
        0x1302 => "TLS_AES_256_GCM_SHA384",
        0x1303 => "TLS_CHACHA20_POLY1305_SHA256",
        0x1304 => "TLS_AES_128_CCM_SHA256",
        0x1305 => "TLS_AES_128_CCM_8_SHA256",
        0xc02b => "ECDHE-ECDSA-AES128-GCM-SHA256",
        0xc02c => "ECDHE-ECDSA-AES256-GCM-SHA384",
        0xc02f => "ECDHE-RSA-AES128-GCM-SHA256",
        0xc030 => "ECDHE-RSA-AES256-GCM-SHA384",
        0xcca8 => "ECDHE-RSA-CHACHA20-POLY1305",
        0xcca9 => "ECDHE-ECDSA-CHACHA20-POLY1305",
        0xccaa => "DHE-RSA-CHACHA20-POLY1305",
        0x009e => "DHE-RSA-AES128-GCM-SHA256",
        0x009f => "DHE-RSA-AES256-GCM-SHA384",
        0xc023 => "ECDHE-ECDSA-AES128-SHA256",
        0xc024 => "ECDHE-ECDSA-AES256-SHA384",
        0xc027 => "ECDHE-RSA-AES128-SHA256",
        0xc028 => "ECDHE-RSA-AES256-SHA384",
        0xc009 => "ECDHE-ECDSA-AES128-SHA",
        0xc00a => "ECDHE-ECDSA-AES256-SHA",
        0xc013 => "ECDHE-RSA-AES128-SHA",
        0xc014 => "ECDHE-RSA-AES256-SHA",
        0x0067 => "DHE-RSA-AES128-SHA256",
        0x006b => "DHE-RSA-AES256-SHA256",
        0x0033 => "DHE-RSA-AES128-SHA",
        0x0039 => "DHE-RSA-AES256-SHA",
        0x009c => "AES128-GCM-SHA256",
        0x009d => "AES256-GCM-SHA384",
        0x003c => "AES128-SHA256",
        0x003d => "AES256-SHA256",
        0x002f => "AES128-SHA",
        0x0035 => "AES256-SHA",
        0x00ff => "TLS_EMPTY_RENEGOTIATION_INFO_SCSV",
        _ => return Cow::Owned(format!("UNKNOWN({id:04x})")),
    };
    Cow::Borrowed(name)
}
