//! SPOE agents: the messages of an engine sent to one of its agents (a
//! server of its `use-backend`) in a NOTIFY frame, and the variables its
//! ACK sets, before the rules that read them run. Connections to agents
//! are opened with the HELLO handshake, which announces the capabilities
//! HAProxy announces (`pipelining`, `async`); an agent that pipelines
//! takes up to `max-waiting-frames` frames at once on a connection, and
//! each ACK is matched to its frame by its stream and frame ids, in any
//! order and, for an asynchronous agent, on any of the connections. One
//! task per connection reads its ACKs.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::spoe::SpoeEvent;
use crate::sample::value::Sample;
use crate::sample::vars::{Conds, VarName, Vars};
use crate::snapshot::spoe::{AgentLink, AgentPool, SpoeRt, Waiter};
use crate::wire::spop::{self, Action, Data};

/// The pause between two attempts at a connection to an agent.
const RECONNECT: Duration = Duration::from_millis(50);

/// What HAProxy keeps of a frame's size for its head (type, flags, ids).
const FRAME_HEAD: usize = 32;

/// HAProxy's error codes for `option set-on-error`: below 256 the
/// engine's own, 256 + a SPOP status code for an error of the protocol
/// (1, an I/O error: a connection closed before the ACK).
pub(crate) mod code {
    pub(crate) const TIMEOUT: u16 = 1;
    pub(crate) const TOO_BIG: u16 = 3;
    pub(crate) const INTERRUPTED: u16 = 5;
    pub(crate) const IO: u16 = 257;
}

impl SpoeRt {
    /// The engine's key in a stream's [`SpoeStream`](crate::sample::tune::SpoeStream).
    fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Whether the engine has messages for `event` and is still on for
    /// the stream of `vars`: a context for its messages is then worth
    /// making.
    pub(crate) fn wants(&self, event: SpoeEvent, vars: &Vars<'_>) -> bool {
        self.sends_on(event) && !vars.spoe.is_off(self.key())
    }

    /// `send-spoe-group` where it may not wait (a `tcp-request content`
    /// or `tcp-response content` rule without an inspect delay): nothing
    /// is sent, the processing counts as interrupted (error 5), as in
    /// HAProxy.
    pub(crate) fn interrupted(&self, vars: &Vars<'_>) {
        if !vars.spoe.is_off(self.key()) {
            self.failed(code::INTERRUPTED, vars);
        }
    }

    /// A TCP stream's response side: the engines an error turned off on
    /// its request side are on again, as HAProxy's are.
    pub(crate) fn response_side(vars: &Vars<'_>) {
        vars.spoe.turn_on();
    }

    /// Sends `messages` (evaluated on `cx`) to an agent and applies its
    /// answer to `vars`, within `timeout processing`; a failure sets
    /// `option set-on-error`'s variable and, without `option
    /// continue-on-error`, turns the engine off for the stream. `about`
    /// names the event or group for the agent's log line.
    pub(crate) async fn notify(
        &self,
        messages: &[usize],
        cx: &crate::sample::Ctx<'_>,
        vars: &Vars<'_>,
        snap: &crate::snapshot::Snapshot,
        about: Sent<'_>,
    ) {
        if messages.is_empty() || vars.spoe.is_off(self.key()) {
            return;
        }
        let started = Instant::now();
        let mut payload = BytesMut::new();
        for &i in messages {
            let m = &self.conf.messages[i];
            let args: Vec<(&str, Data)> = m
                .args
                .iter()
                .map(|(n, e)| (n.as_str(), e.eval(cx).map_or(Data::Null, data_of)))
                .collect();
            spop::put_message(&mut payload, &m.name, &args);
        }
        let mut times = Times {
            encoded: Some(Instant::now()),
            ..Times::default()
        };
        let ids = vars.spoe.next_frame(self.key());
        let exchange = self.exchange(ids, &payload, snap, &mut times);
        let done = tokio::time::timeout(self.conf.timeout_processing, exchange).await;
        let result = done.unwrap_or(Err(code::TIMEOUT));
        let actions = result.and_then(|p| spop::get_actions(&p).ok_or(code::IO));
        let status = match actions {
            Ok(actions) => {
                vars.spoe.answered(self.key());
                for a in actions {
                    self.apply(a, vars);
                }
                times.applied = Some(Instant::now());
                0
            }
            Err(c) => c,
        };
        // The processing's time, and the stream's with its engines, as
        // HAProxy sets them whatever the outcome.
        let ms = started.elapsed().as_millis() as i64;
        let total = vars.spoe.add_time(ms);
        if let Some(n) = &self.conf.set_process_time {
            self.set(vars, 2, n, &Sample::Sint(ms), Conds::default());
        }
        if let Some(n) = &self.conf.set_total_time {
            self.set(vars, 2, n, &Sample::Sint(total), Conds::default());
        }
        if status != 0 {
            self.failed(status, vars);
        }
        self.log_line(about, ids.0, status, started, &times);
    }

