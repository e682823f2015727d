//! The HTTP/1 codec's unit tests.

use super::*;

fn first_line(h: &Head) -> Vec<u8> {
    let mut out = BytesMut::new();
    h.put_first_line(&mut out);
    out.to_vec()
}

fn req(s: &str) -> Result<Head, H1Error> {
    Head::parse_request(Bytes::copy_from_slice(s.as_bytes()))
}

#[test]
fn parses_request_and_framing() {
    let h = req("POST /db/doc?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n").unwrap();
    assert_eq!(h.method(), b"POST");
    assert_eq!(h.target(), b"/db/doc?x=1");
    assert_eq!(h.request_body(), Ok(BodyKind::Length(5)));
    assert!(h.wants_keep_alive());
    let h = req("GET / HTTP/1.0\r\n\r\n").unwrap();
    assert!(!h.wants_keep_alive());
}

#[test]
fn refuses_ambiguous_framing() {
    for bad in [
        "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 0x5\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: \r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
    ] {
        let r = req(bad).and_then(|h| h.request_body());
        assert!(r.is_err(), "{bad:?} gave {r:?}");
    }
    let h =
        req("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
    assert_eq!(h.request_body(), Ok(BodyKind::Chunked));
    let h = req("POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n").unwrap();
    assert_eq!(h.request_body(), Ok(BodyKind::Length(5)));
}

#[test]
fn forwards_fields_as_haproxy_writes_them() {
    let h = req("GET / HTTP/1.0\r\nX-E:\r\nX-F:  a b\t \r\nX-G:\x01\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    let body = h.request_body().unwrap();
    assert_eq!(body, BodyKind::None);
    let mut out = BytesMut::new();
    assert!(h.write_forwarded(&mut out, &h.request_framing(body)));
    assert_eq!(
        &out[..],
        b"GET / HTTP/1.0\r\nx-e: \r\nx-f: a b\r\nx-g: \x01\r\ncontent-length: 0\r\n"
    );
    let h = req("GET / HTTP/1.1\r\nX: 1\r\n\r\n").unwrap();
    assert_eq!(h.request_framing(BodyKind::None).bytes(), b"");
}

#[test]
fn forwards_hop_by_hop_as_haproxy() {
    // HAProxy 2.6 forwards the fields `Connection` names and the other
    // hop-by-hop ones, and what `Connection` keeps beyond `close` and
    // `keep-alive`, in place.
    let h = req("GET / HTTP/1.1\r\nHost: a\r\nConnection: close, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: 5\r\nAccept: */*\r\n\r\n").unwrap();
    let mut out = BytesMut::new();
    h.write_forwarded(&mut out, &FramingLine::of(BodyKind::None));
    assert_eq!(
        &out[..],
        b"GET / HTTP/1.1\r\nhost: a\r\nconnection: X-Secret\r\nx-secret: 1\r\nkeep-alive: 5\r\naccept: */*\r\n"
    );
    let h = req("GET / HTTP/1.1\r\nConnection: Keep-Alive\r\nConnection: close\r\nX: 1\r\n\r\n")
        .unwrap();
    let mut out = BytesMut::new();
    h.write_forwarded(&mut out, &FramingLine::of(BodyKind::None));
    assert_eq!(&out[..], b"GET / HTTP/1.1\r\nx: 1\r\n");
}

#[test]
fn forwards_names_in_lower_case() {
    // As HAProxy 2.6 sends them, whether the line is copied whole or
    // written again; the values keep their case.
    let h =
        req("GET / HTTP/1.1\r\nHOST: A\r\nx-lower: b\r\nX-Sp:  C \r\nX-Empty:\r\n\r\n").unwrap();
    let mut out = BytesMut::new();
    h.write_forwarded(&mut out, &FramingLine::of(BodyKind::None));
    assert_eq!(
        &out[..],
        b"GET / HTTP/1.1\r\nhost: A\r\nx-lower: b\r\nx-sp: C\r\nx-empty: \r\n"
    );
    let h = Head::parse_response(Bytes::from_static(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection:  Upgrade\r\n\r\n",
    ))
    .unwrap();
    let mut out = BytesMut::new();
    h.write_switch(&mut out);
    assert_eq!(
        &out[..],
        b"HTTP/1.1 101 Switching Protocols\r\nupgrade: WebSocket\r\nconnection: Upgrade\r\n\r\n"
    );
}

#[test]
fn chunked_decoder() {
    let mut d = ChunkedDecoder::default();
    let body = b"5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\nNEXT";
    assert_eq!(d.feed(body).unwrap(), body.len() - 4);
    assert!(d.is_done());
    let mut d = ChunkedDecoder::default();
    for b in b"4\r\nwxyz\r\n0\r\n\r\n" {
        d.feed(&[*b]).unwrap();
    }
    assert!(d.is_done());
    for bad in [
        &b"x\r\n"[..],
        b"5\nhello",
        b"2\r\nabc\r\n",
        b"fffffffffffffffff\r\n",
    ] {
        assert!(ChunkedDecoder::default().feed(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn head_end_accepts_bare_lf() {
    assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n\r\nBODY"), Some(27));
    assert_eq!(head_end(b"GET / HTTP/1.1\nHost: a\n\nBODY"), Some(24));
    assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n\n"), Some(26));
    assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n\r"), None);
    assert_eq!(head_end(b"\r\nGET / HTTP/1.1\r\n"), None);
}

#[test]
fn targets_hosts_and_codings() {
    for (bad, status) in [
        ("GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET a:443 HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 405),
        ("GET http://b/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nX: a\x00b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nX: a\x01b\r\nY: a\rb\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nX: a\x01b\r\nY z: c\r\n\r\n", 400),
    ] {
        let e = req(bad).unwrap_err();
        assert_eq!(e.request_status(), status, "{bad:?}");
    }
    for good in [
        "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET http://a:80/x?y HTTP/1.1\r\nHost: a:80\r\n\r\n",
        "GET HTTP://a HTTP/1.1\r\n\r\n",
        // Controls but NUL and CR, and DEL, as HAProxy 2.6 takes them.
        "GET / HTTP/1.1\r\nX: a\x01b\r\nY: \x7f\r\nZ:\x1b\r\n\r\n",
        "\r\nGET / HTTP/1.1\nX: \x0b\nY: 1\n\n",
    ] {
        assert!(req(good).is_ok(), "{good:?}");
    }
    let h = req("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").unwrap();
    assert_eq!(h.request_body().unwrap_err().request_status(), 422);
    let r = Head::parse_response(Bytes::from_static(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
    ))
    .unwrap();
    assert!(r.response_body(b"GET").is_err());
}

#[test]
fn chunked_decoder_strictness() {
    for good in [
        &b"0000000000000005\r\nhello\r\n0\r\n\r\n"[..],
        b"5 ;a=b\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
        b"ffffffffffffffff\r\n",
    ] {
        assert!(ChunkedDecoder::default().feed(good).is_ok(), "{good:?}");
    }
    for bad in [
        &b"10000000000000000\r\n"[..],
        b"5 x\r\n",
        b"5;a\x00\r\n",
        b"5\r\nhello\n",
        b"0\r\nGET / HTTP/1.1\r\n",
        b"0\r\n: x\r\n",
        b"0\r\n\n",
    ] {
        assert!(ChunkedDecoder::default().feed(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn empty_reason_does_not_panic() {
    let r = Head::parse_response(Bytes::from_static(b"HTTP/1.1 200\r\n\r\n")).unwrap();
    assert_eq!(r.reason(), b"");
    assert_eq!(first_line(&r), b"HTTP/1.1 200 ");
}

#[test]
fn response_framing() {
    let r = Head::parse_response(Bytes::from_static(
        b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
    ))
    .unwrap();
    assert_eq!(r.response_body(b"GET"), Ok(BodyKind::None));
    let r = Head::parse_response(Bytes::from_static(b"HTTP/1.1 200 OK\r\n\r\n")).unwrap();
    assert_eq!(r.response_body(b"GET"), Ok(BodyKind::UntilClose));
    assert_eq!(r.response_body(b"HEAD"), Ok(BodyKind::None));
    assert_eq!(first_line(&r), b"HTTP/1.1 200 OK");
}

#[test]
fn words_lowered_as_bytes() {
    // Every byte value, in each of the eight places of a word and in the
    // scalar tail, lowered as `make_ascii_lowercase` lowers it.
    for b in 0..=255u8 {
        for len in [1usize, 7, 8, 9, 16, 17] {
            for at in 0..len {
                let mut v: Vec<u8> = (0..len).map(|i| b'A' + (i % 26) as u8).collect();
                v[at] = b;
                let mut want = v.clone();
                want.make_ascii_lowercase();
                super::lower_ascii(&mut v);
                assert_eq!(v, want, "byte {b:#x} at {at} of {len}");
            }
        }
    }
}
