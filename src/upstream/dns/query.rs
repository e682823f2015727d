//! One resolution of a name against the nameservers of a `resolvers`
//! section, as HAProxy 2.6 runs one: the query goes to every nameserver,
//! the first valid answer wins; when all of them answer with an error the
//! other address family is asked (A after AAAA, or the reverse), and
//! after `timeout retry` without an answer the query is sent again, at
//! most `resolve_retries` times. Messages are built and read with
//! hickory-proto; an answer truncated over UDP is asked again over TCP.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::model::{Nameserver, ResolversSection};
use crate::state::resolvers::{NsCounters, counters};

/// What a resolution ended with (HAProxy's `RSLV_STATUS_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A valid answer, from the nameserver named.
    Valid(Answer, String),
    Nx,
    Refused,
    Timeout,
    /// Any other failure (no record of the type asked, a server failure,
    /// an answer that could not be read).
    Other,
}

/// The records of a valid answer that matter to servers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Answer {
    /// A and AAAA records, in answer order.
    pub(crate) ips: Vec<IpAddr>,
    /// SRV records: target (no final dot), port, weight, and the address
    /// the additional section gives the target, if any.
    pub(crate) srv: Vec<SrvRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SrvRecord {
    pub(crate) target: String,
    pub(crate) port: u16,
    pub(crate) weight: u16,
    pub(crate) additional: Option<IpAddr>,
}

/// The kinds of question asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Ask {
    /// A then AAAA on failure (`resolve-prefer ipv4`).
    V4First,
    /// AAAA then A (the default).
    V6First,
    Srv,
}

/// One nameserver's reply, classified as HAProxy classifies it.
enum Reply {
    Valid(Answer),
    Nx,
    Refused,
    Other,
}

/// Resolves `name` for `ask` with the nameservers and timers of `section`.
pub(crate) async fn resolve(section: &ResolversSection, name: &str, ask: Ask) -> Outcome {
    let Ok(qname) = Name::from_ascii(format!("{}.", name.trim_end_matches('.'))) else {
        return Outcome::Other;
    };
    let (first, fallback) = match ask {
        Ask::V4First => (RecordType::A, Some(RecordType::AAAA)),
        Ask::V6First => (RecordType::AAAA, Some(RecordType::A)),
        Ask::Srv => (RecordType::SRV, None),
    };
    let servers: Vec<(Nameserver, Arc<NsCounters>)> = section
        .nameservers
        .iter()
        .map(|n| (n.clone(), counters(&section.name, &n.name)))
        .collect();
    if servers.is_empty() {
        return Outcome::Timeout;
    }
    let mut tries = section.resolve_retries.max(1);
    let mut qtype = first;
    loop {
        let (reply, all_answered) = ask_all(section, &servers, &qname, qtype).await;
        match reply {
            Some((Reply::Valid(a), by)) => return Outcome::Valid(a, by),
            Some((err, _)) if all_answered => {
                if qtype == first
                    && let Some(f) = fallback
                {
                    // The other family, at once, without using a try.
                    qtype = f;
                    continue;
                }
                tries -= 1;
                if tries == 0 {
                    return match err {
                        Reply::Nx => Outcome::Nx,
                        Reply::Refused => Outcome::Refused,
                        _ => Outcome::Other,
                    };
                }
            }
            _ => {
                tries -= 1;
                if tries == 0 {
                    return Outcome::Timeout;
                }
            }
        }
        qtype = first;
    }
}

/// Sends the question to every nameserver and waits `timeout retry` at
/// most: the first valid reply, else the last error and whether every
/// nameserver answered.
async fn ask_all(
    section: &ResolversSection,
    servers: &[(Nameserver, Arc<NsCounters>)],
    qname: &Name,
    qtype: RecordType,
) -> (Option<(Reply, String)>, bool) {
    let mut set = tokio::task::JoinSet::new();
    for (ns, c) in servers {
        let (ns, c, qname) = (ns.clone(), c.clone(), qname.clone());
        let payload = section.accepted_payload_size;
        set.spawn(async move {
            let r = exchange(&ns, &c, &qname, qtype, payload).await;
            (r, ns.name)
        });
    }
    let deadline = tokio::time::sleep(section.timeout_retry);
    tokio::pin!(deadline);
    let mut last = None;
    let mut answered = 0;
    loop {
        tokio::select! {
            _ = &mut deadline => {
                // Those still waiting count a timeout.
                set.abort_all();
                for (_, c) in servers {
                    NsCounters::bump(&c.timeout);
                }
                return (last, false);
            }
            joined = set.join_next() => {
                let Some(joined) = joined else {
                    return (last, answered == servers.len());
                };
                let Ok((reply, ns)) = joined else { continue };
                let Some(reply) = reply else { continue };
                answered += 1;
                if matches!(reply, Reply::Valid(_)) {
                    set.abort_all();
                    return (Some((reply, ns)), true);
                }
                last = Some((reply, ns));
            }
        }
    }
}

