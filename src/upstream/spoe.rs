//! SPOE agents: the messages of an engine sent to one of its agents (a
//! server of its `use-backend`) in a NOTIFY frame, and the variables its
//! ACK sets, before the rules that read them run. Connections to agents
//! are opened with the HELLO handshake and kept for the next messages,
//! one exchange at a time each.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::sample::value::Sample;
use crate::sample::vars::{Conds, VarName, Vars};
use crate::wire::spop::{self, Action, Data};

/// Why an exchange with an agent failed: HAProxy's error codes for
/// `option set-on-error` (a SPOP status is 256 + status: 1 is an I/O
/// error, a connection closed or refused, as HAProxy reports it).
#[derive(Debug, Clone, Copy)]
enum Failure {
    Timeout = 1,
    Io = 257,
}

impl crate::snapshot::spoe::SpoeRt {
    /// Sends `messages` (evaluated on `cx`) to an agent and applies its
    /// answer to `vars`, within `timeout processing`; a failure sets
    /// `option set-on-error`'s variable.
    pub(crate) async fn notify(
        &self,
        messages: &[usize],
        cx: &crate::sample::Ctx<'_>,
        vars: &Vars<'_>,
        snap: &crate::snapshot::Snapshot,
    ) {
        if messages.is_empty() {
            return;
        }
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
        let started = Instant::now();
        let done =
            tokio::time::timeout(self.conf.timeout_processing, self.exchange(&payload, snap)).await;
        let result = match done {
            Ok(r) => r,
            Err(_) => Err(Failure::Timeout),
        };
        let conds = Conds::default();
        match result {
            Ok(actions) => {
                for a in actions {
                    self.apply(a, vars);
                }
                if let Some(n) = &self.conf.set_process_time {
                    let ms = started.elapsed().as_millis() as i64;
                    self.set(vars, 2, n, &Sample::Sint(ms), conds);
                }
            }
            Err(f) => {
                if let Some(n) = &self.conf.set_on_error {
                    self.set(vars, 2, n, &Sample::Sint(f as i64), conds);
                }
            }
        }
    }

    /// One NOTIFY and its ACK on a connection (kept for the next one when
    /// the exchange went well).
    async fn exchange(
        &self,
        payload: &[u8],
        snap: &crate::snapshot::Snapshot,
    ) -> Result<Vec<Action>, Failure> {
        let pooled = crate::state::lock(&self.idle).pop();
        let mut conn = match pooled {
            Some(c) => c,
            None => self.connect(snap).await?,
        };
        let id = self.next_id.fetch_add(1, Relaxed);
        let mut frame = BytesMut::new();
        spop::put_frame(&mut frame, spop::NOTIFY, (id, 1), payload);
        conn.write_all(&frame).await.map_err(|_| Failure::Io)?;
        loop {
            let f = read_frame(&mut conn).await?;
            let frame = spop::parse_frame(&f).ok_or(Failure::Io)?;
            match frame.kind {
                spop::ACK if frame.stream_id == id => {
                    let actions = spop::get_actions(frame.payload).ok_or(Failure::Io)?;
                    crate::state::lock(&self.idle).push(conn);
                    return Ok(actions);
                }
                spop::AGENT_DISCONNECT => return Err(Failure::Io),
                // An ACK of another exchange (a late one): skipped.
                _ => {}
            }
        }
    }

    /// A new connection to an agent, the HELLO handshake done.
    async fn connect(&self, snap: &crate::snapshot::Snapshot) -> Result<TcpStream, Failure> {
        let be = snap.backend(&self.conf.backend).ok_or(Failure::Io)?;
        let server = be
            .servers
            .iter()
            .find(|s| s.state.usable())
            .ok_or(Failure::Io)?;
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
        .map_err(|_| Failure::Io)?;
        let _ = conn.set_nodelay(true);
        let mut hello = BytesMut::new();
        spop::put_kv(
            &mut hello,
            "supported-versions",
            &Data::Str(b"2.0".to_vec()),
        );
        spop::put_kv(
            &mut hello,
            "max-frame-size",
            &Data::Uint(u64::from(self.conf.max_frame_size)),
        );
        spop::put_kv(&mut hello, "capabilities", &Data::Str(Vec::new()));
        spop::put_kv(
            &mut hello,
            "engine-id",
            &Data::Str(self.conf.id.as_bytes().to_vec()),
        );
        let mut frame = BytesMut::new();
        spop::put_frame(&mut frame, spop::HAPROXY_HELLO, (0, 0), &hello);
        let handshake = async {
            conn.write_all(&frame).await.map_err(|_| Failure::Io)?;
            let f = read_frame(&mut conn).await?;
            match spop::parse_frame(&f) {
                Some(h) if h.kind == spop::AGENT_HELLO => Ok(()),
                _ => Err(Failure::Io),
            }
        };
        match tokio::time::timeout(self.conf.timeout_hello, handshake).await {
            Ok(Ok(())) => Ok(conn),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Failure::Timeout),
        }
    }

    /// An action of the agent's ACK: the variable is the engine's
    /// (`<scope>.<prefix>.<name>`).
    fn apply(&self, a: Action, vars: &Vars<'_>) {
        match a {
            Action::SetVar(scope, name, value) => {
                let name = String::from_utf8_lossy(&name).into_owned();
                if let Some(smp) = sample_of(value) {
                    self.set(vars, scope, &name, &smp, Conds::default());
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

/// One frame from `conn`, its length removed.
async fn read_frame(conn: &mut TcpStream) -> Result<Vec<u8>, Failure> {
    let n = conn.read_u32().await.map_err(|_| Failure::Io)? as usize;
    if n > 1 << 20 {
        return Err(Failure::Io);
    }
    let mut f = vec![0u8; n];
    conn.read_exact(&mut f).await.map_err(|_| Failure::Io)?;
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
        Data::Ipv4(a) => Sample::Ipv4(a),
        Data::Ipv6(a) => Sample::Ipv6(a),
        Data::Str(s) => Sample::Str(std::borrow::Cow::Owned(s)),
        Data::Bin(b) => Sample::Bin(std::borrow::Cow::Owned(b)),
    })
}
