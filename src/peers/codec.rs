//! The peers protocol's messages as bytes (HAProxy's peers protocol 2.1,
//! `doc/peers-v2.0.txt` and what HAProxy 2.6 does): its variable-length
//! integers, the framing of a message, and each message type, encoded
//! and decoded. Pure: no socket, no table; the session (`session.rs`)
//! reads frames from its buffer and gives them here.
//!
//! Every decoding path is bounded by the slice it is given and fails
//! with a [`DecodeError`] rather than reading past it: a message is at
//! most [`MAX_MESSAGE`] bytes, an integer at most ten, a key or a value
//! no longer than what is left of its message.

use crate::config::model::{KeyType, TableDef};
use crate::sample::stick::{DataType, Std};

/// The longest message body taken, HAProxy's buffer size: a longer one
/// is answered with a size-limit error and the connection closed.
pub(crate) const MAX_MESSAGE: usize = 16384;

/// The most bytes the length of a message may take (HAProxy reads the
/// length from a 7-byte head: two for the class and type, five for it).
const MAX_LENGTH_BYTES: usize = 5;

/// Message classes.
pub(crate) const CLASS_CONTROL: u8 = 0;
pub(crate) const CLASS_ERROR: u8 = 1;
pub(crate) const CLASS_TABLE: u8 = 10;
pub(crate) const CLASS_RESERVED: u8 = 255;

/// Types of the table class.
const T_UPDATE: u8 = 0x80;
const T_INCUPDATE: u8 = 0x81;
const T_DEFINE: u8 = 0x82;
const T_SWITCH: u8 = 0x83;
const T_ACK: u8 = 0x84;
const T_UPDATE_TIMED: u8 = 0x85;
const T_INCUPDATE_TIMED: u8 = 0x86;

/// The bit of a type that says a length and a body follow.
const HAS_BODY: u8 = 0x80;

/// Why bytes could not be read as what they should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("message truncated")]
    Truncated,
    #[error("integer encoded on too many bytes")]
    Overlong,
    #[error("bad dictionary entry")]
    Dictionary,
    #[error("empty table name")]
    NoName,
}

/// Appends `v` in the protocol's variable-length form: below 240 one
/// byte; else the low 4 bits over 240, then 7 bits a byte, the high bit
/// set on all but the last.
pub(crate) fn put_int(out: &mut Vec<u8>, v: u64) {
    if v < 240 {
        out.push(v as u8);
        return;
    }
    out.push((v as u8) | 0xf0);
    let mut rest = (v - 240) >> 4;
    while rest >= 128 {
        out.push((rest as u8) | 0x80);
        rest = (rest - 128) >> 7;
    }
    out.push(rest as u8);
}

/// A cursor over a message body: every read checks what is left.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// A variable-length integer (at most ten bytes: the 64 bits).
    pub(crate) fn int(&mut self) -> Result<u64, DecodeError> {
        let first = *self.buf.get(self.pos).ok_or(DecodeError::Truncated)?;
        self.pos += 1;
        let mut v = u64::from(first);
        if first < 240 {
            return Ok(v);
        }
        let mut shift = 4u32;
        loop {
            let b = *self.buf.get(self.pos).ok_or(DecodeError::Truncated)?;
            self.pos += 1;
            if shift >= 64 {
                return Err(DecodeError::Overlong);
            }
            v = v.wrapping_add(u64::from(b) << shift);
            shift += 7;
            if b < 128 {
                return Ok(v);
            }
        }
    }

    pub(crate) fn u32_be(&mut self) -> Result<u32, DecodeError> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.left() {
            return Err(DecodeError::Truncated);
        }
        let b = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }
}

/// What the start of a receive buffer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Split<'a> {
    /// Not a whole message yet.
    Incomplete,
    /// A message: its class, type and body, and the bytes it takes.
    Message {
        class: u8,
        kind: u8,
        body: &'a [u8],
        len: usize,
    },
    /// A body longer than [`MAX_MESSAGE`]: a size-limit error.
    TooBig,
    /// A length that does not end within its five bytes.
    BadLength,
}

