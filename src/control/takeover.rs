//! Handing listening sockets to a new process (binary upgrades).
//!
//! A stats socket declared with `expose-fd listeners` answers the command
//! `_getsocks` by passing a duplicate of every listening socket in service
//! over the UNIX socket (SCM_RIGHTS), one message per socket whose payload
//! is a line `<address> <frontend>`, then closes. A new sluice started with
//! `-x <that socket>` fetches them before binding and uses them instead of
//! binding the same addresses, so the port never closes and nothing waiting
//! in the accept backlog is lost; with `-sf <old pid>` it then tells the old
//! process to finish. Any other command on that socket is the ordinary CLI.

use std::io::{IoSlice, IoSliceMut};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixStream;

use crate::config::model::CliLevel;
use crate::snapshot::runtime::Runtime;

const COMMAND: &[u8] = b"_getsocks";

/// Serves a stats socket with `expose-fd listeners`.
pub(crate) async fn serve_exposing(
    listener: std::os::unix::net::UnixListener,
    level: CliLevel,
    rt: Arc<Runtime>,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::UnixListener::from_std(listener)?;
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "stats socket accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let rt = rt.clone();
        crate::control::cli::count_accepted(&rt);
        tokio::spawn(async move {
            if asks_for_sockets(&stream).await {
                if level < CliLevel::Admin {
                    tracing::warn!("_getsocks refused: the stats socket is not at level admin");
                    return;
                }
                if let Err(e) = send_listeners(stream).await {
                    tracing::warn!("handing listening sockets over failed: {e}");
                }
            } else {
                crate::control::cli::handle_conn(
                    stream,
                    crate::observe::stats::sess::CliOrigin::Unix,
                    level,
                    rt,
                )
                .await;
            }
        });
    }
}

