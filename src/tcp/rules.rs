//! `tcp-request connection|session|content` rules at run time. The
//! fetches on buffered request bytes they (and `use_backend`) may use in
//! `mode tcp`, `req.ssl_hello_type` and `req.ssl_sni`, read a ClientHello
//! parsed by `wire::client_hello`.

use std::net::SocketAddr;

use crate::acl::eval::{AclSet, RequestView};
use crate::config::model::TcpAction;
use crate::snapshot::TcpRules;
use crate::state::table::track::{Level, StickView};

/// What a TCP rule can look at: the client address, the bytes buffered so
/// far, and the stick tables with the counters tracked so far.
pub(crate) struct View<'a> {
    /// None for a client on a UNIX socket.
    pub(crate) src: Option<SocketAddr>,
    /// The address the client connected to (`dst`, `dst_port`).
    pub(crate) local: Option<SocketAddr>,
    pub(crate) payload: &'a [u8],
    /// The client connection's TLS, once its handshake is done.
    pub(crate) tls: Option<&'a crate::tls::TlsFacts>,
    /// The client connection's other facts (`fc_*`, `so_*`).
    pub(crate) client: Option<&'a crate::sample::conn::ClientFacts>,
    pub(crate) stick: Option<&'a StickView<'a>>,
}

impl RequestView for View<'_> {
    fn sample_ctx(&self) -> crate::sample::Ctx<'_> {
        crate::sample::Ctx {
            src: self.src.map(|a| a.ip()),
            src_port: self.src.map(|a| a.port()),
            local: self.local,
            payload: Some(self.payload),
            tls: self.tls,
            client: self.client,
            stick: self.stick.map(|s| s as &dyn crate::sample::stick::Stick),
            ..Default::default()
        }
    }
}

/// How a rule set ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Accept,
    Reject,
    /// `silent-drop`: closed without the client being told.
    SilentDrop,
}

/// Runs `rules` in order: the first accept, reject or silent-drop that
/// applies decides; variable and table actions run and go on; none
/// deciding accepts (HAProxy's default). `vars` are the connection's
/// (None where only `proc` ones exist yet: `tcp-request connection`);
/// `level` says whose counters the `track-sc*` actions set.
pub(crate) fn run(
    rules: &TcpRules,
    acls: &AclSet,
    view: &View<'_>,
    vars: Option<&crate::sample::vars::Vars<'_>>,
    level: Level,
) -> Verdict {
    for (action, cond) in rules {
        if cond.as_ref().is_none_or(|c| acls.eval(c, view)) {
            match action {
                TcpAction::Accept => return Verdict::Accept,
                TcpAction::Reject => return Verdict::Reject,
                TcpAction::SilentDrop => return Verdict::SilentDrop,
                TcpAction::Var(rule) => {
                    // Stored silently or not at all, as in HAProxy.
                    rule.run(&crate::sample::Ctx {
                        vars,
                        ..view.sample_ctx()
                    });
                }
                TcpAction::Lua(a) => {
                    use crate::lua::ActionEnd;
                    let Some(scripts) = crate::sample::script::active() else {
                        continue;
                    };
                    let Some(host) = scripts.as_any().downcast_ref::<crate::lua::Host>() else {
                        continue;
                    };
                    let mut t = crate::lua::txn::FetchTxn(crate::sample::Ctx {
                        vars,
                        ..view.sample_ctx()
                    });
                    match host.run_action_now(&a.name, &a.args, crate::lua::TCP_REQ, &mut t) {
                        ActionEnd::Continue | ActionEnd::Failed => {}
                        ActionEnd::Stop | ActionEnd::Done => return Verdict::Accept,
                        ActionEnd::Deny
                        | ActionEnd::Error
                        | ActionEnd::Invalid
                        | ActionEnd::Abort => return Verdict::Reject,
                    }
                }
                TcpAction::Table(a) => {
                    if let Some(stick) = view.stick {
                        stick.act(
                            a,
                            &crate::sample::Ctx {
                                vars,
                                ..view.sample_ctx()
                            },
                            level,
                        );
                    }
                }
            }
        }
    }
    Verdict::Accept
}

/// Closes `sock` so that the client is not told (HAProxy's silent drop):
/// in TCP repair mode the kernel drops the connection without a packet;
/// where the process may not use it, a TTL of 1 keeps the reset from
/// going far.
pub(crate) fn silent_drop(sock: &impl std::os::fd::AsRawFd) {
    let fd = sock.as_raw_fd();
    let one: libc::c_int = 1;
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: setsockopt on a socket this process owns, with a pointer to
    // an int that lives through the call.
    let repaired = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_TCP,
            libc::TCP_REPAIR,
            (&one as *const libc::c_int).cast(),
            len,
        )
    } == 0;
    if !repaired {
        for (level, opt) in [
            (libc::IPPROTO_IP, libc::IP_TTL),
            (libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS),
        ] {
            // SAFETY: as above (the option of the other family fails
            // harmlessly).
            unsafe {
                libc::setsockopt(fd, level, opt, (&one as *const libc::c_int).cast(), len);
            }
        }
    }
}