/// Cuts the first message off `buf`.
pub(crate) fn split(buf: &[u8]) -> Split<'_> {
    let (Some(&class), Some(&kind)) = (buf.first(), buf.get(1)) else {
        return Split::Incomplete;
    };
    if kind & HAS_BODY == 0 {
        return Split::Message {
            class,
            kind,
            body: &[],
            len: 2,
        };
    }
    let head = &buf[2..buf.len().min(2 + MAX_LENGTH_BYTES)];
    let mut r = Reader::new(head);
    let n = match r.int() {
        Ok(n) => n,
        Err(_) if head.len() < MAX_LENGTH_BYTES => return Split::Incomplete,
        Err(_) => return Split::BadLength,
    };
    if n > MAX_MESSAGE as u64 {
        return Split::TooBig;
    }
    let start = 2 + r.pos;
    let end = start + n as usize;
    match buf.get(start..end) {
        Some(body) => Split::Message {
            class,
            kind,
            body,
            len: end,
        },
        None => Split::Incomplete,
    }
}

/// Control messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    ResyncRequest = 0,
    ResyncFinished = 1,
    ResyncPartial = 2,
    ResyncConfirm = 3,
    Heartbeat = 4,
}

/// Error messages: the connection closes after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    Protocol = 0,
    SizeLimit = 1,
}

/// The two bytes of a control message.
pub(crate) fn control(out: &mut Vec<u8>, c: Control) {
    out.extend_from_slice(&[CLASS_CONTROL, c as u8]);
}

/// The two bytes of an error message.
pub(crate) fn error(out: &mut Vec<u8>, e: ErrorKind) {
    out.extend_from_slice(&[CLASS_ERROR, e as u8]);
}

/// Appends a table-class message of type `kind` whose body `body` writes.
fn with_body(out: &mut Vec<u8>, kind: u8, body: impl FnOnce(&mut Vec<u8>)) {
    let mut b = Vec::new();
    body(&mut b);
    out.extend_from_slice(&[CLASS_TABLE, kind]);
    put_int(out, b.len() as u64);
    out.extend_from_slice(&b);
}

/// A message of the protocol, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Message<'a> {
    Control(Control),
    Error(ErrorKind),
    /// A table definition: the sender's number for the table, its name,
    /// and the rest, read by [`Define::read`] once the name is known.
    Define {
        id: u64,
        name: &'a [u8],
        tail: &'a [u8],
    },
    Switch(u64),
    Ack {
        table: u64,
        update: u32,
    },
    /// An update, its body read once the table it is for is known.
    Update {
        with_id: bool,
        timed: bool,
        body: &'a [u8],
    },
    /// A class and type HAProxy ignores (an unknown control or table
    /// message, an unknown class).
    Ignored,
    /// The reserved class: a protocol error.
    Reserved,
}

