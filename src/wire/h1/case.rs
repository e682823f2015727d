//! HAProxy's `h1-case-adjust`: the spelling some field names are sent
//! with to HTTP/1 peers that wrongly rely on it, in place of the lower
//! case every name otherwise goes out in.

use std::collections::HashMap;

/// The names to respell: the name as it would go out (in lower case) to
/// the spelling to send instead, of the same length (they differ only in
/// case, the configuration checks it). The names are compared exactly, as
/// HAProxy 2.6 looks them up: an entry whose `<from>` is not in lower case
/// (which its documentation asks for) never matches.
#[derive(Debug, Default)]
pub(crate) struct CaseAdjust {
    names: HashMap<Box<[u8]>, Box<[u8]>>,
}

impl CaseAdjust {
    /// The table of `(from, to)` pairs; `None` when empty,
    /// so that a proxy with nothing to respell does no work.
    pub(crate) fn new(pairs: &[(String, String)]) -> Option<CaseAdjust> {
        let names: HashMap<Box<[u8]>, Box<[u8]>> = pairs
            .iter()
            .filter(|(from, to)| from.len() == to.len())
            .map(|(from, to)| (from.as_bytes().into(), to.as_bytes().into()))
            .collect();
        (!names.is_empty()).then_some(CaseAdjust { names })
    }

    /// The spelling of `name`, if it has one.
    fn spelling(&self, name: &[u8]) -> Option<&[u8]> {
        self.names.get(name).map(|s| &s[..])
    }

    /// Respells, in place, the field names of the head in `head` (the
    /// lines after the first, up to the blank line or the end): every
    /// field, those sluice adds too, as HAProxy adjusts every field it
    /// writes. The lengths do not change.
    pub(crate) fn apply(&self, head: &mut [u8]) {
        let mut at = match memchr::memchr(b'\n', head) {
            Some(lf) => lf + 1,
            None => return,
        };
        while at < head.len() {
            let end = memchr::memchr(b'\n', &head[at..]).map_or(head.len(), |p| at + p);
            let line = &head[at..end];
            if line.is_empty() || line == b"\r" {
                return;
            }
            if let Some(colon) = memchr::memchr(b':', line)
                && let Some(to) = self.spelling(&line[..colon])
                && to.len() == colon
            {
                head[at..at + colon].copy_from_slice(to);
            }
            at = end + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(pairs: &[(&str, &str)]) -> CaseAdjust {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        CaseAdjust::new(&pairs).expect("entries")
    }

    #[test]
    fn respells_field_names_only() {
        let t = table(&[("host", "HOST"), ("Content-Type", "CONTENT-TYPE")]);
        let mut head =
            b"GET /host HTTP/1.1\r\nhost: host\r\ncontent-type: x\r\nx-host: y\r\n\r\nhost: body"
                .to_vec();
        t.apply(&mut head);
        // The start line, the values, other names, the body and an entry
        // whose `<from>` is not in lower case are left alone.
        assert_eq!(
            &head[..],
            b"GET /host HTTP/1.1\r\nHOST: host\r\ncontent-type: x\r\nx-host: y\r\n\r\nhost: body"
        );
        assert!(CaseAdjust::new(&[]).is_none());
    }
}
