//! The replies of the protocol checks (`option redis-check`,
//! `mysql-check`, `pgsql-check`, `smtpchk`, `ldap-check`,
//! `ssl-hello-chk`) read as HAProxy 2.6 reads them: what passes, the
//! status, code and text of what does not, and when to wait for more.
//! The rule sets themselves are `config/check_proto.rs`'s.

use crate::config::check_proto::ProtoStep;
use crate::state::health::CheckStatus;

/// What a step made of the bytes read so far.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Judged {
    /// Not enough yet: read more (unless the server closed).
    More,
    /// The step passed. `detail` is what `show stat` keeps; `said` what
    /// the health check log line tells, when it differs (HAProxy logs the
    /// MySQL version and LDAP's "Success", then keeps no text).
    Pass {
        status: CheckStatus,
        code: Option<u16>,
        detail: String,
        said: Option<String>,
    },
    Fail {
        status: CheckStatus,
        code: Option<u16>,
        detail: String,
    },
}

fn fail(status: CheckStatus, code: Option<u16>, detail: impl Into<String>) -> Judged {
    Judged::Fail {
        status,
        code,
        detail: detail.into(),
    }
}

fn pass(code: Option<u16>, detail: impl Into<String>, said: Option<String>) -> Judged {
    Judged::Pass {
        status: CheckStatus::L7Ok,
        code,
        detail: detail.into(),
        said,
    }
}

/// The text up to the first CR or LF.
fn cut_crlf(b: &[u8]) -> String {
    let end = b
        .iter()
        .position(|&c| c == b'\r' || c == b'\n')
        .unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// The text up to the first NUL.
fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// The status a step's empty reply (the server closed without a word)
/// gets, with its code.
pub(super) fn empty_status(step: ProtoStep) -> (CheckStatus, Option<u16>) {
    match step {
        ProtoStep::RedisPong | ProtoStep::SmtpOk { .. } | ProtoStep::Pgsql => {
            (CheckStatus::L7Sts, Some(0))
        }
        ProtoStep::SslHello => (CheckStatus::L6Rsp, None),
        _ => (CheckStatus::L7Rsp, None),
    }
}

/// The status a step that waited in vain gets.
pub(super) fn timeout_status(step: ProtoStep) -> CheckStatus {
    if step == ProtoStep::SslHello {
        CheckStatus::L6Tout
    } else {
        CheckStatus::L7Tout
    }
}

/// Judges `buf` for `step`; `closed`: the server will send no more (an
/// empty `buf` then is for the caller, which names the step).
pub(super) fn judge(step: ProtoStep, buf: &[u8], closed: bool, full: bool) -> Judged {
    let done = closed || full;
    match step {
        ProtoStep::RedisPong => {
            if super::find(buf, b"+PONG\r\n").is_some() {
                pass(Some(0), "Redis server is ok", None)
            } else if !done {
                Judged::More
            } else {
                fail(CheckStatus::L7Sts, Some(0), cut_crlf(buf))
            }
        }
        ProtoStep::MysqlGreeting { .. } | ProtoStep::MysqlOk => mysql(step, buf, done),
        ProtoStep::Pgsql => pgsql(buf, done),
        ProtoStep::SmtpCode => {
            if buf.len() < 4 && !done {
                Judged::More
            } else if buf.len() >= 3 && buf[..3].iter().all(u8::is_ascii_digit) {
                pass(None, "", None)
            } else {
                fail(CheckStatus::L7Rsp, None, cut_crlf(buf))
            }
        }
        ProtoStep::SmtpOk { wait } => smtp_ok(buf, wait, done),
        ProtoStep::LdapBind => ldap(buf, done),
        ProtoStep::SpopHello => spop_hello(buf, done),
        ProtoStep::SslHello => {
            if buf.len() < 5 && !done {
                Judged::More
            } else if matches!(buf.first(), Some(0x15 | 0x16)) {
                Judged::Pass {
                    status: CheckStatus::L6Ok,
                    code: None,
                    detail: String::new(),
                    said: None,
                }
            } else {
                fail(CheckStatus::L6Rsp, None, "")
            }
        }
    }
}

/// SPOP's error texts, by status code (HAProxy's words).
fn spop_error(code: u64) -> &'static str {
    match code {
        0 => "normal",
        1 => "I/O error",
        2 => "a timeout occurred",
        3 => "frame is too big",
        4 => "invalid frame received",
        5 => "version value not found",
        6 => "max-frame-size value not found",
        7 => "capabilities value not found",
        8 => "unsupported version",
        9 => "max-frame-size too big or too small",
        10 => "payload fragmentation is not supported",
        11 => "invalid interlaced frames",
        12 => "frame-id not found",
        13 => "resource allocation error",
        _ => "an unknown error occurred",
    }
}