/// Reads one message (as [`split`] cut it).
pub(crate) fn parse(class: u8, kind: u8, body: &[u8]) -> Result<Message<'_>, DecodeError> {
    match class {
        CLASS_CONTROL => Ok(match kind {
            0 => Message::Control(Control::ResyncRequest),
            1 => Message::Control(Control::ResyncFinished),
            2 => Message::Control(Control::ResyncPartial),
            3 => Message::Control(Control::ResyncConfirm),
            4 => Message::Control(Control::Heartbeat),
            _ => Message::Ignored,
        }),
        CLASS_ERROR => Ok(match kind {
            0 => Message::Error(ErrorKind::Protocol),
            1 => Message::Error(ErrorKind::SizeLimit),
            _ => Message::Ignored,
        }),
        CLASS_TABLE => match kind {
            T_DEFINE => {
                let mut r = Reader::new(body);
                let id = r.int()?;
                let n = r.int()?;
                // The name must be followed by something.
                if n == 0 {
                    return Err(DecodeError::NoName);
                }
                if n >= r.left() as u64 {
                    return Err(DecodeError::Truncated);
                }
                let name = r.bytes(n as usize)?;
                Ok(Message::Define {
                    id,
                    name,
                    tail: &r.buf[r.pos..],
                })
            }
            T_SWITCH => Ok(Message::Switch(Reader::new(body).int()?)),
            T_ACK => {
                let mut r = Reader::new(body);
                let table = r.int()?;
                Ok(Message::Ack {
                    table,
                    update: r.u32_be()?,
                })
            }
            T_UPDATE | T_INCUPDATE | T_UPDATE_TIMED | T_INCUPDATE_TIMED => Ok(Message::Update {
                with_id: kind == T_UPDATE || kind == T_UPDATE_TIMED,
                timed: kind == T_UPDATE_TIMED || kind == T_INCUPDATE_TIMED,
                body,
            }),
            _ => Ok(Message::Ignored),
        },
        CLASS_RESERVED => Ok(Message::Reserved),
        _ => Ok(Message::Ignored),
    }
}

/// A key type's number on the wire.
pub(crate) fn net_key_type(k: KeyType) -> u64 {
    match k {
        KeyType::Integer => 2,
        KeyType::Ip => 4,
        KeyType::Ipv6 => 5,
        KeyType::String(_) => 6,
        KeyType::Binary(_) => 7,
    }
}

/// Types a data type's number on the wire (HAProxy 2.6 knows 25 of them;
/// a newer peer's others are ignored).
fn data_type(n: usize) -> Option<DataType> {
    DataType::ALL.get(n).copied()
}

/// A table definition: what the sender's updates of that table carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Define {
    /// The sender's number for the table.
    pub(crate) id: u64,
    /// The table's name on the wire (a `peers` section's table is
    /// `/<name>`).
    pub(crate) name: Vec<u8>,
    pub(crate) key_type: u64,
    pub(crate) key_len: u64,
    /// The data types the updates carry, one bit each.
    pub(crate) data: u64,
    /// The sender's `expire`, when given (HAProxy 1.9 and later).
    pub(crate) expire: Option<u64>,
    /// The elements of each array type the updates carry.
    pub(crate) counts: Vec<(DataType, u32)>,
}

impl Define {
    /// The definition of `def` as this process sends it, numbered `id`.
    pub(crate) fn of(def: &TableDef, id: u64) -> Define {
        Define {
            id,
            name: wire_name(&def.name).into_bytes(),
            key_type: net_key_type(def.key),
            key_len: u64::from(def.key.size()),
            data: def
                .store
                .iter()
                .fold(0, |bits, s| bits | 1 << (s.data as u64)),
            expire: Some(u64::from(def.expire)),
            counts: def
                .store
                .iter()
                .filter(|s| s.data.is_array())
                .map(|s| (s.data, s.count))
                .collect(),
        }
    }

    /// The rest of a definition whose head [`parse`] read, once its name
    /// is known to be a table's here (HAProxy's `peer_treat_definemsg`
    /// reads no further for another name): Err when malformed (a
    /// protocol error), None when its parameters are missing or do not
    /// match its data types (the definition is ignored).
    pub(crate) fn read(id: u64, name: &[u8], tail: &[u8]) -> Result<Option<Define>, DecodeError> {
        let mut r = Reader::new(tail);
        let key_type = r.int()?;
        let key_len = r.int()?;
        let data = r.int()?;
        let mut def = Define {
            id,
            name: name.to_vec(),
            key_type,
            key_len,
            data,
            expire: None,
            counts: Vec::new(),
        };
        let stored = (0..DataType::ALL.len()).filter(|b| data & (1 << b) != 0);
        let Ok(expire) = r.int() else {
            // No parameters: arrays cannot be read.
            if stored.filter_map(data_type).any(DataType::is_array) {
                return Ok(None);
            }
            return Ok(Some(def));
        };
        def.expire = Some(expire);
        for d in stored.filter_map(data_type) {
            if !d.is_array() && d.std() != Std::Freq {
                continue;
            }
            let params = (|| -> Result<Option<u32>, DecodeError> {
                if r.int()? != d as u64 {
                    return Ok(None);
                }
                let count = if d.is_array() { r.int()? as u32 } else { 1 };
                if d.std() == Std::Freq {
                    r.int()?;
                }
                Ok(Some(count))
            })();
            match params {
                Ok(Some(count)) if d.is_array() => def.counts.push((d, count)),
                Ok(Some(_)) => {}
                _ => return Ok(None),
            }
        }
        Ok(Some(def))
    }