    /// The agent's line for one event or group, in HAProxy's form:
    /// `SPOE: [<agent>] <EVENT|GROUP:<name>> sid=<stream> st=<status>
    /// <reqT>/<qT>/<wT>/<resT>/<pT> <idles>/<connections>
    /// <sending>/<waiting> <errors>/<processed>` (-1 for a time the
    /// processing did not reach), at notice, or warning for an error.
    fn log_line(&self, about: Sent<'_>, sid: u64, status: u16, started: Instant, t: &Times) {
        let processed = self.processed.fetch_add(1, Relaxed) + 1;
        let errors = if status == 0 {
            self.errors.load(Relaxed)
        } else {
            self.errors.fetch_add(1, Relaxed) + 1
        };
        let Some(log) = &self.log else { return };
        if status == 0 && self.conf.dontlog_normal {
            return;
        }
        let ms = |from: Option<Instant>, to: Option<Instant>| match (from, to) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_millis() as i64,
            _ => -1,
        };
        let req_t = ms(Some(started), t.encoded);
        let q_t = ms(t.encoded, t.sent);
        let w_t = ms(t.sent, t.acked);
        let res_t = ms(t.acked, t.applied);
        let p_t = if t.applied.is_some() {
            ms(Some(started), t.applied)
        } else {
            -1
        };
        let (idles, links) = {
            let links = crate::state::lock(&self.agents.links);
            let idles = links
                .iter()
                .filter(|l| l.waiting.load(Relaxed) == 0)
                .count();
            (idles, links.len())
        };
        // The streams still waiting for an ACK (a frame whose stream gave
        // up waiting keeps its connection busy, but is not counted).
        let waiting = crate::state::lock(&self.agents.waiting)
            .values()
            .filter(|w| !w.tx.is_closed())
            .count();
        let (kind, name) = match about {
            Sent::Event(e) => ("EVENT", e.name()),
            Sent::Group(g) => ("GROUP", g),
        };
        let msg = format!(
            "SPOE: [{}] <{kind}:{name}> sid={sid} st={status} {req_t}/{q_t}/{w_t}/{res_t}/{p_t} {idles}/{links} 0/{waiting} {errors}/{processed}",
            self.conf.agent
        );
        let level = if status == 0 {
            crate::config::log::NOTICE
        } else {
            crate::config::log::WARNING
        };
        log.send(level, &crate::observe::log::time::Date::now(), &msg);
    }

    fn failed(&self, c: u16, vars: &Vars<'_>) {
        if let Some(n) = &self.conf.set_on_error {
            self.set(vars, 2, n, &Sample::Sint(i64::from(c)), Conds::default());
        }
        if !self.conf.continue_on_error {
            vars.spoe.turn_off(self.key());
        }
    }

    /// One NOTIFY on a connection with room for it, and its ACK's
    /// payload.
    async fn exchange(
        &self,
        ids: (u64, u64),
        payload: &[u8],
        snap: &crate::snapshot::Snapshot,
        times: &mut Times,
    ) -> Result<Vec<u8>, u16> {
        let link = self.link(snap).await?;
        let pool = &self.agents;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let link2 = link.clone();
        crate::state::lock(&pool.waiting).insert(ids, Waiter { tx, link: link2 });
        // Whatever ends the wait before the frame is written, the frame
        // stops waiting and its room is freed. Once written, it waits for
        // its ACK whatever becomes of its stream (`timeout processing`):
        // the connection is busy with it until the ACK comes, late or
        // not, as HAProxy's is.
        let mut guard = Pending {
            pool,
            ids,
            link: &link,
            written: false,
        };
        // HAProxy keeps room for a frame's head out of its size: what is
        // left is each frame's payload.
        let room = link.frame_max.saturating_sub(FRAME_HEAD).max(1);
        let mut frame = BytesMut::new();
        let cuts = spop::frame_cuts(payload, room).ok_or(code::TOO_BIG)?;
        if cuts.len() == 1 {
            spop::put_frame(&mut frame, spop::NOTIFY, ids, payload);
        } else if !self.conf.send_frag {
            return Err(code::TOO_BIG);
        } else if !link.fragmentation {
            // HAProxy tells the agent and closes; the stream waits for
            // another connection, which `timeout processing` ends.
            let mut bye = BytesMut::new();
            spop::put_kv(&mut bye, "status-code", &Data::Uint32(10));
            spop::put_kv(
                &mut bye,
                "message",
                &Data::Str(b"fragmentation not supported".to_vec()),
            );
            spop::put_frame(&mut frame, spop::HAPROXY_DISCONNECT, (0, 0), &bye);
            link.dead.store(true, Relaxed);
            let mut w = link.write.lock().await;
            let _ = w.write_all(&frame).await;
            let _ = w.shutdown().await;
            drop(w);
            return std::future::pending().await;
        } else {
            // The first part in the NOTIFY, the others in frames of no
            // type, the last one with FIN.
            let last = cuts.len() - 1;
            let mut rest = payload;
            for (i, n) in cuts.into_iter().enumerate() {
                let (part, after) = rest.split_at(n.min(rest.len()));
                rest = after;
                let kind = if i == 0 { spop::NOTIFY } else { spop::UNSET };
                let flags = if i == last { spop::FIN } else { 0 };
                spop::put_frame_flags(&mut frame, kind, flags, ids, part);
            }
        }
        let written = link.write.lock().await.write_all(&frame).await;
        if written.is_err() {
            link.dead.store(true, Relaxed);
            return Err(code::IO);
        }
        guard.written = true;
        times.sent = Some(Instant::now());
        let acked = rx.await.unwrap_or(Err(code::IO));
        if acked.is_ok() {
            times.acked = Some(Instant::now());
        }
        acked
    }

    /// A connection with room for one more frame (counted in it), a kept
    /// one when there is, else a new one.
    async fn link(&self, snap: &crate::snapshot::Snapshot) -> Result<Arc<AgentLink>, u16> {
        {
            let mut links = crate::state::lock(&self.agents.links);
            links.retain(|l| !l.dead.load(Relaxed));
            for l in links.iter() {
                let waiting = l.waiting.load(Relaxed);
                if waiting >= l.room {
                    continue;
                }
                // An idle connection the agent closed meanwhile (its
                // `timeout idle`) is seen closed before a frame goes on
                // it, so that none is lost.
                if waiting == 0
                    && let Ok(w) = l.write.try_lock()
                    && !crate::state::pool::probe_clean(w.as_ref())
                {
                    l.dead.store(true, Relaxed);
                    continue;
                }
                l.waiting.fetch_add(1, Relaxed);
                return Ok(l.clone());
            }
        }
        // An agent that cannot be reached (refused, down, its HELLO
        // failed or refused) is tried again until `timeout processing`
        // ends the wait, as HAProxy tries new connections for the
        // streams that wait.
        let link = loop {
            match self.connect(snap).await {
                Ok(l) => break l,
                Err(_) => tokio::time::sleep(RECONNECT).await,
            }
        };
        link.waiting.fetch_add(1, Relaxed);
        crate::state::lock(&self.agents.links).push(link.clone());
        Ok(link)
    }

    /// A new connection to an agent, the HELLO handshake done, with the
    /// task that reads its ACKs.
    async fn connect(&self, snap: &crate::snapshot::Snapshot) -> Result<Arc<AgentLink>, u16> {
        let be = snap.backend(&self.conf.backend).ok_or(code::IO)?;
        let server = be
            .servers
            .iter()
            .find(|s| s.state.usable())
            .ok_or(code::IO)?;
        let pool = server.state.pool.load();
        let mut conn = match pool.unix() {
            Some(u) => crate::upstream::unix::connect(u, be.timeouts.connect).await,
            None => {
                let c = TcpStream::connect(pool.addr());
                match be.timeouts.connect {
                    Some(t) => tokio::time::timeout(t, c)
                        .await
                        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into())),
                    None => c.await,
                }
            }
        }
        .map_err(|_| code::IO)?;
        let _ = conn.set_nodelay(true);
        let conf = &self.conf;
        let mut hello = BytesMut::new();
        spop::put_kv(
            &mut hello,
            "supported-versions",
            &Data::Str(b"2.0".to_vec()),
        );
        spop::put_kv(
            &mut hello,
            "max-frame-size",
            &Data::Uint32(conf.max_frame_size),
        );
        let caps: Vec<&str> = [(conf.pipelining, "pipelining"), (conf.async_acks, "async")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, c)| *c)
            .collect();
        spop::put_kv(
            &mut hello,
            "capabilities",
            &Data::Str(caps.join(",").into_bytes()),
        );
        spop::put_kv(
            &mut hello,
            "engine-id",
            &Data::Str(self.engine_id.as_bytes().to_vec()),
        );
        let mut frame = BytesMut::new();
        spop::put_frame(&mut frame, spop::HAPROXY_HELLO, (0, 0), &hello);
        let handshake = async {
            conn.write_all(&frame).await.map_err(|_| code::IO)?;
            let f = read_frame(&mut conn).await?;
            match spop::parse_frame(&f) {
                Some(h) if h.kind == spop::AGENT_HELLO => Ok(spop::get_hello(h.payload)),
                Some(h) if h.kind == spop::AGENT_DISCONNECT => {
                    Err(256 + spop::get_status(h.payload))
                }
                _ => Err(code::IO),
            }
        };
        let agreed = match tokio::time::timeout(conf.timeout_hello, handshake).await {
            Ok(r) => r?,
            Err(_) => return Err(code::TIMEOUT),
        };
        // A frame size beyond ours (or below the protocol's least) is
        // refused, as HAProxy refuses it.
        let frame_max = match agreed.max_frame_size {
            Some(m) if (256..=conf.max_frame_size).contains(&m) => m,
            _ => return Err(256 + 9),
        };
        let pipelined = conf.pipelining && agreed.pipelining;
        let (read, write) = conn.into_split();
        let link = Arc::new(AgentLink {
            write: tokio::sync::Mutex::new(write),
            waiting: 0.into(),
            room: if pipelined {
                conf.max_waiting_frames.max(1) as usize
            } else {
                1
            },
            frame_max: frame_max as usize,
            fragmentation: agreed.fragmentation,
            dead: false.into(),
        });
        tokio::spawn(read_acks(
            read,
            link.clone(),
            self.agents.clone(),
            conf.timeout_idle,
        ));
        Ok(link)
    }

    /// An action of the agent's ACK: the variable is the engine's
    /// (`<scope>.<prefix>.<name>`).
    fn apply(&self, a: Action, vars: &Vars<'_>) {
        match a {
            Action::SetVar(scope, name, value) => {
                let name = String::from_utf8_lossy(&name).into_owned();
                // A `proc` variable the configuration does not name (nor
                // `register-var-names`) is not created, unless `option
                // force-set-var`, as in HAProxy.
                let mut conds = Conds::default();
                if scope == 0 && !self.conf.force_set_var {
                    let _ = conds.add("ifexists");
                }
                if let Some(smp) = sample_of(value) {
                    self.set(vars, scope, &name, &smp, conds);
                }
            }
            Action::UnsetVar(scope, name) => {
                let name = String::from_utf8_lossy(&name);
                if let Some(v) = self.var(scope, &name) {
                    vars.unset(&v);
                }
            }
        }
    }

    fn var(&self, scope: u8, name: &str) -> Option<VarName> {
        let scope = match scope {
            0 => "proc",
            1 => "sess",
            2 => "txn",
            3 => "req",
            4 => "res",
            _ => return None,
        };
        VarName::parse(&format!("{scope}.{}.{name}", self.conf.var_prefix)).ok()
    }

    fn set(&self, vars: &Vars<'_>, scope: u8, name: &str, smp: &Sample<'_>, conds: Conds) {
        if let Some(v) = self.var(scope, name) {
            vars.set(&v, smp, conds);
        }
    }
}

