//! The codec against bytes HAProxy 2.6.12 sent to another HAProxy 2.6.12
//! (two processes peering through a relay that recorded both directions),
//! and against random and truncated input.

use super::*;
use crate::config::model::{Config, TableDef};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The configuration both recorded processes ran (less their frontends).
const RECORDED: &str = "global
    localpeer A
peers p
    peer A 127.0.0.1:21001
    peer B 127.0.0.1:22002
    table tip type ip size 100 expire 60s store gpc0,conn_cnt,http_req_rate(10s),gpt0
    table tstr type string len 32 size 100 expire 60s store gpc(3),gpc_rate(2,5s),gpt(2)
    table tint type integer size 100 store server_id,server_key,conn_cur,bytes_in_cnt
    table tv6 type ipv6 size 100 store http_req_cnt
    table tbin type binary len 8 size 100 store sess_cnt
    table t2 type string len 32 size 100 expire 60s store gpc0,http_req_cnt
backend be
    stick-table type ip size 100 expire 60s store server_id,server_key peers p
    server s1 127.0.0.1:21090
backend web
    stick-table type integer size 100 peers p store gpc0
";

fn config() -> Config {
    let l = crate::config::parse_texts(
        &[("t.cfg".into(), RECORDED.into())],
        &|_| None,
        &|_: &str, _: u16| Err("no DNS".into()),
    );
    l.config.unwrap_or_else(|| panic!("{:?}", l.diagnostics))
}

fn table(name: &str) -> TableDef {
    let c = config();
    c.global.peers[0]
        .tables
        .iter()
        .chain(c.proxies.iter().filter_map(|p| p.table.as_ref()))
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no table {name}"))
        .clone()
}

/// One message of a recording: class, type and body.
fn message(bytes: &[u8]) -> (u8, u8, &[u8]) {
    match split(bytes) {
        Split::Message {
            class,
            kind,
            body,
            len,
        } => {
            assert_eq!(len, bytes.len(), "one whole message");
            (class, kind, body)
        }
        other => panic!("{other:?}"),
    }
}

/// The definitions HAProxy sent, byte for byte what sluice sends for the
/// same tables under the same numbers.
const DEFINES: &[(&str, u64, &str)] = &[
    (
        "p/tstr",
        4,
        "0a 82 19 04 05 2f74737472 06 21 f0f1fe6e f0971c 16 02 17 03 18 02 f8a901",
    ),
    ("p/tint", 3, "0a 82 0e 03 05 2f74696e74 02 04 f1f58201 00"),
    ("p/tv6", 2, "0a 82 0b 02 04 2f747636 05 10 f011 00"),
    ("p/tbin", 1, "0a 82 0b 01 05 2f7462696e 07 08 80 00"),
    (
        "p/tip",
        5,
        "0a 82 11 05 04 2f746970 04 04 f632 f0971c 0a f0e203",
    ),
    ("p/t2", 1, "0a 82 0e 01 05 2f74737472 06 21 f411 f0971c"),
    ("be", 2, "0a 82 0d 02 02 6265 04 04 f1f1fe00 f0971c"),
    ("web", 3, "0a 82 09 03 03 776562 02 04 04 00"),
];

#[test]
fn definitions_are_haproxys() {
    for &(name, id, bytes) in DEFINES {
        let want = hex(bytes);
        let mut def = table(name);
        if name == "p/t2" {
            // Recorded as `tstr` in the second run.
            def.name = "p/tstr".into();
        }
        let mut got = Vec::new();
        define(&mut got, &def, id);
        assert_eq!(got, want, "{name}");
        // And read back.
        let (class, kind, body) = message(&want);
        let Ok(Message::Define {
            id: rid,
            name: wire,
            tail,
        }) = parse(class, kind, body)
        else {
            panic!("{name}: not a definition");
        };
        assert_eq!((rid, wire), (id, wire_name(&def.name).as_bytes()));
        let d = Define::read(rid, wire, tail).unwrap().unwrap();
        assert_eq!(d, Define::of(&def, id), "{name}");
    }
}

fn defined(name: &str, id: u64) -> Define {
    let mut def = table(name);
    if name == "p/t2" {
        def.name = "p/tstr".into();
    }
    Define::of(&def, id)
}