    /// The elements of `d` in each update (1 but for arrays).
    pub(crate) fn count(&self, d: DataType) -> u32 {
        if !d.is_array() {
            return 1;
        }
        self.counts
            .iter()
            .find(|(t, _)| *t == d)
            .map_or(0, |(_, n)| *n)
    }

    /// The data types the updates carry, in order.
    pub(crate) fn types(&self) -> impl Iterator<Item = DataType> + '_ {
        DataType::ALL
            .into_iter()
            .filter(|d| self.data & (1 << (*d as u64)) != 0)
    }
}

/// The name a table goes by on the wire: a proxy's table its proxy's
/// name, a `peers` section's `/<name>` (so that they never meet).
pub(crate) fn wire_name(name: &str) -> String {
    match name.split_once('/') {
        Some((_, short)) => format!("/{short}"),
        None => name.to_string(),
    }
}

/// Appends the definition message of `def` as this process sends it:
/// the data types' bits, the table's `expire`, then the parameters of
/// each array (its type, its elements, the period of a rate) and of each
/// rate (its type and period).
pub(crate) fn define(out: &mut Vec<u8>, def: &TableDef, id: u64) {
    with_body(out, T_DEFINE, |b| {
        let d = Define::of(def, id);
        put_int(b, d.id);
        put_int(b, d.name.len() as u64);
        b.extend_from_slice(&d.name);
        put_int(b, d.key_type);
        put_int(b, d.key_len);
        put_int(b, d.data);
        put_int(b, u64::from(def.expire));
        for s in &def.store {
            let freq = s.data.std() == Std::Freq;
            if !s.data.is_array() && !freq {
                continue;
            }
            put_int(b, s.data as u64);
            if s.data.is_array() {
                put_int(b, u64::from(s.count));
            }
            if freq {
                put_int(b, u64::from(s.period));
            }
        }
    });
}

/// Appends a table switch message (HAProxy sends a table's definition
/// instead, as this process does: read only, written by the tests).
#[cfg(test)]
pub(crate) fn switch(out: &mut Vec<u8>, id: u64) {
    with_body(out, T_SWITCH, |b| put_int(b, id));
}

/// Appends an acknowledgement of the updates of table `id` (the peer's
/// number) up to `update`.
pub(crate) fn ack(out: &mut Vec<u8>, id: u64, update: u32) {
    with_body(out, T_ACK, |b| {
        put_int(b, id);
        b.extend_from_slice(&update.to_be_bytes());
    });
}

/// One element of a data type in an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Int(u64),
    /// A frequency counter: how long ago its period started, its count
    /// in this period and in the previous one.
    Freq {
        age: u64,
        cur: u64,
        prev: u64,
    },
    Dict(DictValue),
}

/// A `server_key` in an update: its text goes once per connection, then
/// its number in the sender's cache of 128.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DictValue {
    None,
    /// Cache entry `id` (from 1), known already.
    Cached(u32),
    /// Cache entry `id` (from 1) is now this text.
    New(u32, Vec<u8>),
}

/// The dictionary cache entries of a connection.
pub(crate) const DICT_ENTRIES: u32 = 128;

