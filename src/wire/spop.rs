//! The Stream Processing Offload Protocol, version 2.0 (HAProxy's
//! `doc/SPOE.txt`, section 3), as the engine side speaks it: frames,
//! their variable-length integers and typed data, and the frames an
//! engine sends (HAPROXY-HELLO, NOTIFY) and reads
//! (AGENT-HELLO, ACK, AGENT-DISCONNECT).

use bytes::{BufMut, BytesMut};

/// The frames after the first of a fragmented NOTIFY.
pub(crate) const UNSET: u8 = 0;
pub(crate) const HAPROXY_HELLO: u8 = 1;
pub(crate) const HAPROXY_DISCONNECT: u8 = 2;
pub(crate) const NOTIFY: u8 = 3;
pub(crate) const AGENT_HELLO: u8 = 101;
pub(crate) const AGENT_DISCONNECT: u8 = 102;
pub(crate) const ACK: u8 = 103;
/// The FIN flag: the frame is whole, or the last of a fragmented one.
pub(crate) const FIN: u32 = 1;

const T_NULL: u8 = 0;
const T_BOOL: u8 = 1;
const T_INT32: u8 = 2;
const T_UINT32: u8 = 3;
const T_INT64: u8 = 4;
const T_UINT64: u8 = 5;
const T_IPV4: u8 = 6;
const T_IPV6: u8 = 7;
const T_STRING: u8 = 8;
const T_BINARY: u8 = 9;

/// A typed value of the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Data {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    /// Sent as a 32-bit unsigned integer (HAProxy's `max-frame-size`).
    Uint32(u32),
    Ipv4(std::net::Ipv4Addr),
    Ipv6(std::net::Ipv6Addr),
    Str(Vec<u8>),
    Bin(Vec<u8>),
}

/// Appends `v` as the protocol's variable-length integer.
pub(crate) fn put_varint(out: &mut BytesMut, mut v: u64) {
    if v < 240 {
        out.put_u8(v as u8);
        return;
    }
    out.put_u8((v | 240) as u8);
    v = (v - 240) >> 4;
    while v >= 128 {
        out.put_u8((v | 128) as u8);
        v = (v - 128) >> 7;
    }
    out.put_u8(v as u8);
}

/// Reads a variable-length integer at the front of `b`.
pub(crate) fn get_varint(b: &mut &[u8]) -> Option<u64> {
    let (&first, rest) = b.split_first()?;
    *b = rest;
    let mut v = u64::from(first);
    if v < 240 {
        return Some(v);
    }
    let mut shift = 4;
    loop {
        let (&c, rest) = b.split_first()?;
        *b = rest;
        v = v.checked_add(u64::from(c) << shift)?;
        shift += 7;
        if c < 128 {
            return Some(v);
        }
        if shift > 63 {
            return None;
        }
    }
}

fn put_str(out: &mut BytesMut, s: &[u8]) {
    put_varint(out, s.len() as u64);
    out.put_slice(s);
}

pub(crate) fn get_str<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
    let n = usize::try_from(get_varint(b)?).ok()?;
    if b.len() < n {
        return None;
    }
    let (s, rest) = b.split_at(n);
    *b = rest;
    Some(s)
}

pub(crate) fn put_data(out: &mut BytesMut, d: &Data) {
    match d {
        Data::Null => out.put_u8(T_NULL),
        Data::Bool(v) => out.put_u8(T_BOOL | if *v { 0x10 } else { 0 }),
        Data::Int(v) => {
            // 32 bits when it fits, as HAProxy sends its integers.
            if let Ok(v32) = i32::try_from(*v) {
                out.put_u8(T_INT32);
                put_varint(out, v32 as u32 as u64);
            } else {
                out.put_u8(T_INT64);
                put_varint(out, *v as u64);
            }
        }
        Data::Uint(v) => {
            out.put_u8(T_UINT64);
            put_varint(out, *v);
        }
        Data::Uint32(v) => {
            out.put_u8(T_UINT32);
            put_varint(out, u64::from(*v));
        }
        Data::Ipv4(a) => {
            out.put_u8(T_IPV4);
            out.put_slice(&a.octets());
        }
        Data::Ipv6(a) => {
            out.put_u8(T_IPV6);
            out.put_slice(&a.octets());
        }
        Data::Str(s) => {
            out.put_u8(T_STRING);
            put_str(out, s);
        }
        Data::Bin(s) => {
            out.put_u8(T_BINARY);
            put_str(out, s);
        }
    }
}