/// Updates HAProxy sent (timed, with and without their number), read
/// with the table's definition and written back identical.
#[test]
fn updates_are_haproxys() {
    use DataType as D;
    let f = |age, cur, prev| Value::Freq { age, cur, prev };
    let cases: Vec<(&str, &str, Update)> = vec![
        (
            "p/tstr",
            "0a 85 1f 00000003 0000da00 05 68656c6c6f 00 2a 00 01 00 f2a2d88420 00 00 f0f700 01 00",
            Update {
                id: Some(3),
                expire: Some(0xda00),
                key: b"hello".to_vec(),
                values: vec![
                    (D::Gpt, vec![Value::Int(0), Value::Int(42)]),
                    (D::Gpc, vec![Value::Int(0), Value::Int(1), Value::Int(0)]),
                    (D::GpcRate, vec![f(1_108_790_034, 0, 0), f(4192, 1, 0)]),
                ],
            },
        ),
        (
            "p/tint",
            "0a 85 10 00000001 00000000 00000005 03 00 00 00",
            Update {
                id: Some(1),
                expire: Some(0),
                key: 5u32.to_ne_bytes().to_vec(),
                values: vec![
                    (D::ServerId, vec![Value::Int(3)]),
                    (D::ConnCur, vec![Value::Int(0)]),
                    (D::BytesInCnt, vec![Value::Int(0)]),
                    (D::ServerKey, vec![Value::Dict(DictValue::None)]),
                ],
            },
        ),
        (
            "p/tv6",
            "0a 85 19 00000001 00000000 00000000000000000000000000000001 09",
            Update {
                id: Some(1),
                expire: Some(0),
                key: std::net::Ipv6Addr::LOCALHOST.octets().to_vec(),
                values: vec![(D::HttpReqCnt, vec![Value::Int(9)])],
            },
        ),
        (
            "p/tip",
            "0a 85 14 00000008 0000da1e 7f000001 07 02 02 f0f700 02 00",
            Update {
                id: Some(8),
                expire: Some(0xda1e),
                key: vec![127, 0, 0, 1],
                values: vec![
                    (D::Gpt0, vec![Value::Int(7)]),
                    (D::Gpc0, vec![Value::Int(2)]),
                    (D::ConnCnt, vec![Value::Int(2)]),
                    (D::HttpReqRate, vec![f(4192, 2, 0)]),
                ],
            },
        ),
        (
            "p/tip",
            "0a 80 10 00000008 7f000001 07 02 02 f0f700 02 00",
            Update {
                id: Some(8),
                expire: None,
                key: vec![127, 0, 0, 1],
                values: vec![
                    (D::Gpt0, vec![Value::Int(7)]),
                    (D::Gpc0, vec![Value::Int(2)]),
                    (D::ConnCnt, vec![Value::Int(2)]),
                    (D::HttpReqRate, vec![f(4192, 2, 0)]),
                ],
            },
        ),
        (
            "be",
            "0a 85 12 00000005 0000e83e 7f000001 01 04 01 02 7331",
            Update {
                id: Some(5),
                expire: Some(0xe83e),
                key: vec![127, 0, 0, 1],
                values: vec![
                    (D::ServerId, vec![Value::Int(1)]),
                    (
                        D::ServerKey,
                        vec![Value::Dict(DictValue::New(1, b"s1".to_vec()))],
                    ),
                ],
            },
        ),
        (
            "be",
            "0a 80 0b 00000003 7f000001 01 01 01",
            Update {
                id: Some(3),
                expire: None,
                key: vec![127, 0, 0, 1],
                values: vec![
                    (D::ServerId, vec![Value::Int(1)]),
                    (D::ServerKey, vec![Value::Dict(DictValue::Cached(1))]),
                ],
            },
        ),
        (
            "p/t2",
            "0a 86 09 0000e809 02 6b32 01 01",
            Update {
                id: None,
                expire: Some(0xe809),
                key: b"k2".to_vec(),
                values: vec![
                    (D::Gpc0, vec![Value::Int(1)]),
                    (D::HttpReqCnt, vec![Value::Int(1)]),
                ],
            },
        ),
        (
            "web",
            "0a 81 05 00000009 06",
            Update {
                id: None,
                expire: None,
                key: 9u32.to_ne_bytes().to_vec(),
                values: vec![(D::Gpc0, vec![Value::Int(6)])],
            },
        ),
    ];
    for (name, bytes, want) in cases {
        let bytes = hex(bytes);
        let (class, kind, body) = message(&bytes);
        let Ok(Message::Update {
            with_id,
            timed,
            body,
        }) = parse(class, kind, body)
        else {
            panic!("{name}: not an update");
        };
        let key = table(name).key;
        let got = read_update(body, with_id, timed, key, &defined(name, 1)).unwrap();
        assert_eq!(got, want, "{name} {bytes:02x?}");
        let mut again = Vec::new();
        update(&mut again, key, &got);
        assert_eq!(again, bytes, "{name}");
    }
}