/// What a NOTIFY is about, for the log line: an event or a group.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sent<'a> {
    Event(SpoeEvent),
    Group(&'a str),
}

/// When a NOTIFY's steps ended (None: not reached): its messages encoded,
/// its frame written, its ACK read, its actions applied.
#[derive(Debug, Default)]
struct Times {
    encoded: Option<Instant>,
    sent: Option<Instant>,
    acked: Option<Instant>,
    applied: Option<Instant>,
}

/// A frame waiting for its ACK; dropped, it waits no more.
struct Pending<'a> {
    pool: &'a AgentPool,
    ids: (u64, u64),
    link: &'a AgentLink,
    /// Written: the connection's reader frees its room when the ACK
    /// comes.
    written: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.written {
            crate::state::lock(&self.pool.waiting).remove(&self.ids);
            self.link.waiting.fetch_sub(1, Relaxed);
        }
    }
}

/// The ACKs read on one connection, each given to the frame it names
/// (a frame of another connection, for an asynchronous agent). The
/// connection ends when the agent closes it or says it disconnects (the
/// frames still waiting on it then fail), or after `idle` without a
/// stream waiting on it.
async fn read_acks(
    mut read: tokio::net::tcp::OwnedReadHalf,
    link: Arc<AgentLink>,
    pool: Arc<AgentPool>,
    idle: Duration,
) {
    let mut status = code::IO;
    loop {
        let f = match tokio::time::timeout(idle, read_frame(&mut read)).await {
            // Idle: no frame waits, or only frames no stream waits for
            // any more (an agent that never answered them).
            Err(_) => {
                let busy = crate::state::lock(&pool.waiting)
                    .values()
                    .any(|w| Arc::ptr_eq(&w.link, &link) && !w.tx.is_closed());
                if busy {
                    continue;
                }
                break;
            }
            Ok(Err(_)) => break,
            Ok(Ok(f)) => f,
        };
        let Some(frame) = spop::parse_frame(&f) else {
            break;
        };
        match frame.kind {
            spop::ACK => {
                let ids = (frame.stream_id, frame.frame_id);
                // The frame's room is freed on its connection; its
                // stream may have stopped waiting (`timeout processing`).
                let waiter = crate::state::lock(&pool.waiting).remove(&ids);
                if let Some(w) = waiter {
                    w.link.waiting.fetch_sub(1, Relaxed);
                    let _ = w.tx.send(Ok(frame.payload.to_vec()));
                }
            }
            spop::AGENT_DISCONNECT => {
                status = 256 + spop::get_status(frame.payload);
                break;
            }
            _ => {}
        }
    }
    link.dead.store(true, Relaxed);
    let failed: Vec<Waiter> = {
        let mut waiting = crate::state::lock(&pool.waiting);
        let ids: Vec<(u64, u64)> = waiting
            .iter()
            .filter(|(_, w)| Arc::ptr_eq(&w.link, &link))
            .map(|(k, _)| *k)
            .collect();
        ids.iter().filter_map(|k| waiting.remove(k)).collect()
    };
    for w in failed {
        let _ = w.tx.send(Err(status));
    }
    crate::state::lock(&pool.links).retain(|l| !Arc::ptr_eq(l, &link));
}