pub(crate) fn get_data(b: &mut &[u8]) -> Option<Data> {
    let (&t, rest) = b.split_first()?;
    *b = rest;
    Some(match t & 0x0f {
        T_NULL => Data::Null,
        T_BOOL => Data::Bool(t & 0x10 != 0),
        // 32-bit values travel as their 32-bit patterns.
        T_INT32 => Data::Int(i64::from(get_varint(b)? as u32 as i32)),
        T_UINT32 => Data::Uint(u64::from(get_varint(b)? as u32)),
        T_INT64 => Data::Int(get_varint(b)? as i64),
        T_UINT64 => Data::Uint(get_varint(b)?),
        T_IPV4 => {
            let (a, rest) = b.split_first_chunk::<4>()?;
            *b = rest;
            Data::Ipv4((*a).into())
        }
        T_IPV6 => {
            let (a, rest) = b.split_first_chunk::<16>()?;
            *b = rest;
            Data::Ipv6((*a).into())
        }
        T_STRING => Data::Str(get_str(b)?.to_vec()),
        T_BINARY => Data::Bin(get_str(b)?.to_vec()),
        _ => return None,
    })
}

/// A frame, without its 4-byte length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame<'a> {
    pub(crate) kind: u8,
    pub(crate) stream_id: u64,
    pub(crate) frame_id: u64,
    pub(crate) payload: &'a [u8],
}

/// Appends a whole frame (its length first) of `kind` with `payload`.
pub(crate) fn put_frame(out: &mut BytesMut, kind: u8, ids: (u64, u64), payload: &[u8]) {
    put_frame_flags(out, kind, FIN, ids, payload);
}

/// Appends a frame with `flags` (FIN or not).
pub(crate) fn put_frame_flags(
    out: &mut BytesMut,
    kind: u8,
    flags: u32,
    ids: (u64, u64),
    payload: &[u8],
) {
    let mut meta = BytesMut::with_capacity(16);
    meta.put_u8(kind);
    meta.put_u32(flags);
    put_varint(&mut meta, ids.0);
    put_varint(&mut meta, ids.1);
    out.put_u32((meta.len() + payload.len()) as u32);
    out.put_slice(&meta);
    out.put_slice(payload);
}

/// Reads a frame (its length removed) into its parts.
pub(crate) fn parse_frame(mut b: &[u8]) -> Option<Frame<'_>> {
    let (&kind, rest) = b.split_first()?;
    b = rest;
    let (_flags, rest) = b.split_first_chunk::<4>()?;
    b = rest;
    let stream_id = get_varint(&mut b)?;
    let frame_id = get_varint(&mut b)?;
    Some(Frame {
        kind,
        stream_id,
        frame_id,
        payload: b,
    })
}

pub(crate) fn put_kv(out: &mut BytesMut, k: &str, v: &Data) {
    put_str(out, k.as_bytes());
    put_data(out, v);
}

/// A message of a NOTIFY frame: its name and named arguments (an empty
/// name for an unnamed one).
pub(crate) fn put_message(out: &mut BytesMut, name: &str, args: &[(&str, Data)]) {
    put_str(out, name.as_bytes());
    out.put_u8(args.len().min(255) as u8);
    for (k, v) in args.iter().take(255) {
        put_kv(out, k, v);
    }
}

/// What an AGENT-HELLO frame says the agent does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AgentHello {
    pub(crate) max_frame_size: Option<u32>,
    pub(crate) pipelining: bool,
    pub(crate) async_acks: bool,
    pub(crate) fragmentation: bool,
}