/// The agent's reply to a SPOP health check: an AGENT-HELLO passes
/// (`L7OK`, code 0); an AGENT-DISCONNECT fails with its status's text, and
/// anything else as an invalid frame (`L7RSP`), once the frame its length
/// announces is all there (HAProxy 2.6 waits for it, to its timeout).
fn spop_hello(buf: &[u8], done: bool) -> Judged {
    use crate::wire::spop;
    let invalid = || fail(CheckStatus::L7Rsp, None, spop_error(4));
    let Some(len) = buf
        .first_chunk::<4>()
        .map(|l| u32::from_be_bytes(*l) as usize)
    else {
        return if done { invalid() } else { Judged::More };
    };
    if buf.len() < 4 + len {
        return if done { invalid() } else { Judged::More };
    }
    let Some(frame) = spop::parse_frame(&buf[4..4 + len]) else {
        return invalid();
    };
    match frame.kind {
        spop::AGENT_HELLO => pass(Some(0), "", Some("SPOA server is ok".to_string())),
        spop::AGENT_DISCONNECT => {
            let mut p = frame.payload;
            let mut code = 99;
            while !p.is_empty() {
                let Some(k) = spop::get_str(&mut p) else {
                    break;
                };
                let Some(v) = spop::get_data(&mut p) else {
                    break;
                };
                if k == b"status-code"
                    && let spop::Data::Uint(c) = v
                {
                    code = c;
                }
            }
            fail(CheckStatus::L7Rsp, None, spop_error(code))
        }
        _ => invalid(),
    }
}

/// `^2[0-9]{2}[- \r]`: passes with the reply's code and text; else
/// fails with them (`L7STS`), after waiting for more when `wait`.
fn smtp_ok(buf: &[u8], wait: bool, done: bool) -> Judged {
    let code = buf
        .get(..3)
        .filter(|c| c.iter().all(u8::is_ascii_digit))
        .and_then(|c| std::str::from_utf8(c).ok()?.parse::<u16>().ok());
    let text = || {
        let rest = buf.get(4..).unwrap_or_default();
        let start = rest.iter().position(|&c| c != b' ').unwrap_or(rest.len());
        cut_crlf(&rest[start..])
    };
    let ok =
        buf.len() >= 4 && buf[0] == b'2' && code.is_some() && matches!(buf[3], b'-' | b' ' | b'\r');
    if ok {
        return pass(code, text(), None);
    }
    if (wait || buf.len() < 4) && !done {
        return Judged::More;
    }
    fail(CheckStatus::L7Sts, Some(code.unwrap_or(0)), text())
}

/// One MySQL packet: a greeting (protocol 10), an OK packet, or an error
/// packet (code and message).
fn mysql(step: ProtoStep, buf: &[u8], done: bool) -> Judged {
    let whole = buf.len() >= 4 && {
        let len = u32::from_le_bytes([buf[0], buf[1], buf[2], 0]) as usize;
        buf.len() >= 4 + len
    };
    if !whole {
        return if done {
            fail(CheckStatus::L7Rsp, None, "")
        } else {
            Judged::More
        };
    }
    let payload = &buf[4..];
    match (step, payload.first()) {
        (_, Some(0xff)) => {
            let code = payload.get(1..3).map(|c| u16::from_le_bytes([c[0], c[1]]));
            fail(
                CheckStatus::L7Sts,
                code,
                String::from_utf8_lossy(payload.get(3..).unwrap_or_default()),
            )
        }
        (ProtoStep::MysqlGreeting { .. }, Some(10)) => pass(Some(0), "", Some(cstr(&payload[1..]))),
        (ProtoStep::MysqlOk, Some(0)) => pass(Some(0), "", None),
        _ => fail(CheckStatus::L7Rsp, None, ""),
    }
}