/// An update as read, or as to be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Update {
    /// The sender's update number (absent: the previous one plus one).
    pub(crate) id: Option<u32>,
    /// Milliseconds left to the entry, for a timed update.
    pub(crate) expire: Option<u32>,
    /// The key as the store keeps it.
    pub(crate) key: Vec<u8>,
    pub(crate) values: Vec<(DataType, Vec<Value>)>,
}

/// Appends an update of an entry of a table keyed by `key` (its type in
/// the store's form), types in the table's order.
pub(crate) fn update(out: &mut Vec<u8>, key_type: KeyType, u: &Update) {
    let kind = match (u.id.is_some(), u.expire.is_some()) {
        (true, true) => T_UPDATE_TIMED,
        (false, true) => T_INCUPDATE_TIMED,
        (true, false) => T_UPDATE,
        (false, false) => T_INCUPDATE,
    };
    with_body(out, kind, |b| {
        if let Some(id) = u.id {
            b.extend_from_slice(&id.to_be_bytes());
        }
        if let Some(e) = u.expire {
            b.extend_from_slice(&e.to_be_bytes());
        }
        match key_type {
            KeyType::String(_) => {
                let s = &u.key[..memchr::memchr(0, &u.key).unwrap_or(u.key.len())];
                put_int(b, s.len() as u64);
                b.extend_from_slice(s);
            }
            KeyType::Integer => {
                let mut n = [0u8; 4];
                let k = &u.key[..u.key.len().min(4)];
                n[..k.len()].copy_from_slice(k);
                b.extend_from_slice(&u32::from_ne_bytes(n).to_be_bytes());
            }
            _ => b.extend_from_slice(&u.key),
        }
        for (_, vals) in &u.values {
            for v in vals {
                match v {
                    Value::Int(n) => put_int(b, *n),
                    Value::Freq { age, cur, prev } => {
                        put_int(b, *age);
                        put_int(b, *cur);
                        put_int(b, *prev);
                    }
                    Value::Dict(DictValue::None) => put_int(b, 0),
                    Value::Dict(DictValue::Cached(id)) => {
                        let mut e = Vec::new();
                        put_int(&mut e, u64::from(*id));
                        put_int(b, e.len() as u64);
                        b.extend_from_slice(&e);
                    }
                    Value::Dict(DictValue::New(id, text)) => {
                        let mut e = Vec::new();
                        put_int(&mut e, u64::from(*id));
                        put_int(&mut e, text.len() as u64);
                        e.extend_from_slice(text);
                        put_int(b, e.len() as u64);
                        b.extend_from_slice(&e);
                    }
                }
            }
        }
    });
}

/// Reads an update's body for a local table keyed `key_type`, whose
/// sender defined it as `def`. Data types past those HAProxy 2.6 knows
/// are left unread.
pub(crate) fn read_update(
    body: &[u8],
    with_id: bool,
    timed: bool,
    key_type: KeyType,
    def: &Define,
) -> Result<Update, DecodeError> {
    let mut r = Reader::new(body);
    let id = if with_id { Some(r.u32_be()?) } else { None };
    let expire = if timed { Some(r.u32_be()?) } else { None };
    let key = match key_type {
        KeyType::String(size) => {
            let n = r.int()?;
            let n = usize::try_from(n).map_err(|_| DecodeError::Truncated)?;
            let b = r.bytes(n)?;
            // Cut to the key's size, less its NUL, and at a NUL within.
            let b = &b[..b.len().min(size.saturating_sub(1) as usize)];
            b[..memchr::memchr(0, b).unwrap_or(b.len())].to_vec()
        }
        KeyType::Integer => r.u32_be()?.to_ne_bytes().to_vec(),
        k => r.bytes(k.size() as usize)?.to_vec(),
    };
    let mut values = Vec::new();
    for d in def.types() {
        let n = def.count(d);
        let mut vals = Vec::with_capacity(n.min(64) as usize);
        for _ in 0..n {
            let v = match d.std() {
                Std::Freq => Value::Freq {
                    age: r.int()?,
                    cur: r.int()?,
                    prev: r.int()?,
                },
                Std::Dict => Value::Dict(read_dict(&mut r)?),
                _ => Value::Int(r.int()?),
            };
            vals.push(v);
        }
        values.push((d, vals));
    }
    Ok(Update {
        id,
        expire,
        key,
        values,
    })
}