/// One question to one nameserver: over UDP (again over TCP when the
/// answer is truncated), or over TCP for a `tcp@` nameserver. None when no
/// answer came (the caller's deadline ends the wait).
async fn exchange(
    ns: &Nameserver,
    c: &NsCounters,
    qname: &Name,
    qtype: RecordType,
    payload: u16,
) -> Option<Reply> {
    let id: u16 = rand_id();
    let mut msg = Message::new(id, MessageType::Query, OpCode::Query);
    msg.metadata.recursion_desired = true;
    msg.add_query(Query::query(qname.clone(), qtype));
    let mut edns = Edns::new();
    edns.set_max_payload(payload.max(512));
    msg.set_edns(edns);
    let bytes = msg.to_vec().ok()?;
    NsCounters::bump(&c.sent);
    let raw = if ns.tcp {
        tcp_exchange(ns.addr, &bytes).await
    } else {
        match udp_exchange(ns.addr, &bytes, id, payload, c).await {
            Some(UdpReply::Whole(raw)) => Some(raw),
            Some(UdpReply::Truncated) => {
                NsCounters::bump(&c.truncated);
                tcp_exchange(ns.addr, &bytes).await
            }
            None => {
                NsCounters::bump(&c.snd_error);
                None
            }
        }
    }?;
    let Ok(resp) = Message::from_vec(&raw) else {
        NsCounters::bump(&c.invalid);
        return Some(Reply::Other);
    };
    if resp.metadata.id != id {
        NsCounters::bump(&c.outdated);
        return None;
    }
    Some(classify(&resp, qtype, c))
}

enum UdpReply {
    Whole(Vec<u8>),
    Truncated,
}

async fn udp_exchange(
    to: SocketAddr,
    bytes: &[u8],
    id: u16,
    payload: u16,
    c: &NsCounters,
) -> Option<UdpReply> {
    let local: SocketAddr = if to.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = tokio::net::UdpSocket::bind(local).await.ok()?;
    sock.connect(to).await.ok()?;
    sock.send(bytes).await.ok()?;
    let mut buf = vec![0u8; usize::from(payload.max(512)) + 1];
    loop {
        let n = sock.recv(&mut buf).await.ok()?;
        if n > usize::from(payload.max(512)) {
            NsCounters::bump(&c.too_big);
            continue;
        }
        if n < 12 || u16::from_be_bytes([buf[0], buf[1]]) != id {
            NsCounters::bump(&c.outdated);
            continue;
        }
        // The TC bit: the answer did not fit.
        if buf[2] & 0x02 != 0 {
            return Some(UdpReply::Truncated);
        }
        return Some(UdpReply::Whole(buf[..n].to_vec()));
    }
}

/// A DNS exchange over TCP: the message behind its two-byte length.
async fn tcp_exchange(to: SocketAddr, bytes: &[u8]) -> Option<Vec<u8>> {
    let mut s = tokio::net::TcpStream::connect(to).await.ok()?;
    let len = u16::try_from(bytes.len()).ok()?;
    let mut out = Vec::with_capacity(bytes.len() + 2);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes);
    s.write_all(&out).await.ok()?;
    let mut lenb = [0u8; 2];
    s.read_exact(&mut lenb).await.ok()?;
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(lenb))];
    s.read_exact(&mut buf).await.ok()?;
    Some(buf)
}

/// HAProxy's reading of an answer: NXDOMAIN, REFUSED, no record of the
/// type asked, or the records.
fn classify(resp: &Message, qtype: RecordType, c: &NsCounters) -> Reply {
    match resp.metadata.response_code {
        ResponseCode::NoError => {}
        ResponseCode::NXDomain => {
            NsCounters::bump(&c.nx);
            return Reply::Nx;
        }
        ResponseCode::Refused => {
            NsCounters::bump(&c.refused);
            return Reply::Refused;
        }
        _ => {
            NsCounters::bump(&c.other);
            return Reply::Other;
        }
    }
    let mut a = Answer::default();
    for r in &resp.answers {
        match (&r.data, qtype) {
            (RData::A(ip), RecordType::A) => a.ips.push(IpAddr::V4(ip.0)),
            (RData::AAAA(ip), RecordType::AAAA) => a.ips.push(IpAddr::V6(ip.0)),
            (RData::SRV(srv), RecordType::SRV) => {
                let target = srv.target.to_ascii();
                let target = target.trim_end_matches('.').to_string();
                let additional = resp.additionals.iter().find_map(|ar| {
                    let same = ar.name.to_ascii().trim_end_matches('.') == target;
                    match &ar.data {
                        RData::A(ip) if same => Some(IpAddr::V4(ip.0)),
                        RData::AAAA(ip) if same => Some(IpAddr::V6(ip.0)),
                        _ => None,
                    }
                });
                a.srv.push(SrvRecord {
                    target,
                    port: srv.port,
                    weight: srv.weight,
                    additional,
                });
            }
            (RData::CNAME(_), _) => NsCounters::bump(&c.cname),
            _ => {}
        }
    }
    if a.ips.is_empty() && a.srv.is_empty() {
        NsCounters::bump(&c.any_err);
        return Reply::Other;
    }
    NsCounters::bump(&c.valid);
    Reply::Valid(a)
}

/// A query id no one can guess from the previous one.
fn rand_id() -> u16 {
    let mut b = [0u8; 2];
    if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        return t as u16;
    }
    u16::from_be_bytes(b)
}