/// The reply to the startup message: an authentication request (any but
/// Kerberos V4, GSS continuation and the SASL continuations) passes, an
/// error response fails with its severity.
fn pgsql(buf: &[u8], done: bool) -> Judged {
    if buf.first() == Some(&b'E') {
        return if buf.len() < 5 && !done {
            Judged::More
        } else {
            fail(
                CheckStatus::L7Rsp,
                None,
                cstr(buf.get(6..).unwrap_or_default()),
            )
        };
    }
    if buf.len() < 9 && !done {
        return Judged::More;
    }
    let auth = buf.len() >= 9
        && buf[0] == b'R'
        && buf[1..4] == [0, 0, 0]
        && buf[5..8] == [0, 0, 0]
        && matches!(buf[8], 0 | 2..=7 | 9 | 10);
    if auth {
        pass(Some(0), "PostgreSQL server is ok", None)
    } else {
        fail(CheckStatus::L7Sts, Some(0), "PostgreSQL unknown error")
    }
}

/// A BER length at `b[0..]`: (length, bytes it took).
fn ber_len(b: &[u8]) -> Option<(usize, usize)> {
    let first = *b.first()?;
    if first & 0x80 == 0 {
        return Some((usize::from(first), 1));
    }
    let n = usize::from(first & 0x7f);
    if n == 0 || n > 4 || b.len() < 1 + n {
        return None;
    }
    let len = b[1..=n]
        .iter()
        .fold(0usize, |a, &x| (a << 8) | usize::from(x));
    Some((len, 1 + n))
}

const NOT_LDAP: &str = "Not LDAPv3 protocol";

/// An LDAPv3 BindResponse: a SEQUENCE of the message ID and a
/// `[APPLICATION 1]` whose first element is the result code.
fn ldap(buf: &[u8], done: bool) -> Judged {
    // HAProxy reads at least a bind response's 14 bytes first.
    if buf.len() < 14 && !done {
        return Judged::More;
    }
    let whole = buf.first() == Some(&0x30)
        && ber_len(&buf[1..]).is_some_and(|(len, took)| buf.len() >= 1 + took + len);
    if !whole {
        return if done || buf.first() != Some(&0x30) {
            fail(CheckStatus::L7Rsp, None, NOT_LDAP)
        } else {
            Judged::More
        };
    }
    let parse = || -> Option<u8> {
        let (_, took) = ber_len(&buf[1..])?;
        let mut at = 1 + took;
        // The message ID, an INTEGER.
        if *buf.get(at)? != 0x02 {
            return None;
        }
        let (idlen, took) = ber_len(buf.get(at + 1..)?)?;
        at += 1 + took + idlen;
        // The BindResponse.
        if *buf.get(at)? != 0x61 {
            return None;
        }
        let (_, took) = ber_len(buf.get(at + 1..)?)?;
        at += 1 + took;
        // resultCode, an ENUMERATED of one byte.
        if buf.get(at..at + 2)? != [0x0a, 0x01] {
            return None;
        }
        buf.get(at + 2).copied()
    };
    match parse() {
        None => fail(CheckStatus::L7Rsp, None, NOT_LDAP),
        Some(0) => pass(Some(0), "", Some("Success".into())),
        Some(code) => fail(
            CheckStatus::L7Sts,
            Some(u16::from(code)),
            "See RFC: http://tools.ietf.org/html/rfc4511#section-4.1.9",
        ),
    }
}

