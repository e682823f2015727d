//! One peer session once the handshake succeeded, in either direction:
//! the messages of HAProxy's peers protocol 2.1. Each shared table has
//! its cursors (HAProxy's `shared_table`): the last of its updates
//! pushed and the last the peer acknowledged, the last of the peer's
//! taken and acknowledged. Local updates are pushed as they come (the
//! tables wake the session), a lesson is asked of the peer when the
//! section needs its tables taught, and taught to a peer that asks.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

use super::codec::{self, Control, DictValue, Message, Split, Value};
use super::section::{self, Io, Peer, RECONNECT, Section, lock};
use crate::sample::stick::DataType;
use crate::state::table::entry::{RawValue, Values};
use crate::state::table::schema::dict;
use crate::state::table::{PeerUpdate, Table, freq};

/// HAProxy's delay between heartbeats on an idle session.
const HEARTBEAT: Duration = Duration::from_millis(3000);
/// The updates pushed for one table before the others get their turn
/// (HAProxy's `tune.peers.max-updates-at-once`).
const MAX_UPDATES: usize = 200;
/// A silent peer is dropped after this long (HAProxy's reconnect
/// period, twice: once to mark it, once to drop it).
const SILENCE: Duration = Duration::from_millis(2 * RECONNECT.as_millis() as u64);

/// What `show peers` shows of a session.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConnView {
    /// An incoming session's connection: the peer's address, the local
    /// one, TLS or not (HAProxy shows the connection of the sessions it
    /// accepted only).
    pub(crate) accepted: Option<(SocketAddr, SocketAddr, bool)>,
    /// The shared table the peer's updates are for, and the last one
    /// this process sent updates of.
    pub(crate) remote_table: Option<usize>,
    pub(crate) last_local_table: Option<usize>,
    pub(crate) cursors: Vec<Cursor>,
    /// The `server_key` texts sent on the session, by number from 1, and
    /// the peer's (`show peers dict`).
    pub(crate) tx_dict: Vec<Arc<str>>,
    pub(crate) rx_dict: Vec<Option<Arc<str>>>,
}

/// A shared table's cursors in a session.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cursor {
    pub(crate) remote_id: u64,
    pub(crate) flags: u32,
    pub(crate) remote_data: u64,
    pub(crate) last_acked: u32,
    pub(crate) last_pushed: u32,
    pub(crate) last_get: u32,
    pub(crate) teaching_origin: u32,
    pub(crate) update: u32,
}

/// HAProxy's teaching stages of a table.
const STAGE1: u32 = 1;
const STAGE2: u32 = 2;

/// A shared table in a session.
struct Shared {
    table: Arc<Table>,
    /// This process's number for it, and the peer's definition.
    local_id: u64,
    remote_def: Option<codec::Define>,
    c: Cursor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Learn {
    NotAssigned,
    Assigned,
    Processing,
}

struct Session<'a> {
    sec: &'a Section,
    peer: &'a Peer,
    tables: Vec<Shared>,
    remote_table: Option<usize>,
    last_local_table: Option<usize>,
    learn: Learn,
    teaching: bool,
    taught: bool,
    confirm: u32,
    /// The peer speaks 2.0: updates without expiry.
    downgraded: bool,
    /// `server_key` texts: the ones sent on this connection, by number
    /// (from 1), and the peer's.
    tx_dict: Vec<Arc<str>>,
    tx_next: usize,
    rx_dict: Vec<Option<Arc<str>>>,
}

/// Why a session ends.
enum End {
    Closed,
    Error(codec::ErrorKind),
}

