//! The protocol checks of `option redis-check`, `mysql-check`,
//! `pgsql-check`, `smtpchk`, `ldap-check` and `ssl-hello-chk`, as the
//! `tcp-check` rule sets HAProxy 2.6 runs for them: what is sent, and
//! which protocol step judges each reply (`upstream/check/proto.rs` reads
//! the bytes). The rules are the same engine's as `tcp-check`, so a
//! protocol check connects, sends and times out as a script does.

use super::model::TcpCheckRule;

/// A reply judged by a protocol's own rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProtoStep {
    /// Redis: `+PONG` to the PING.
    RedisPong,
    /// MySQL: the server's greeting (or its error packet). `last`: the
    /// check ends there (no user to log in with).
    MysqlGreeting { last: bool },
    /// MySQL: the OK packet to the login.
    MysqlOk,
    /// PostgreSQL: an authentication request (or an error) to the
    /// startup message.
    Pgsql,
    /// SMTP: a reply that starts with a three-digit code.
    SmtpCode,
    /// SMTP: a 2xx reply. `wait`: a reply that is not one waits for more
    /// data (HAProxy waits after HELO/EHLO only).
    SmtpOk { wait: bool },
    /// LDAP: the bind response, result code 0.
    LdapBind,
    /// SSL: a handshake or alert record in reply to the ClientHello.
    SslHello,
    /// SPOP: the AGENT-HELLO frame in reply to the HAPROXY-HELLO.
    SpopHello,
}

/// A protocol check as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProtoCheck {
    Redis,
    Mysql { user: Option<String>, post41: bool },
    Pgsql { user: String },
    Smtp { hello: String },
    Ldap,
    SslHello,
    Spop,
}

/// A rule of a protocol check's rule set (`option redis-check` and the
/// like), not one the section wrote.
pub(crate) fn is_proto_rule(r: &TcpCheckRule) -> bool {
    matches!(r, TcpCheckRule::Proto(_) | TcpCheckRule::SslHello)
}

/// Redis's PING, as a RESP array.
const REDIS_PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";
/// An anonymous LDAPv3 simple bind, message 1.
const LDAP_BIND: &[u8] = b"\x30\x0c\x02\x01\x01\x60\x07\x02\x01\x03\x04\x00\x80\x00";
/// MySQL's COM_QUIT, sequence 0.
const MYSQL_QUIT: &[u8] = b"\x01\x00\x00\x00\x01";

impl ProtoCheck {
    /// The rule set the check runs.
    pub(crate) fn rules(&self) -> Vec<TcpCheckRule> {
        use ProtoStep as P;
        use TcpCheckRule::{Connect, Proto, Send};
        let connect = Connect { port: None };
        match self {
            ProtoCheck::Redis => vec![Send(REDIS_PING.to_vec()), Proto(P::RedisPong)],
            ProtoCheck::Mysql { user: None, .. } => {
                vec![connect, Proto(P::MysqlGreeting { last: true })]
            }
            ProtoCheck::Mysql {
                user: Some(u),
                post41,
            } => vec![
                connect,
                Proto(P::MysqlGreeting { last: false }),
                Send(mysql_login(u, *post41)),
                Proto(P::MysqlOk),
            ],
            ProtoCheck::Pgsql { user } => {
                vec![connect, Send(pgsql_startup(user)), Proto(P::Pgsql)]
            }
            ProtoCheck::Smtp { hello } => vec![
                connect,
                Proto(P::SmtpCode),
                Proto(P::SmtpOk { wait: false }),
                Send(format!("{hello}\r\n").into_bytes()),
                Proto(P::SmtpOk { wait: true }),
                Send(b"QUIT\r\n".to_vec()),
                Proto(P::SmtpOk { wait: false }),
            ],
            ProtoCheck::Ldap => vec![Send(LDAP_BIND.to_vec()), Proto(P::LdapBind)],
            ProtoCheck::SslHello => vec![TcpCheckRule::SslHello, Proto(P::SslHello)],
            ProtoCheck::Spop => vec![Send(spop_hello()), Proto(P::SpopHello)],
        }
    }
}

/// The HAPROXY-HELLO frame of a SPOP health check, as HAProxy 2.6 sends
/// it: version 2.0, its frame size, no capabilities, `healthcheck` true.
fn spop_hello() -> Vec<u8> {
    use crate::wire::spop::{Data, HAPROXY_HELLO, put_frame, put_kv};
    let mut p = bytes::BytesMut::new();
    put_kv(&mut p, "supported-versions", &Data::Str(b"2.0".to_vec()));
    put_kv(&mut p, "max-frame-size", &Data::Uint32(16_380));
    put_kv(&mut p, "capabilities", &Data::Str(Vec::new()));
    put_kv(&mut p, "healthcheck", &Data::Bool(true));
    let mut frame = bytes::BytesMut::new();
    put_frame(&mut frame, HAPROXY_HELLO, (0, 0), &p);
    frame.to_vec()
}