#[test]
fn control_and_table_messages() {
    let mut out = Vec::new();
    control(&mut out, Control::ResyncRequest);
    control(&mut out, Control::ResyncPartial);
    control(&mut out, Control::ResyncConfirm);
    control(&mut out, Control::Heartbeat);
    control(&mut out, Control::ResyncFinished);
    error(&mut out, ErrorKind::Protocol);
    error(&mut out, ErrorKind::SizeLimit);
    ack(&mut out, 4, 3);
    ack(&mut out, 2, 0x8000_0001);
    switch(&mut out, 3);
    // As recorded (HAProxy's acks and controls), the last two as built.
    assert_eq!(
        out,
        hex("0000 0002 0003 0004 0001 0100 0101 0a84050400000003 0a84050280000001 0a830103")
    );
    let mut msgs = Vec::new();
    let mut rest = &out[..];
    while let Split::Message {
        class,
        kind,
        body,
        len,
    } = split(rest)
    {
        msgs.push(parse(class, kind, body).unwrap());
        rest = &rest[len..];
    }
    assert!(rest.is_empty());
    assert_eq!(
        msgs,
        [
            Message::Control(Control::ResyncRequest),
            Message::Control(Control::ResyncPartial),
            Message::Control(Control::ResyncConfirm),
            Message::Control(Control::Heartbeat),
            Message::Control(Control::ResyncFinished),
            Message::Error(ErrorKind::Protocol),
            Message::Error(ErrorKind::SizeLimit),
            Message::Ack {
                table: 4,
                update: 3
            },
            Message::Ack {
                table: 2,
                update: 0x8000_0001
            },
            Message::Switch(3),
        ]
    );
    assert_eq!(parse(0, 9, &[]), Ok(Message::Ignored));
    assert_eq!(parse(7, 0x80, &[]), Ok(Message::Ignored));
    assert_eq!(parse(255, 0, &[]), Ok(Message::Reserved));
}

/// The integer sizes of the protocol's document, and every width round
/// trip.
#[test]
fn integers() {
    let len = |v: u64| {
        let mut b = Vec::new();
        put_int(&mut b, v);
        b.len()
    };
    for (v, n) in [
        (0, 1),
        (239, 1),
        (240, 2),
        (2287, 2),
        (2288, 3),
        (264_431, 3),
        (264_432, 4),
        (33_818_863, 4),
        (33_818_864, 5),
        (4_328_786_159, 5),
        (4_328_786_160, 6),
        (u64::MAX, 10),
    ] {
        assert_eq!(len(v), n, "{v}");
    }
    let mut seed = 0x1234_5678_9abc_def0u64;
    for i in 0..10_000u32 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let v = seed >> (i % 64);
        let mut b = Vec::new();
        put_int(&mut b, v);
        let mut r = Reader::new(&b);
        assert_eq!(r.int(), Ok(v));
        assert_eq!(r.left(), 0);
        for cut in 0..b.len() {
            assert_eq!(Reader::new(&b[..cut]).int(), Err(DecodeError::Truncated));
        }
    }
    // Eleven bytes of continuation never make an integer.
    assert_eq!(Reader::new(&[0xff; 12]).int(), Err(DecodeError::Overlong));
}

#[test]
fn framing() {
    assert_eq!(split(&[]), Split::Incomplete);
    assert_eq!(split(&[10]), Split::Incomplete);
    assert_eq!(split(&[10, 0x80]), Split::Incomplete);
    assert_eq!(split(&[10, 0x80, 3, 1, 2]), Split::Incomplete);
    assert_eq!(split(&[10, 0x80, 0xf0]), Split::Incomplete);
    // A length past the buffer's size, or never ending.
    let mut big = vec![10, 0x80];
    put_int(&mut big, MAX_MESSAGE as u64 + 1);
    assert_eq!(split(&big), Split::TooBig);
    assert_eq!(
        split(&[10, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff]),
        Split::BadLength
    );
    let mut max = vec![10, 0x80];
    put_int(&mut max, MAX_MESSAGE as u64);
    max.resize(max.len() + MAX_MESSAGE, 0);
    assert!(matches!(split(&max), Split::Message { len, .. } if len == max.len()));
}

/// A definition whose parameters do not match its types is ignored, one
/// whose head is cut short is malformed.
#[test]
fn bad_definitions() {
    // An array without parameters.
    assert_eq!(Define::read(1, b"t", &hex("06 21 f0f1fe6e")), Ok(None));
    // A parameter of another type.
    assert_eq!(
        Define::read(
            1,
            b"t",
            &hex("06 21 f0f1fe6e f0971c 17 02 17 03 18 02 f8a901")
        ),
        Ok(None)
    );
    // No parameter: an old peer's definition, without arrays.
    assert!(matches!(Define::read(1, b"t", &hex("04 04 04")), Ok(Some(d)) if d.expire.is_none()));
    assert!(Define::read(1, b"t", &hex("04 04")).is_err());
    assert_eq!(parse(10, 0x82, &hex("01 00 04")), Err(DecodeError::NoName));
    assert_eq!(
        parse(10, 0x82, &hex("01 05 2f747374")),
        Err(DecodeError::Truncated)
    );
    // The name must be followed by something.
    assert_eq!(
        parse(10, 0x82, &hex("01 05 2f74737472")),
        Err(DecodeError::Truncated)
    );
}