/// Runs the session over `io` (the hello exchanged, `io`'s buffer holds
/// what came after it) until either side closes it.
pub(super) async fn run(
    sec: &Section,
    peer: &Peer,
    io: BufReader<Box<dyn Io>>,
    downgraded: bool,
    view: ConnView,
) {
    let mut rx = io.buffer().to_vec();
    let (mut rd, mut wr) = tokio::io::split(io.into_inner());
    let mut s = Session::new(sec, peer);
    s.downgraded = downgraded;
    {
        let mut st = lock(&peer.state);
        st.heartbeat = Some(Instant::now() + HEARTBEAT);
        st.confirm = 0;
        st.conn = Some(view.clone());
    }
    let mut last_rx = Instant::now();
    let mut last_tx = Instant::now();
    let mut eof = false;
    let end = loop {
        let wake = sec.wake.notified();
        tokio::pin!(wake);
        wake.as_mut().enable();
        // What came in.
        match s.take_messages(&mut rx) {
            Ok(()) => {}
            Err(e) => break e,
        }
        if eof {
            break End::Closed;
        }
        s.maybe_learn();
        let mut out = Vec::new();
        let more = s.produce(&mut out);
        if out.is_empty() && last_tx.elapsed() >= HEARTBEAT {
            codec::control(&mut out, Control::Heartbeat);
            lock(&peer.state).tx_hbt += 1;
        }
        if !out.is_empty() {
            match write_reading(&mut wr, &mut rd, &mut rx, &out).await {
                Ok(closed) => {
                    if !rx.is_empty() {
                        last_rx = Instant::now();
                    }
                    eof |= closed;
                }
                Err(_) => break End::Closed,
            }
            last_tx = Instant::now();
            lock(&peer.state).heartbeat = Some(last_tx + HEARTBEAT);
        }
        s.publish(&view);
        if more || !rx.is_empty() && matches!(codec::split(&rx), Split::Message { .. }) {
            tokio::task::yield_now().await;
            continue;
        }
        if last_rx.elapsed() >= SILENCE {
            lock(&peer.state).no_hbt += 1;
            break End::Closed;
        }
        let timer = (last_tx + HEARTBEAT).min(last_rx + SILENCE);
        let timer = match s.learn_deadline() {
            Some(d) => timer.min(d),
            None => timer,
        };
        let mut buf = [0u8; 16384];
        tokio::select! {
            r = rd.read(&mut buf) => match r {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    rx.extend_from_slice(&buf[..n]);
                    last_rx = Instant::now();
                    lock(&peer.state).reconnect = Some(last_rx + RECONNECT);
                }
            },
            _ = wake => {}
            _ = tokio::time::sleep_until(timer.into()) => {}
        }
    };
    if let End::Error(e) = end {
        let mut out = Vec::new();
        codec::error(&mut out, e);
        let _ = wr.write_all(&out).await;
        lock(&peer.state).proto_err += 1;
    }
    let _ = wr.shutdown().await;
}

/// The session ends, closed or cut (a newer connection of the peer, the
/// section stopped): a lesson it was to learn goes to another, and what
/// the peer acknowledged is kept for the next session.
impl Drop for Session<'_> {
    fn drop(&mut self) {
        if self.learn != Learn::NotAssigned {
            let mut r = lock(&self.sec.resync);
            r.assigned = false;
            r.flags = (r.flags & !section::RESYNC_PROCESS) | section::RESYNC_ABORT;
            r.deadline = Instant::now() + Duration::from_millis(5000);
        }
        let mut st = lock(&self.peer.state);
        for (i, t) in self.tables.iter().enumerate() {
            if let Some(a) = st.acked.get_mut(i) {
                *a = t.c.update;
            }
        }
    }
}

/// Writes `data` while reading what the peer sends meanwhile into `rx`
/// (two peers teaching each other at once would otherwise both wait to
/// write). True when the peer closed its side.
async fn write_reading<R, W>(
    wr: &mut W,
    rd: &mut R,
    rx: &mut Vec<u8>,
    mut data: &[u8],
) -> std::io::Result<bool>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut eof = false;
    let mut buf = [0u8; 16384];
    while !data.is_empty() {
        tokio::select! {
            n = wr.write(data) => {
                let n = n?;
                if n == 0 {
                    return Err(std::io::ErrorKind::WriteZero.into());
                }
                data = &data[n..];
            }
            r = rd.read(&mut buf), if !eof && rx.len() < 1 << 22 => match r {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => rx.extend_from_slice(&buf[..n]),
            },
        }
    }
    wr.flush().await?;
    Ok(eof)
}