/// A MySQL login packet (sequence 1) for `user` with no password, then
/// COM_QUIT so the server sees a clean end. Post-4.1 clients send 4-byte
/// capabilities (protocol 4.1, secure connection), a 4-byte maximum
/// packet size, the character set and 23 reserved bytes; older ones 2-byte
/// capabilities and a 3-byte size.
fn mysql_login(user: &str, post41: bool) -> Vec<u8> {
    let mut payload = Vec::new();
    if post41 {
        payload.extend_from_slice(&[0x00, 0x82, 0x00, 0x00]);
        payload.extend_from_slice(&[0x00, 0x80, 0x00, 0x01]);
        payload.push(0x21);
        payload.extend_from_slice(&[0u8; 23]);
    } else {
        payload.extend_from_slice(&[0x00, 0x80]);
        payload.extend_from_slice(&[0x00, 0x00, 0x01]);
    }
    payload.extend_from_slice(user.as_bytes());
    payload.push(0);
    // No password: an empty auth response.
    payload.push(0);
    let len = payload.len() as u32;
    let mut out = len.to_le_bytes()[..3].to_vec();
    out.push(1);
    out.extend_from_slice(&payload);
    out.extend_from_slice(MYSQL_QUIT);
    out
}

/// A PostgreSQL protocol 3.0 StartupMessage for `user`.
fn pgsql_startup(user: &str) -> Vec<u8> {
    let mut body = vec![0x00, 0x03, 0x00, 0x00];
    body.extend_from_slice(b"user\0");
    body.extend_from_slice(user.as_bytes());
    body.extend_from_slice(b"\0\0");
    let mut out = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

/// Parses `option <name> ...` for the protocol checks (`words[1]` is the
/// name); `Err` holds HAProxy's message.
pub(crate) fn parse_option(words: &[String]) -> Result<ProtoCheck, String> {
    let name = words[1].as_str();
    let w = |i: usize| words.get(i).map(String::as_str);
    let extra = |i: usize| -> Result<(), String> {
        match w(i) {
            Some(x) if !x.is_empty() => Err(format!(
                "'option {name}' cannot handle unexpected argument '{x}'."
            )),
            _ => Ok(()),
        }
    };
    Ok(match name {
        "redis-check" => {
            extra(2)?;
            ProtoCheck::Redis
        }
        "ldap-check" => {
            extra(2)?;
            ProtoCheck::Ldap
        }
        "ssl-hello-chk" => {
            extra(2)?;
            ProtoCheck::SslHello
        }
        "spop-check" => {
            extra(2)?;
            ProtoCheck::Spop
        }
        "mysql-check" => match w(2) {
            None | Some("") => ProtoCheck::Mysql {
                user: None,
                post41: true,
            },
            Some("user") => {
                let user = match w(3) {
                    Some(u) if !u.is_empty() => u.to_string(),
                    _ => {
                        return Err(
                            "'option mysql-check user' expects <username> as argument.".into()
                        );
                    }
                };
                let post41 = match w(4) {
                    None | Some("") | Some("post-41") => true,
                    Some("pre-41") => false,
                    Some(o) => {
                        return Err(format!(
                            "keyword 'user' only supports 'post-41' and 'pre-41' (got '{o}')."
                        ));
                    }
                };
                extra(5)?;
                ProtoCheck::Mysql {
                    user: Some(user),
                    post41,
                }
            }
            Some(o) => {
                return Err(format!(
                    "'option mysql-check' only supports optional values: 'user' (got '{o}')."
                ));
            }
        },
        "pgsql-check" => match (w(2), w(3)) {
            (Some("user"), Some(u)) if !u.is_empty() => {
                extra(4)?;
                ProtoCheck::Pgsql {
                    user: u.to_string(),
                }
            }
            (None | Some("") | Some("user"), _) => {
                return Err("'option pgsql-check' expects 'user <username>' as argument.".into());
            }
            _ => return Err("'option pgsql-check' only supports optional values: 'user'.".into()),
        },
        // `smtpchk [HELO|EHLO <domain>]`: anything else says HELO localhost.
        _ => {
            let hello = match (w(2), w(3)) {
                (Some(h @ ("HELO" | "EHLO")), Some(d)) if !d.is_empty() => {
                    extra(4)?;
                    format!("{h} {d}")
                }
                _ => "HELO localhost".to_string(),
            };
            ProtoCheck::Smtp { hello }
        }
    })
}

/// The option names [`parse_option`] reads.
pub(crate) const OPTION_NAMES: [&str; 7] = [
    "spop-check",
    "redis-check",
    "mysql-check",
    "pgsql-check",
    "smtpchk",
    "ldap-check",
    "ssl-hello-chk",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    /// The login packets haproxy 2.6.12 sends for user `bob`.
    #[test]
    fn mysql_logins_as_haproxy_sends_them() {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(
            hex(&mysql_login("bob", true)),
            "250000010082000000800001210000000000000000000000000000000000000000000000626f6200000100000001"
        );
        assert_eq!(
            hex(&mysql_login("bob", false)),
            "0a0000010080000001626f6200000100000001"
        );
        assert_eq!(
            hex(&pgsql_startup("bob")),
            "00000012000300007573657200626f620000"
        );
    }

    #[test]
    fn smtp_hello_defaults_to_helo_localhost() {
        for (line, want) in [
            ("option smtpchk", "HELO localhost"),
            ("option smtpchk HELO", "HELO localhost"),
            ("option smtpchk FOO bar", "HELO localhost"),
            ("option smtpchk EHLO mx.example", "EHLO mx.example"),
        ] {
            assert_eq!(
                parse_option(&words(line)),
                Ok(ProtoCheck::Smtp { hello: want.into() }),
                "{line}"
            );
        }
    }
}