/// A `server_key`: its length (0: none), then the cache entry's number
/// and, the first time, the text.
fn read_dict(r: &mut Reader<'_>) -> Result<DictValue, DecodeError> {
    let len = r.int()?;
    if len == 0 {
        return Ok(DictValue::None);
    }
    let len = usize::try_from(len).map_err(|_| DecodeError::Truncated)?;
    let mut inner = Reader::new(r.bytes(len)?);
    let id = inner.int()?;
    if id == 0 || id > u64::from(DICT_ENTRIES) {
        return Err(DecodeError::Dictionary);
    }
    let id = id as u32;
    if inner.left() == 0 {
        return Ok(DictValue::Cached(id));
    }
    let n = inner.int()?;
    let n = usize::try_from(n).map_err(|_| DecodeError::Truncated)?;
    Ok(DictValue::New(id, inner.bytes(n)?.to_vec()))
}

/// The handshake's hello, the connecting side's three lines: the
/// protocol and its version, the name it expects the other side to have,
/// its own name with its process id and 1.
pub(crate) fn hello(remote: &str, local: &str, pid: u32, minor: u32) -> String {
    format!("HAProxyS 2.{minor}\n{remote}\n{local} {pid} 1\n")
}

/// The handshake status codes.
pub(crate) mod status {
    /// A connection being made (not on the wire).
    pub(crate) const CONNECTING: u32 = 100;
    /// Connected, the handshake under way (not on the wire).
    pub(crate) const CONNECTED: u32 = 110;
    pub(crate) const SUCCESS: u32 = 200;
    pub(crate) const TRY_AGAIN: u32 = 300;
    pub(crate) const PROTOCOL: u32 = 501;
    pub(crate) const VERSION: u32 = 502;
    pub(crate) const HOST: u32 = 503;
    pub(crate) const PEER: u32 = 504;

    /// The word `show peers` gives a status.
    pub(crate) fn name(code: u32) -> &'static str {
        match code {
            CONNECTING => "CONN",
            CONNECTED => "HSHK",
            SUCCESS => "ESTA",
            TRY_AGAIN => "RETR",
            PROTOCOL => "PROT",
            VERSION => "VERS",
            HOST => "NAME",
            PEER => "UNKN",
            _ => "NONE",
        }
    }
}

/// The version of a hello's first line, `HAProxyS <major>.<minor>`: Err
/// with the status to answer (501 for another protocol, 502 for a
/// version other than 2.0 or 2.1).
pub(crate) fn hello_version(line: &[u8]) -> Result<u32, u32> {
    let Some(v) = line.strip_prefix(b"HAProxyS ") else {
        return Err(status::PROTOCOL);
    };
    let v = std::str::from_utf8(v).map_err(|_| status::VERSION)?;
    let (maj, min) = v.split_once('.').ok_or(status::VERSION)?;
    let num = |s: &str| -> Option<u32> {
        (!s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())).then(|| {
            s.bytes().fold(0u32, |n, c| {
                n.wrapping_mul(10).wrapping_add(u32::from(c - b'0'))
            })
        })
    };
    match (num(maj), num(min)) {
        (Some(2), Some(min)) if min <= 1 => Ok(min),
        _ => Err(status::VERSION),
    }
}

/// The status line's code, read as `atoi` reads it.
pub(crate) fn status_code(line: &[u8]) -> u32 {
    line.iter()
        .take_while(|c| c.is_ascii_digit())
        .fold(0u32, |n, c| {
            n.wrapping_mul(10).wrapping_add(u32::from(c - b'0'))
        })
}

#[cfg(test)]
mod tests;