impl<'a> Session<'a> {
    fn new(sec: &'a Section, peer: &'a Peer) -> Session<'a> {
        let acked = lock(&peer.state).acked.clone();
        let tables = sec
            .tables
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut update = acked.get(i).copied().unwrap_or(0);
                let local = t.local_update();
                // An acknowledgement from too long ago: as far back as
                // can be told apart.
                if (local.wrapping_sub(update) as i32) < 0 {
                    update = local.wrapping_add(1 << 31);
                }
                if (update.wrapping_sub(t.commit_update()) as i32) > 0 {
                    t.set_commit_update(update);
                }
                Shared {
                    table: t.clone(),
                    local_id: i as u64 + 1,
                    remote_def: None,
                    c: Cursor {
                        last_pushed: update,
                        teaching_origin: update,
                        update,
                        ..Default::default()
                    },
                }
            })
            .collect();
        Session {
            sec,
            peer,
            tables,
            remote_table: None,
            last_local_table: None,
            learn: Learn::NotAssigned,
            teaching: false,
            taught: false,
            confirm: 0,
            downgraded: false,
            tx_dict: Vec::new(),
            tx_next: 0,
            rx_dict: vec![None; codec::DICT_ENTRIES as usize],
        }
    }

    /// Takes the lesson to ask if the section wants one and no other
    /// session has it.
    fn maybe_learn(&mut self) {
        if self.learn != Learn::NotAssigned || !self.sec.resync_wanted() {
            return;
        }
        if lock(&self.peer.state).not_up_to_date {
            return;
        }
        let mut r = lock(&self.sec.resync);
        if !r.assigned && !r.finished {
            r.assigned = true;
            r.flags |= section::RESYNC_ASSIGNED;
            self.learn = Learn::Assigned;
        }
    }

    /// When the section's wait for a lesson ends, while it waits.
    fn learn_deadline(&self) -> Option<Instant> {
        let r = lock(&self.sec.resync);
        (!r.finished && !r.assigned).then_some(r.deadline)
    }

    /// The cursors, for `show peers`.
    fn publish(&self, view: &ConnView) {
        let mut st = lock(&self.peer.state);
        let v = st.conn.get_or_insert_with(|| view.clone());
        v.remote_table = self.remote_table;
        v.last_local_table = self.last_local_table;
        v.cursors = self.tables.iter().map(|t| t.c).collect();
        if v.tx_dict.len() != self.tx_dict.len() || v.rx_dict != self.rx_dict {
            v.tx_dict = self.tx_dict.clone();
            v.rx_dict = self.rx_dict.clone();
        }
        st.confirm = self.confirm;
        for (i, t) in self.tables.iter().enumerate() {
            if let Some(a) = st.acked.get_mut(i) {
                *a = t.c.update;
            }
        }
    }

    /// Appends what is to be sent: the lesson asked, acknowledgements,
    /// updates (the local ones, or all of them to a peer being taught),
    /// the end of a lesson, the confirmations. True when more updates
    /// wait than one round sends.
    fn produce(&mut self, out: &mut Vec<u8>) -> bool {
        if self.learn == Learn::Assigned {
            codec::control(out, Control::ResyncRequest);
            self.learn = Learn::Processing;
            lock(&self.sec.resync).flags |= section::RESYNC_PROCESS;
        }
        let mut more = false;
        for i in 0..self.tables.len() {
            let c = &mut self.tables[i].c;
            if c.last_get != c.last_acked && c.remote_id != 0 {
                codec::ack(out, c.remote_id, c.last_get);
                c.last_acked = c.last_get;
            }
            if !self.teaching {
                let t = &self.tables[i];
                if self.learn == Learn::NotAssigned && t.c.last_pushed != t.table.local_update() {
                    more |= self.push_local(i, out);
                }
            } else if !self.taught {
                if self.tables[i].c.flags & STAGE1 == 0 {
                    more |= self.teach(i, out, true);
                }
                if !more && self.tables[i].c.flags & STAGE2 == 0 {
                    more |= self.teach(i, out, false);
                }
            }
        }
        if self.teaching
            && !self.taught
            && !more
            && self
                .tables
                .iter()
                .all(|t| t.c.flags & (STAGE1 | STAGE2) == STAGE1 | STAGE2)
        {
            // A lesson is whole only from a process that has all its
            // tables itself.
            let whole = !self.sec.resync_wanted();
            let end = if whole {
                Control::ResyncFinished
            } else {
                Control::ResyncPartial
            };
            codec::control(out, end);
            self.taught = true;
        }
        while self.confirm > 0 {
            codec::control(out, Control::ResyncConfirm);
            self.confirm -= 1;
        }
        more
    }

    /// Pushes table `i`'s local updates after the last pushed (HAProxy's
    /// `peer_teach_process_stksess_lookup`): a peer's updates, numbered
    /// from 2^31, are past the local ones and never sent back.
    fn push_local(&mut self, i: usize, out: &mut Vec<u8>) -> bool {
        for _ in 0..MAX_UPDATES {
            let t = &self.tables[i];
            let (lp, lu) = (t.c.last_pushed, t.table.local_update());
            let next = t.table.update_from(lp.wrapping_add(1)).or_else(|| {
                let first = t.table.update_from(0)?;
                (first.seq != lp).then_some(first)
            });
            let Some(u) = next.filter(|u| u.seq.wrapping_sub(lp) <= lu.wrapping_sub(lp)) else {
                self.pushed(i, lu);
                return false;
            };
            self.send_update(i, &u, false, out);
            self.pushed(i, u.seq);
        }
        true
    }

    /// Teaches table `i`: stage 1 sends every update after the one the
    /// peer acknowledged last, stage 2 those from the first up to it.
    fn teach(&mut self, i: usize, out: &mut Vec<u8>, stage1: bool) -> bool {
        for _ in 0..MAX_UPDATES {
            let t = &self.tables[i];
            let next = t.table.update_from(t.c.last_pushed.wrapping_add(1));
            let next = if stage1 {
                next
            } else {
                next.filter(|u| u.seq <= t.c.teaching_origin)
            };
            let Some(u) = next else {
                let first = t.table.first_update();
                let c = &mut self.tables[i].c;
                if stage1 {
                    c.flags |= STAGE1;
                    if let Some(f) = first {
                        c.last_pushed = f.wrapping_sub(1);
                    }
                } else {
                    c.flags |= STAGE2;
                }
                return false;
            };
            let timed = !self.downgraded;
            self.send_update(i, &u, timed, out);
            self.tables[i].c.last_pushed = u.seq;
        }
        true
    }

    fn pushed(&mut self, i: usize, seq: u32) {
        let t = &mut self.tables[i];
        t.c.last_pushed = seq;
        if (seq.wrapping_sub(t.table.commit_update()) as i32) > 0 {
            t.table.set_commit_update(seq);
        }
    }

    /// Appends the update of `u` in table `i`, its definition first when
    /// the last updates sent were another table's.
    fn send_update(&mut self, i: usize, u: &PeerUpdate, timed: bool, out: &mut Vec<u8>) {
        if self.last_local_table != Some(i) {
            let t = &self.tables[i];
            codec::define(out, &t.table.def, t.local_id);
            self.last_local_table = Some(i);
        }
        let now = freq::now_ms();
        let values = u
            .values
            .iter()
            .map(|(d, vals)| {
                let vals = vals
                    .iter()
                    .map(|v| match *v {
                        RawValue::Freq(t, cur, prev) => Value::Freq {
                            age: u64::from(now.wrapping_sub(t)),
                            cur: u64::from(cur),
                            prev: u64::from(prev),
                        },
                        RawValue::Int(n) if *d == DataType::ServerKey => {
                            Value::Dict(self.dict_out(n))
                        }
                        RawValue::Int(n) => Value::Int(n),
                    })
                    .collect();
                (*d, vals)
            })
            .collect();
        let update = codec::Update {
            id: Some(u.seq),
            expire: timed.then_some(u.expire_in),
            key: u.key.clone(),
            values,
        };
        codec::update(out, self.tables[i].table.def.key, &update);
    }

    /// A `server_key` as this connection sends it: its number in the
    /// cache once sent, its text the first time.
    fn dict_out(&mut self, n: u64) -> DictValue {
        let Some(text) = dict::get(n) else {
            return DictValue::None;
        };
        if let Some(i) = self.tx_dict.iter().position(|t| *t == text) {
            return DictValue::Cached(i as u32 + 1);
        }
        let slot = self.tx_next;
        self.tx_next = (self.tx_next + 1) % codec::DICT_ENTRIES as usize;
        if slot < self.tx_dict.len() {
            self.tx_dict[slot] = text.clone();
        } else {
            self.tx_dict.push(text.clone());
        }
        DictValue::New(slot as u32 + 1, text.as_bytes().to_vec())
    }

    /// Reads and acts on every whole message in `rx`.
    fn take_messages(&mut self, rx: &mut Vec<u8>) -> Result<(), End> {
        let mut used = 0;
        let res = loop {
            match codec::split(&rx[used..]) {
                Split::Incomplete => break Ok(()),
                Split::TooBig => break Err(End::Error(codec::ErrorKind::SizeLimit)),
                Split::BadLength => break Err(End::Error(codec::ErrorKind::Protocol)),
                Split::Message {
                    class,
                    kind,
                    body,
                    len,
                } => {
                    let r = match codec::parse(class, kind, body) {
                        Ok(m) => self.on_message(m),
                        Err(_) => Err(End::Error(codec::ErrorKind::Protocol)),
                    };
                    used += len;
                    if let Err(e) = r {
                        break Err(e);
                    }
                }
            }
        };
        rx.drain(..used);
        res
    }

    fn on_message(&mut self, m: Message<'_>) -> Result<(), End> {
        match m {
            Message::Control(Control::ResyncRequest) => {
                for t in &mut self.tables {
                    t.c.teaching_origin = t.c.update;
                    t.c.last_pushed = t.c.update;
                    t.c.flags = 0;
                }
                self.teaching = true;
                self.taught = false;
                lock(&self.sec.resync).flags |= section::RESYNC_REQUESTED;
            }
            Message::Control(c @ (Control::ResyncFinished | Control::ResyncPartial)) => {
                if self.learn == Learn::Processing {
                    self.learn = Learn::NotAssigned;
                    let mut r = lock(&self.sec.resync);
                    r.assigned = false;
                    r.flags &= !section::RESYNC_PROCESS;
                    if c == Control::ResyncFinished {
                        r.finished = true;
                        r.flags |= section::RESYNC_FINISHED;
                    } else {
                        r.flags |= section::RESYNC_PARTIAL;
                        r.deadline = Instant::now() + Duration::from_millis(5000);
                        lock(&self.peer.state).not_up_to_date = true;
                    }
                }
                self.confirm += 1;
            }
            Message::Control(Control::ResyncConfirm) => {
                for t in &mut self.tables {
                    t.c.update = t.c.teaching_origin;
                    t.c.last_pushed = t.c.teaching_origin;
                    t.c.flags = 0;
                }
                self.teaching = false;
                self.taught = false;
            }
            Message::Control(Control::Heartbeat) => {
                lock(&self.peer.state).rx_hbt += 1;
            }
            Message::Error(_) => return Err(End::Closed),
            Message::Define { id, name, tail } => {
                self.remote_table = None;
                let mut found = None;
                for (i, t) in self.tables.iter_mut().enumerate() {
                    if t.c.remote_id == id {
                        t.c.remote_id = 0;
                    }
                    if found.is_none() && codec::wire_name(t.table.name()).as_bytes() == name {
                        found = Some(i);
                    }
                }
                let Some(i) = found else { return Ok(()) };
                let def = codec::Define::read(id, name, tail)
                    .map_err(|_| End::Error(codec::ErrorKind::Protocol))?;
                let Some(def) = def else { return Ok(()) };
                let t = &mut self.tables[i];
                let key = t.table.def.key;
                if def.key_type != codec::net_key_type(key) || def.key_len != u64::from(key.size())
                {
                    return Ok(());
                }
                t.c.remote_id = id;
                t.c.remote_data = def.data;
                t.remote_def = Some(def);
                self.remote_table = Some(i);
            }
            Message::Switch(id) => {
                self.remote_table = self
                    .tables
                    .iter()
                    .position(|t| t.c.remote_id == id && id != 0);
            }
            Message::Ack { table, update } => {
                if let Some(t) = self.tables.iter_mut().find(|t| t.local_id == table) {
                    t.c.update = update;
                }
            }
            Message::Update {
                with_id,
                timed,
                body,
            } => {
                let Some(i) = self.remote_table else {
                    return Ok(());
                };
                let t = &self.tables[i];
                let Some(def) = &t.remote_def else {
                    return Ok(());
                };
                let u = codec::read_update(body, with_id, timed, t.table.def.key, def)
                    .map_err(|_| End::Error(codec::ErrorKind::Protocol))?;
                let expire = u.expire.unwrap_or(t.table.def.expire);
                let values = self.values_in(&u.values);
                let t = &mut self.tables[i];
                t.c.last_get = u.id.unwrap_or(t.c.last_get.wrapping_add(1));
                // A full table takes no more (HAProxy drops the update).
                let _ = t.table.apply_remote(&u.key, &values, expire);
            }
            Message::Ignored => {}
            Message::Reserved => return Err(End::Error(codec::ErrorKind::Protocol)),
        }
        Ok(())
    }

    /// The values of a peer's update as the store keeps them.
    fn values_in(&mut self, vals: &[(DataType, Vec<Value>)]) -> Values {
        let now = freq::now_ms();
        vals.iter()
            .map(|(d, vs)| {
                let raw = vs
                    .iter()
                    .map(|v| match v {
                        Value::Int(n) => RawValue::Int(*n),
                        Value::Freq { age, cur, prev } => {
                            RawValue::Freq(now.wrapping_sub(*age as u32), *cur as u32, *prev as u32)
                        }
                        Value::Dict(dv) => {
                            let text = match dv {
                                DictValue::None => None,
                                DictValue::Cached(id) => {
                                    self.rx_dict.get(*id as usize - 1).cloned().flatten()
                                }
                                DictValue::New(id, text) => {
                                    let t: Arc<str> = String::from_utf8_lossy(text).into();
                                    if let Some(slot) = self.rx_dict.get_mut(*id as usize - 1) {
                                        *slot = Some(t.clone());
                                    }
                                    Some(t)
                                }
                            };
                            RawValue::Int(text.map_or(0, |t| dict::intern(&t)))
                        }
                    })
                    .collect();
                (*d, raw)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