#[test]
fn dictionary_entries_are_bounded() {
    let def = defined("be", 1);
    let key = table("be").key;
    let body = |dict: &str| hex(&format!("00000001 7f000001 01 {dict}"));
    // Entry 0, entry 129, an entry longer than its message.
    for bad in ["01 00", "02 8101", "05 01 09 7331", "02 f090"] {
        assert!(
            read_update(&body(bad), true, false, key, &def).is_err(),
            "{bad}"
        );
    }
    assert_eq!(
        read_update(&body("01 81"), true, false, key, &def),
        Err(DecodeError::Dictionary)
    );
    assert!(read_update(&body("02 8000"), true, false, key, &def).is_ok());
}

/// A long string key is cut to the table's length, and at a NUL.
#[test]
fn string_keys_are_cut_as_haproxy_cuts_them() {
    let def = defined("p/t2", 1);
    let key = table("p/t2").key;
    let long = "a".repeat(40);
    let mut body = hex("00000001");
    body.push(40);
    body.extend_from_slice(long.as_bytes());
    body.extend_from_slice(&[1, 1]);
    let u = read_update(&body, true, false, key, &def).unwrap();
    assert_eq!(u.key, "a".repeat(32).as_bytes());
    let u = read_update(&hex("00000001 03 610062 01 01"), true, false, key, &def).unwrap();
    assert_eq!(u.key, b"a");
}

#[test]
fn hello_lines() {
    assert_eq!(hello("B", "A", 9155, 1), "HAProxyS 2.1\nB\nA 9155 1\n");
    assert_eq!(hello_version(b"HAProxyS 2.1"), Ok(1));
    assert_eq!(hello_version(b"HAProxyS 2.0"), Ok(0));
    assert_eq!(hello_version(b"HAProxyS 2.2"), Err(status::VERSION));
    assert_eq!(hello_version(b"HAProxyS 3.0"), Err(status::VERSION));
    assert_eq!(hello_version(b"HAProxyS 2."), Err(status::VERSION));
    assert_eq!(hello_version(b"HAProxyS 2.1x"), Err(status::VERSION));
    assert_eq!(hello_version(b"HAProxy 2.1"), Err(status::PROTOCOL));
    assert_eq!(status_code(b"200"), 200);
    assert_eq!(status_code(b"503x"), 503);
    assert_eq!(status_code(b"x"), 0);
}

/// Random bytes, and every prefix of real messages, through the whole
/// reading path: never a panic, never a read past the input.
#[test]
fn fuzzed_and_truncated_input_is_refused_not_fatal() {
    let defs: Vec<(KeyType, Define)> = ["p/tstr", "p/tint", "p/tip", "be", "p/t2", "web"]
        .iter()
        .map(|n| (table(n).key, defined(n, 1)))
        .collect();
    let mut recorded: Vec<Vec<u8>> = DEFINES.iter().map(|d| hex(d.2)).collect();
    recorded.push(hex(
        "0a 85 1f 00000003 0000da00 05 68656c6c6f 00 2a 00 01 00 f2a2d88420 00 00 f0f700 01 00",
    ));
    recorded.push(hex("0a 85 12 00000005 0000e83e 7f000001 01 04 01 02 7331"));
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for r in &recorded {
        for cut in 0..=r.len() {
            inputs.push(r[..cut].to_vec());
        }
        // Flipped bytes.
        for _ in 0..200 {
            let mut m = r.clone();
            let i = next() as usize % m.len();
            m[i] ^= (next() as u8) | 1;
            inputs.push(m);
        }
    }
    for _ in 0..20_000 {
        let n = next() as usize % 64;
        let mut m: Vec<u8> = (0..n).map(|_| next() as u8).collect();
        if n > 2 && next() % 2 == 0 {
            // Mostly table messages with a plausible length.
            m[0] = 10;
            m[1] = 0x80 | (next() as u8 % 7);
            m[2] = (n - 3) as u8;
        }
        inputs.push(m);
    }
    for input in &inputs {
        let mut rest = &input[..];
        while let Split::Message {
            class,
            kind,
            body,
            len,
        } = split(rest)
        {
            assert!(len <= rest.len());
            if let Ok(m) = parse(class, kind, body) {
                match m {
                    Message::Define { id, name, tail } => {
                        let _ = Define::read(id, name, tail);
                    }
                    Message::Update {
                        with_id,
                        timed,
                        body,
                    } => {
                        for (key, def) in &defs {
                            let _ = read_update(body, with_id, timed, *key, def);
                        }
                    }
                    _ => {}
                }
            }
            rest = &rest[len..];
        }
    }
}