/// One frame from `conn`, its length removed.
async fn read_frame(conn: &mut (impl AsyncRead + Unpin)) -> Result<Vec<u8>, u16> {
    let n = conn.read_u32().await.map_err(|_| code::IO)? as usize;
    if n > 1 << 20 {
        return Err(code::IO);
    }
    let mut f = vec![0u8; n];
    conn.read_exact(&mut f).await.map_err(|_| code::IO)?;
    Ok(f)
}

/// A sample as the protocol types it.
fn data_of(s: Sample<'_>) -> Data {
    match s {
        Sample::Bool(b) => Data::Bool(b),
        Sample::Sint(i) => Data::Int(i),
        Sample::Ipv4(a) => Data::Ipv4(a),
        Sample::Ipv6(a) => Data::Ipv6(a),
        Sample::Str(s) => Data::Str(s.into_owned()),
        Sample::Bin(b) => Data::Bin(b.into_owned()),
        Sample::Meth(m) => Data::Str(m.into_owned()),
    }
}

/// A value of the protocol as a variable holds it.
fn sample_of(d: Data) -> Option<Sample<'static>> {
    Some(match d {
        Data::Null => return None,
        Data::Bool(b) => Sample::Bool(b),
        Data::Int(i) => Sample::Sint(i),
        Data::Uint(u) => Sample::Sint(i64::try_from(u).unwrap_or(i64::MAX)),
        Data::Uint32(u) => Sample::Sint(i64::from(u)),
        Data::Ipv4(a) => Sample::Ipv4(a),
        Data::Ipv6(a) => Sample::Ipv6(a),
        Data::Str(s) => Sample::Str(std::borrow::Cow::Owned(s)),
        Data::Bin(b) => Sample::Bin(std::borrow::Cow::Owned(b)),
    })
}

/// The engines a stream's event goes to: the frontend's, then the
/// backend's when it is another proxy (HAProxy's order of the filters).
pub(crate) fn engines<'a>(
    fe: &'a [Arc<SpoeRt>],
    be: Option<&'a [Arc<SpoeRt>]>,
) -> impl Iterator<Item = &'a Arc<SpoeRt>> {
    fe.iter().chain(be.into_iter().flatten())
}

/// Sends `event`'s messages of each of `engines` in turn, each waiting
/// for its agent's answer; `cx` makes their context (with `vars`), only
/// for an engine that has messages for the event.
pub(crate) async fn send_event<'a, 'c>(
    engines: impl Iterator<Item = &'a Arc<SpoeRt>>,
    event: SpoeEvent,
    vars: &Vars<'_>,
    snap: &crate::snapshot::Snapshot,
    cx: impl Fn() -> crate::sample::Ctx<'c>,
) {
    for e in engines {
        if e.wants(event, vars) {
            let cx = cx();
            let msgs = e.for_event(event, &cx);
            e.notify(&msgs, &cx, vars, snap, Sent::Event(event)).await;
        }
    }
}