/// The key/value items of a HELLO or DISCONNECT payload (None at the
/// first malformed one).
fn items(mut b: &[u8]) -> impl Iterator<Item = (&[u8], Data)> {
    std::iter::from_fn(move || {
        if b.is_empty() {
            return None;
        }
        let k = get_str(&mut b)?;
        let v = get_data(&mut b)?;
        Some((k, v))
    })
}

/// The agent's answer to the HELLO: its frame size and capabilities (a
/// comma-separated list, spaces allowed).
pub(crate) fn get_hello(payload: &[u8]) -> AgentHello {
    let mut h = AgentHello::default();
    for (k, v) in items(payload) {
        match (k, v) {
            (b"max-frame-size", Data::Uint(n)) => h.max_frame_size = u32::try_from(n).ok(),
            (b"max-frame-size", Data::Int(n)) => h.max_frame_size = u32::try_from(n).ok(),
            (b"capabilities", Data::Str(caps)) => {
                for c in caps.split(|&b| b == b',') {
                    match c.trim_ascii() {
                        b"pipelining" => h.pipelining = true,
                        b"async" => h.async_acks = true,
                        b"fragmentation" => h.fragmentation = true,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    h
}

/// The `status-code` of an AGENT-DISCONNECT frame (99, unknown, without
/// one).
pub(crate) fn get_status(payload: &[u8]) -> u16 {
    items(payload)
        .find_map(|(k, v)| match (k, v) {
            (b"status-code", Data::Uint(n)) => u16::try_from(n).ok(),
            (b"status-code", Data::Int(n)) => u16::try_from(n).ok(),
            _ => None,
        })
        .unwrap_or(99)
}

/// Where HAProxy cuts a NOTIFY payload of messages into frames whose
/// payload holds at most `room` bytes: the length of each frame's part.
/// An item goes whole into a frame, a message's name and argument count
/// only with room for a two-byte length, the name and the count, except
/// the bytes of a string or binary value, which are split (its type, its
/// length and one byte at least first). None when an item cannot go even
/// in an empty frame, or the payload is not messages.
pub(crate) fn frame_cuts(payload: &[u8], room: usize) -> Option<Vec<usize>> {
    // Each item: its size, the room it needs in the frame, and for a
    // string's bytes the part that must come with the first byte.
    let mut items: Vec<(usize, usize, Option<usize>)> = Vec::new();
    let mut b = payload;
    let taken = |before: &[u8], after: &[u8]| before.len() - after.len();
    while !b.is_empty() {
        let start = b;
        let name = get_str(&mut b)?;
        let (&nargs, rest) = b.split_first()?;
        b = rest;
        items.push((taken(start, b), 2 + name.len() + 1, None));
        for _ in 0..nargs {
            let start = b;
            get_str(&mut b)?;
            let n = taken(start, b);
            items.push((n, n, None));
            let start = b;
            let t = *b.first()? & 0x0f;
            get_data(&mut b)?;
            let n = taken(start, b);
            let head = if matches!(t, T_STRING | T_BINARY) {
                let mut v = &start[1..];
                let len = get_varint(&mut v)?;
                (len > 0).then(|| taken(start, v))
            } else {
                None
            };
            items.push((n, n, head));
        }
    }
    let mut cuts = Vec::new();
    let mut used = 0usize;
    for (size, need, head) in items {
        if used + need.max(size) <= room {
            used += size;
            continue;
        }
        // A string's bytes whose head and a byte fit: the frame is
        // filled with them.
        let left = match head {
            Some(head) if used + head < room => size - (room - used),
            _ => {
                // The item starts the next frame.
                if used == 0 {
                    return None;
                }
                cuts.push(used);
                if need.max(size) <= room {
                    used = size;
                    continue;
                }
                match head {
                    Some(head) if head < room => size - room,
                    _ => return None,
                }
            }
        };
        cuts.push(room);
        let mut left = left;
        while left > room {
            cuts.push(room);
            left -= room;
        }
        used = left;
    }
    cuts.push(used);
    Some(cuts)
}

/// An action of an ACK frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// `set-var`: scope (0 proc, 1 sess, 2 txn, 3 req, 4 res), name, value.
    SetVar(u8, Vec<u8>, Data),
    UnsetVar(u8, Vec<u8>),
}

/// The actions of an ACK frame's payload.
pub(crate) fn get_actions(mut b: &[u8]) -> Option<Vec<Action>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let (&kind, rest) = b.split_first()?;
        let (&nargs, rest) = rest.split_first()?;
        b = rest;
        let (&scope, rest) = b.split_first()?;
        b = rest;
        let name = get_str(&mut b)?.to_vec();
        match (kind, nargs) {
            (1, 3) => out.push(Action::SetVar(scope, name, get_data(&mut b)?)),
            (2, 2) => out.push(Action::UnsetVar(scope, name)),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_their_boundaries() {
        for v in [
            0u64,
            239,
            240,
            2287,
            2288,
            264_431,
            264_432,
            1 << 40,
            u64::MAX >> 2,
        ] {
            let mut out = BytesMut::new();
            put_varint(&mut out, v);
            let mut b = &out[..];
            assert_eq!(get_varint(&mut b), Some(v), "{v}");
            assert!(b.is_empty());
        }
        let mut out = BytesMut::new();
        put_varint(&mut out, 240);
        assert_eq!(&out[..], &[0xf0, 0x00]);
    }

    #[test]
    fn typed_data_round_trips() {
        for d in [
            Data::Null,
            Data::Bool(true),
            Data::Int(-5),
            Data::Int(1 << 40),
            Data::Uint(7),
            Data::Ipv4([10, 0, 0, 1].into()),
            Data::Str(b"abc".to_vec()),
            Data::Bin(vec![0, 1, 2]),
        ] {
            let mut out = BytesMut::new();
            put_data(&mut out, &d);
            let mut b = &out[..];
            assert_eq!(get_data(&mut b), Some(d));
        }
    }

    #[test]
    fn payloads_are_cut_where_haproxy_cuts_them() {
        let msg = |args: &[(&str, Data)]| {
            let mut p = BytesMut::new();
            put_message(&mut p, "m", args);
            p
        };
        // Fits: one frame.
        let p = msg(&[("n", Data::Int(1))]);
        assert_eq!(frame_cuts(&p, 992), Some(vec![p.len()]));
        // A long string is split at the frame's end.
        let p = msg(&[("h", Data::Str(vec![b'a'; 3000]))]);
        assert_eq!(p.len(), 3009);
        assert_eq!(frame_cuts(&p, 992), Some(vec![992, 992, 992, 33]));
        // An integer that does not fit goes whole to the next frame.
        let p = msg(&[
            ("n", Data::Int(1)),
            ("h", Data::Str(vec![b'a'; 976])),
            ("z", Data::Int(1_000_000)),
        ]);
        assert_eq!(frame_cuts(&p, 992), Some(vec![990, 5]));
        // Items go whole into frames of their own when they must...
        let p = msg(&[("n", Data::Int(1))]);
        assert_eq!(frame_cuts(&p, 4), Some(vec![3, 4]));
        // ...and none holds an item larger than a frame but a string.
        let p = msg(&[("z", Data::Int(1_000_000))]);
        assert_eq!(frame_cuts(&p, 4), None);
    }

    #[test]
    fn an_ack_gives_its_actions() {
        let mut p = BytesMut::new();
        p.put_slice(&[1, 3, 2]);
        put_str(&mut p, b"score");
        put_data(&mut p, &Data::Int(42));
        p.put_slice(&[2, 2, 3]);
        put_str(&mut p, b"gone");
        assert_eq!(
            get_actions(&p),
            Some(vec![
                Action::SetVar(2, b"score".to_vec(), Data::Int(42)),
                Action::UnsetVar(3, b"gone".to_vec())
            ])
        );
        assert_eq!(get_actions(&[1, 3]), None);
    }
}
