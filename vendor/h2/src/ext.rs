//! Extensions specific to the HTTP/2 protocol.

use crate::hpack::BytesStr;

use bytes::Bytes;
use std::fmt;

/// Represents the `:protocol` pseudo-header used by
/// the [Extended CONNECT Protocol].
///
/// [Extended CONNECT Protocol]: https://datatracker.ietf.org/doc/html/rfc8441#section-4
#[derive(Clone, Eq, PartialEq)]
pub struct Protocol {
    value: BytesStr,
}

impl Protocol {
    /// Converts a static string to a protocol name.
    pub const fn from_static(value: &'static str) -> Self {
        Self {
            value: BytesStr::from_static(value),
        }
    }

    /// Returns a str representation of the header.
    pub fn as_str(&self) -> &str {
        self.value.as_str()
    }

    pub(crate) fn try_from(bytes: Bytes) -> Result<Self, std::str::Utf8Error> {
        Ok(Self {
            value: BytesStr::try_from(bytes)?,
        })
    }
}

impl<'a> From<&'a str> for Protocol {
    fn from(value: &'a str) -> Self {
        Self {
            value: BytesStr::from(value),
        }
    }
}

impl AsRef<[u8]> for Protocol {
    fn as_ref(&self) -> &[u8] {
        self.value.as_ref()
    }
}

impl fmt::Debug for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.value.fmt(f)
    }
}

/// sluice: the fields of a request the `http` types refuse, raw, in their
/// order: a name that is no lower-case token, an unknown pseudo-header, a
/// value with a control byte, or a `:scheme`, `:authority` or `:path`
/// that is no URI part (a `:path` with `#` among them, which `http` would
/// cut). When one of those three is refused, each of them the request
/// had is here, and the request's URI is only `/`. The request reaches
/// the application, which answers it (upstream resets the stream, or
/// closes the connection for the fields HPACK decoded).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Refused(pub Vec<(Bytes, Bytes)>);

/// sluice: appends one field to a header block as HAProxy 2.6 encodes it
/// (no Huffman coding, nothing referenced in the dynamic table): a
/// literal with incremental indexing of its name's static-table entry,
/// else a literal without indexing of a new name. `name` must be a valid
/// field name in lower case and `value` a valid field value: they are
/// not checked. The block goes out with
/// [`SendResponse::send_encoded_response`](crate::server::SendResponse::send_encoded_response).
pub fn encode_field(name: &[u8], value: &[u8], dst: &mut bytes::BytesMut) {
    crate::hpack::encode_field(name, value, false, dst)
}
