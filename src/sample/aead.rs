//! `aes_gcm_dec(<bits>,<nonce>,<key>,<aead_tag>)`: AES-GCM decryption of
//! the raw input (HAProxy 2.6's converter, on OpenSSL there). The nonce,
//! key and tag are base64 text, given in the configuration or held by a
//! variable; no sample when the tag does not authenticate the input.

use std::borrow::Cow;

use aes_gcm::aead::AeadInPlace;
use aes_gcm::aead::consts::{U12, U13, U14, U15, U16};
use aes_gcm::aes::{Aes128, Aes192, Aes256};
use aes_gcm::{AesGcm, KeyInit};
use base64::Engine as _;

use super::arg::{Arg, ArgSpec, ArgType as A};
use super::conv::{CheckError, ConvDef, checked};
use super::fetch::Ctx;
use super::value::{Sample, SmpType as T};

pub(crate) static CONVERTERS: &[ConvDef] = &[checked(
    "aes_gcm_dec",
    ArgSpec::of(&[A::Sint, A::Str, A::Str, A::Str], 4),
    args,
    T::Bin,
    T::Bin,
    |s, a, cx| Some(Sample::Bin(Cow::Owned(decrypt(s.bytes()?, a, cx)?))),
)];

fn args(a: &mut [Arg]) -> Result<(), CheckError> {
    if !matches!(a[0].as_int(), 128 | 192 | 256) {
        return Err(CheckError::Invalid(
            "key size must be 128, 192 or 256 (bits).".to_string(),
        ));
    }
    for (arg, what) in a[1..].iter_mut().zip(["nonce", "key", "aead_tag"]) {
        let text = arg.as_str().to_string();
        if super::conv::var_name(&text) {
            *arg = Arg::Var(super::conv::registered(&text)?);
            continue;
        }
        match base64::engine::general_purpose::STANDARD.decode(&text) {
            Ok(b) => *arg = Arg::Bin(b),
            Err(_) => {
                return Err(CheckError::Invalid(format!(
                    "failed to parse {what} : argument needs to be base64 encoded, and can either be a string or a variable"
                )));
            }
        }
    }
    Ok(())
}

/// An argument's bytes: decoded at configuration time, or a variable's
/// base64 text decoded now.
fn bytes_of(a: &Arg, cx: &Ctx<'_>) -> Option<Vec<u8>> {
    match a {
        Arg::Var(v) => {
            let s = cx.var(v)?;
            base64::engine::general_purpose::STANDARD
                .decode(s.bytes()?)
                .ok()
        }
        other => Some(other.as_bytes().to_vec()),
    }
}

fn decrypt(input: &[u8], a: &[Arg], cx: &Ctx<'_>) -> Option<Vec<u8>> {
    let nonce = bytes_of(&a[1], cx)?;
    let key = bytes_of(&a[2], cx)?;
    let tag = bytes_of(&a[3], cx)?;
    // The 96-bit nonce GCM is made for (OpenSSL's default length).
    if nonce.len() != 12 || key.len() * 8 != a[0].as_int() as usize {
        return None;
    }
    let mut out = input.to_vec();
    /// One key size and tag length: the tag may be cut short (to 12 bytes
    /// at least), as OpenSSL checks the bytes it is given.
    macro_rules! open {
        ($aes:ty, $tag:ty) => {{
            let c = AesGcm::<$aes, U12, $tag>::new_from_slice(&key).ok()?;
            c.decrypt_in_place_detached(
                nonce.as_slice().into(),
                b"",
                &mut out,
                tag.as_slice().into(),
            )
            .ok()
        }};
    }
    macro_rules! by_tag {
        ($aes:ty) => {
            match tag.len() {
                12 => open!($aes, U12),
                13 => open!($aes, U13),
                14 => open!($aes, U14),
                15 => open!($aes, U15),
                16 => open!($aes, U16),
                _ => None,
            }
        };
    }
    match key.len() {
        16 => by_tag!(Aes128),
        24 => by_tag!(Aes192),
        _ => by_tag!(Aes256),
    }?;
    Some(out)
}