/// Peeks at the first bytes: true if they are `_getsocks`.
async fn asks_for_sockets(stream: &UnixStream) -> bool {
    let mut buf = [0u8; 16];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if tokio::time::timeout_at(deadline, stream.readable())
            .await
            .map_or(true, |r| r.is_err())
        {
            return false;
        }
        // SAFETY: recv into a buffer of the given length; MSG_PEEK leaves
        // the bytes for the CLI if this is not our command.
        let n = unsafe {
            libc::recv(
                stream.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::WouldBlock {
                continue;
            }
            return false;
        }
        let got = &buf[..n as usize];
        if n == 0 || got.len() >= COMMAND.len() || got.contains(&b'\n') {
            return got.starts_with(COMMAND);
        }
        if !COMMAND.starts_with(got) {
            return false;
        }
        // A prefix of the command so far: wait for more.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn send_listeners(stream: UnixStream) -> std::io::Result<()> {
    let Some(sup) = crate::control::reload::supervisor() else {
        return Ok(());
    };
    let list = sup.listener_dups().await;
    let cli = cli_dups();
    // Consume the command (only peeked so far): unread bytes at close
    // would reset the connection under the receiver.
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 64 {
        stream.readable().await?;
        match stream.try_read(&mut byte) {
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
    let stream = stream.into_std()?;
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        for (addr, frontend, fd) in &list {
            // An inherited socket says which `fd@<n>` it stands for, so a
            // successor that was not passed that descriptor still finds it.
            let line = match crate::state::inherited::fd_of(addr) {
                Some(n) => format!("{addr} {frontend} fd@{n}\n"),
                None => format!("{addr} {frontend}\n"),
            };
            send_fd(&stream, line.as_bytes(), fd.as_raw_fd())?;
        }
        for (n, fd) in &cli {
            send_fd(
                &stream,
                format!("cli GLOBAL fd@{n}\n").as_bytes(),
                fd.as_raw_fd(),
            )?;
        }
        tracing::info!(
            "Handed {} listening socket(s) over to a new process.",
            list.len() + cli.len()
        );
        Ok(())
    })
    .await
    .map_err(std::io::Error::other)?
}

fn send_fd(stream: &StdUnixStream, payload: &[u8], fd: RawFd) -> std::io::Result<()> {
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
    let mut cbuf = vec![0u8; space];
    let iov = [IoSlice::new(payload)];
    // SAFETY: msghdr is plain data, filled in below with pointers to live
    // buffers; the control message is written inside `cbuf`.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        if libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CLI sockets inherited as `stats socket fd@<n>`: `n` and a duplicate,
/// handed over with the frontends' sockets (HAProxy's `_getsocks` sends its
/// CLI sockets too), so a successor that was not passed `n` still serves
/// the CLI on it. They live as long as the process.
static INHERITED_CLI: std::sync::Mutex<Vec<(RawFd, OwnedFd)>> = std::sync::Mutex::new(Vec::new());

/// Keeps `socket`, inherited as `stats socket fd@<n>`, for hand-overs.
pub(crate) fn hand_over_cli(n: RawFd, socket: &crate::frontend::listener::Listening) {
    // SAFETY: `socket` is open for the duration of the borrow.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(socket.raw_fd()) };
    match fd.try_clone_to_owned() {
        Ok(dup) => crate::state::lock(&INHERITED_CLI).push((n, dup)),
        Err(e) => tracing::warn!("stats socket fd@{n} will not be handed over (-x): {e}"),
    }
}

/// Copies of the inherited CLI sockets, to send.
fn cli_dups() -> Vec<(RawFd, OwnedFd)> {
    crate::state::lock(&INHERITED_CLI)
        .iter()
        .filter_map(|(n, fd)| Some((*n, fd.try_clone().ok()?)))
        .collect()
}

/// A listening socket received from an old process.
pub(crate) struct Received {
    /// The `fd@<n>` the old process had inherited it as, if it had.
    pub(crate) inherited_as: Option<RawFd>,
    /// The address the old process listed it under (`unix@/path`: the
    /// socket itself knows only the temporary name it was bound at).
    pub(crate) listed_as: Option<String>,
    pub(crate) socket: crate::frontend::listener::Listening,
}

/// The listening sockets a new process received with `-x`.
#[derive(Default)]
pub(crate) struct Handover {
    sockets: Vec<Received>,
    /// The numbers they arrived at, kept after they are taken (a taken one
    /// now serves something else under that number).
    numbers: Vec<RawFd>,
}

impl Handover {
    /// Whether descriptor number `fd` holds one of the received sockets.
    /// They took the lowest numbers free when they arrived, so `fd` was not
    /// open then: this process was not passed `fd@<fd>`, and adopting that
    /// number would take a received socket for an inherited one.
    pub(crate) fn occupies(&self, fd: RawFd) -> bool {
        self.numbers.contains(&fd)
    }

    /// The socket the old process had inherited as `fd@<fd>`.
    pub(crate) fn take_inherited(
        &mut self,
        fd: RawFd,
    ) -> Option<crate::frontend::listener::Listening> {
        let i = self
            .sockets
            .iter()
            .position(|r| r.inherited_as == Some(fd))?;
        Some(self.sockets.swap_remove(i).socket)
    }

    /// The TCP socket listening on `addr`, preferring one that was not an
    /// inherited one (that stays for its `fd@` bind).
    pub(crate) fn take_tcp(&mut self, addr: SocketAddr) -> Option<std::net::TcpListener> {
        let on_addr = |r: &Received| matches!(&r.socket, crate::frontend::listener::Listening::Tcp(l) if l.local_addr().ok() == Some(addr));
        let i = self
            .sockets
            .iter()
            .position(|r| r.inherited_as.is_none() && on_addr(r))
            .or_else(|| self.sockets.iter().position(on_addr))?;
        match self.sockets.swap_remove(i).socket {
            crate::frontend::listener::Listening::Tcp(l) => Some(l),
            crate::frontend::listener::Listening::Unix(_) => None,
        }
    }

    /// The UNIX socket the old process listed as `name`.
    pub(crate) fn take_unix(
        &mut self,
        name: &crate::config::model::UnixName,
    ) -> Option<std::os::unix::net::UnixListener> {
        let want = name.to_string();
        let i = self.sockets.iter().position(|r| {
            r.listed_as.as_deref() == Some(want.as_str())
                && matches!(r.socket, crate::frontend::listener::Listening::Unix(_))
        })?;
        match self.sockets.swap_remove(i).socket {
            crate::frontend::listener::Listening::Unix(l) => Some(l),
            crate::frontend::listener::Listening::Tcp(_) => None,
        }
    }
}

/// `-x <socket>`: asks the process behind `path` for its listening sockets.
pub(crate) fn fetch(path: &Path) -> std::io::Result<Handover> {
    let mut stream = StdUnixStream::connect(path)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    std::io::Write::write_all(&mut stream, b"_getsocks\n")?;
    // Until the old process closes: each message carries one socket and a
    // line naming it (the address itself is read from the socket).
    let mut got: Vec<(Option<RawFd>, Option<String>, OwnedFd)> = Vec::new();
    loop {
        let (line, fds) = recv_fds(&stream)?;
        if line.is_empty() && fds.is_empty() {
            break;
        }
        let tag = inherited_tag(&line);
        let listed = std::str::from_utf8(&line)
            .ok()
            .and_then(|l| l.split_whitespace().next())
            .map(str::to_string);
        got.extend(fds.into_iter().map(|fd| (tag, listed.clone(), fd)));
    }
    let mut sockets = Vec::new();
    for (inherited_as, listed_as, fd) in got {
        let raw = std::os::fd::IntoRawFd::into_raw_fd(fd);
        match crate::frontend::listener::adopt_any(raw) {
            Ok(socket) => sockets.push(Received {
                inherited_as,
                listed_as,
                socket,
            }),
            Err(e) => {
                // SAFETY: still ours: adopt_any failed before taking it.
                unsafe { libc::close(raw) };
                tracing::warn!("-x: a received descriptor is unusable: {e}");
            }
        }
    }
    if sockets.is_empty() {
        return Err(std::io::Error::other(
            "no listening socket received (is 'expose-fd listeners' set, at level admin?)",
        ));
    }
    let numbers = sockets.iter().map(|r| r.socket.raw_fd()).collect();
    Ok(Handover { sockets, numbers })
}

/// The `fd@<n>` at the end of a `<addr> <frontend> [fd@<n>]` line.
fn inherited_tag(line: &[u8]) -> Option<RawFd> {
    let text = std::str::from_utf8(line).ok()?;
    text.split_whitespace()
        .nth(2)?
        .strip_prefix("fd@")?
        .parse()
        .ok()
}

/// One recvmsg: the payload read, descriptors received.
fn recv_fds(stream: &StdUnixStream) -> std::io::Result<(Vec<u8>, Vec<OwnedFd>)> {
    let mut data = [0u8; 512];
    let mut iov = [IoSliceMut::new(&mut data)];
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE((std::mem::size_of::<RawFd>() * 64) as u32) } as usize;
    let mut cbuf = vec![0u8; space];
    let mut fds = Vec::new();
    // SAFETY: msghdr points at live buffers; received control messages are
    // walked with the CMSG macros within `msg_controllen`.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = iov.as_mut_ptr().cast();
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let n = libc::recvmsg(stream.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let len = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let count = len / std::mem::size_of::<RawFd>();
                let p = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(p.add(i))));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        Ok((data[..n as usize].to_vec(), fds))
    }
}
