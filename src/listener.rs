//! Listening sockets (socket2: SO_REUSEADDR, a backlog) and accept loops
//! that honour `maxconn`: past the limit, new connections wait in the
//! kernel's backlog instead of being accepted and reset.

use std::net::SocketAddr;
use std::sync::Arc;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;
use std::sync::atomic::Ordering::Relaxed;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::backend::FrontendState;

use crate::runtime::Runtime;

/// Accept backlog of every listener.
const BACKLOG: i32 = 1024;

pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    TcpListener::from_std(socket.into())
}

/// Accepts connections for frontend `name` forever. `global` caps the whole
/// process, `local` this frontend.
pub async fn accept_loop(
    rt: Arc<Runtime>,
    name: Arc<str>,
    listener: TcpListener,
    global: Arc<Semaphore>,
    local: Arc<Semaphore>,
) {
    loop {
        // Take both permits before accepting, so an over-limit connection
        // stays in the backlog.
        let Ok(g) = global.clone().acquire_owned().await else {
            return;
        };
        let Ok(l) = local.clone().acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: back off briefly rather than spin.
                tracing::warn!("accept on frontend {name}: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let client = ClientConn::open(&rt, &name, [g, l]);
        tokio::spawn(crate::http::service::serve_connection(client, stream, peer, true));
    }
}

/// What one client connection holds for its whole life. Opening it counts
/// the connection; dropping it closes the books and frees the `maxconn`
/// permits, whatever way the connection ended.
pub struct ClientConn {
    pub rt: Arc<Runtime>,
    pub frontend: Arc<str>,
    fe_state: Option<Arc<FrontendState>>,
    _permits: [OwnedSemaphorePermit; 2],
}

impl ClientConn {
    fn open(rt: &Arc<Runtime>, frontend: &Arc<str>, permits: [OwnedSemaphorePermit; 2]) -> Self {
        let fe_state = rt
            .snapshot()
            .frontends()
            .find(|f| *f.name == **frontend)
            .map(|f| f.state.clone());
        let p = &rt.process;
        p.conns.inc();
        p.cum_conns.fetch_add(1, Relaxed);
        p.conn_rate.hit();
        p.sess_rate.hit();
        if let Some(st) = &fe_state {
            st.counters.conn_tot.fetch_add(1, Relaxed);
            st.counters.conn_rate.hit();
            st.counters.session_start();
        }
        ClientConn {
            rt: rt.clone(),
            frontend: frontend.clone(),
            fe_state,
            _permits: permits,
        }
    }
}

impl Drop for ClientConn {
    fn drop(&mut self) {
        if let Some(st) = &self.fe_state {
            st.counters.session_end();
        }
        self.rt.process.conns.dec();
    }
}

/// Binds a listening socket without a runtime (before daemonizing).
pub fn bind_std(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}