/// `option ssl-hello-chk`'s SSLv3 ClientHello, `now` (seconds since the
/// epoch) as its time: 39 cipher suites, no session, null compression.
pub(super) fn ssl_client_hello(now: u32) -> Vec<u8> {
    let mut body = vec![0x03, 0x00];
    body.extend_from_slice(&now.to_be_bytes());
    // The 28 "random" bytes say who is asking.
    body.extend_from_slice(b"HAPROXYSSLCHK\nHAPROXYSSLCHK\n");
    body.push(0);
    let suites: Vec<u16> = (0x0001..=0x001b).chain(0x002f..=0x003a).collect();
    body.extend_from_slice(&((suites.len() * 2) as u16).to_be_bytes());
    for s in suites {
        body.extend_from_slice(&s.to_be_bytes());
    }
    body.extend_from_slice(&[0x01, 0x00]);
    let mut hs = vec![0x01];
    hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend_from_slice(&body);
    let mut rec = vec![0x16, 0x03, 0x00];
    rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    rec.extend_from_slice(&hs);
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The bytes haproxy 2.6.12 sent at 0x6b132548 seconds.
    #[test]
    fn ssl_hello_as_haproxy_sends_it() {
        assert_eq!(
            hex(&ssl_client_hello(0x6b13_2548)),
            "16030000790100007503006b132548484150524f585953534c43484b0a484150524f585953534c43484b0a00004e000100020003000400050006000700080009000a000b000c000d000e000f0010001100120013001400150016001700180019001a001b002f0030003100320033003400350036003700380039003a0100"
        );
    }

    #[test]
    fn replies_judged_as_haproxy_judges_them() {
        use CheckStatus::*;
        let st = |step, b: &[u8], closed| match judge(step, b, closed, false) {
            Judged::More => ("more".to_string(), None, String::new()),
            Judged::Pass {
                status,
                code,
                detail,
                said,
            } => (status.code().to_string(), code, said.unwrap_or(detail)),
            Judged::Fail {
                status,
                code,
                detail,
            } => (status.code().to_string(), code, detail),
        };
        let s = |x: CheckStatus| x.code().to_string();
        assert_eq!(
            st(ProtoStep::Pgsql, &unhex("520000000800000009"), false),
            (s(L7Ok), Some(0), "PostgreSQL server is ok".into())
        );
        assert_eq!(
            st(ProtoStep::Pgsql, &unhex("520000000800000001"), false),
            (s(L7Sts), Some(0), "PostgreSQL unknown error".into())
        );
        assert_eq!(
            st(ProtoStep::Pgsql, &unhex("5200000008000000"), false).0,
            "more"
        );
        assert_eq!(
            st(
                ProtoStep::Pgsql,
                &unhex("4500000020534552524f5200433238303030004d6e6f0000"),
                false
            ),
            (s(L7Rsp), None, "ERROR".into())
        );
        assert_eq!(
            st(ProtoStep::SmtpOk { wait: false }, b"554 go away\r\n", false),
            (s(L7Sts), Some(554), "go away".into())
        );
        assert_eq!(
            st(ProtoStep::SmtpOk { wait: true }, b"550 no\r\n", false).0,
            "more"
        );
        assert_eq!(
            st(ProtoStep::SmtpOk { wait: true }, b"xyz\r\n", true),
            (s(L7Sts), Some(0), "".into())
        );
        assert_eq!(
            st(ProtoStep::SmtpCode, b"hello\r\n", false),
            (s(L7Rsp), None, "hello".into())
        );
        assert_eq!(
            st(
                ProtoStep::LdapBind,
                &unhex("300c02010161070a013104000400"),
                false
            ),
            (
                s(L7Sts),
                Some(49),
                "See RFC: http://tools.ietf.org/html/rfc4511#section-4.1.9".into()
            )
        );
        assert_eq!(
            st(
                ProtoStep::LdapBind,
                &unhex("300c02010162070a010004000400"),
                false
            ),
            (s(L7Rsp), None, NOT_LDAP.into())
        );
        assert_eq!(
            st(ProtoStep::LdapBind, &unhex("3003020101"), false).0,
            "more"
        );
        assert_eq!(
            st(
                ProtoStep::MysqlOk,
                &unhex("0f000002ff1504233238303030416363657373"),
                false
            ),
            (s(L7Sts), Some(1045), "#28000Access".into())
        );
    }
}
