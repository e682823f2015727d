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
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    /// None for a client on a UNIX socket.
    pub(crate) src: Option<SocketAddr>,
    /// The address the client connected to (`dst`, `dst_port`).
    pub(crate) local: Option<SocketAddr>,
    pub(crate) payload: &'a [u8],
    /// The server's bytes buffered so far, for `tcp-response content`.
    pub(crate) res_payload: Option<&'a [u8]>,
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
            res_payload: self.res_payload,
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
    /// `tcp-response content close`: the server's side closed, what was
    /// read from it still delivered.
    Close,
    /// `use-service lua.<name>`: the service named in
    /// [`Effects::service`] serves the connection.
    Service,
}

/// What the rules asked of the session beside their verdict: its log
/// line's level, the client socket's TOS and mark.
#[derive(Debug, Default, Clone)]
pub(crate) struct Effects {
    pub(crate) level: Option<crate::config::model::LogLevel>,
    pub(crate) marks: crate::sys::sockmarks::SockMarks,
    /// `expect-proxy layer4`: a PROXY header comes first.
    pub(crate) expect_proxy: bool,
    /// The client's and the local address `set-src`, `set-dst` and their
    /// ports made.
    pub(crate) src: Option<SocketAddr>,
    pub(crate) dst: Option<SocketAddr>,
    /// `capture`: the values for the request capture slots, by slot.
    pub(crate) captures: Vec<(usize, Vec<u8>)>,
    /// `use-service lua.<name>`: the service's name.
    pub(crate) service: Option<String>,
    /// The rule the next run goes on from: the one after the last action
    /// the rules waited at (a Lua action or a `send-spoe-group`,
    /// [`run_waiting`]). Kept while a partial run cannot decide, so that
    /// the run on more bytes does not repeat the actions and the wait
    /// before it; back to 0 once the rules decided, for the next rule set
    /// these effects gather.
    pub(crate) resume: usize,
    /// The server's bytes held as a `tcp-response content` Lua action
    /// left them (`txn.res`), for the caller to hold in their place.
    pub(crate) res_rewrite: Option<Vec<u8>>,
}

impl Effects {
    /// Puts the captured values into the log record's slots `caps` (one
    /// per slot of the frontend's).
    pub(crate) fn capture_into(&mut self, caps: &mut [Option<Vec<u8>>]) {
        for (slot, v) in self.captures.drain(..) {
            if let Some(c) = caps.get_mut(slot) {
                *c = Some(v);
            }
        }
    }
}

/// Whether an action of `rules` reads the request's bytes (`capture
/// req.payload(0,4) len 4`, `set-var(txn.x) req.len`): content inspection
/// then waits for them, as for a condition that does.
pub(crate) fn reads_payload(rules: &TcpRules) -> bool {
    use crate::config::model::VarValue;
    rules.iter().any(|(a, _)| {
        let expr = match a {
            TcpAction::Capture { expr, .. } | TcpAction::SetAddr { expr, .. } => expr,
            TcpAction::Var(v) => match &v.value {
                VarValue::Expr(e) => e,
                _ => return false,
            },
            _ => return false,
        };
        crate::sample::fetch::reads_payload(expr.fetch_name())
    })
}

/// Whether `rules` set the local address (`set-dst`, `set-dst-port`): the
/// part they keep is then looked up.
pub(crate) fn moves_dst(rules: &TcpRules) -> bool {
    use crate::config::model::AddrPart;
    rules.iter().any(|(a, _)| {
        matches!(
            a,
            TcpAction::SetAddr {
                part: AddrPart::Dst | AddrPart::DstPort,
                ..
            }
        )
    })
}

/// The address `part` of a `set-src`, `set-src-port`, `set-dst` or
/// `set-dst-port` rule makes of `cur` with the value `v`: an address, or a
/// port of which HAProxy keeps the low 16 bits (None when `v` is neither).
pub(crate) fn moved_addr(
    part: crate::config::model::AddrPart,
    v: crate::sample::value::Sample<'_>,
    cur: Option<SocketAddr>,
) -> Option<SocketAddr> {
    use crate::config::model::AddrPart;
    use crate::sample::value::{Sample, SmpType};
    let unspecified = std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
    if matches!(part, AddrPart::Src | AddrPart::Dst) {
        let ip = match v.cast(SmpType::Addr)? {
            Sample::Ipv4(a) => std::net::IpAddr::V4(a),
            Sample::Ipv6(a) => std::net::IpAddr::V6(a),
            _ => return None,
        };
        return Some(SocketAddr::new(ip, cur.map_or(0, |a| a.port())));
    }
    let port = match v.cast(SmpType::Sint)? {
        Sample::Sint(n) => n as u16,
        _ => return None,
    };
    Some(SocketAddr::new(cur.map_or(unspecified, |a| a.ip()), port))
}

impl Effects {
    /// Sets the marks asked for on the client's socket (a TCP one).
    pub(crate) fn mark(&self, tcp: Option<std::os::fd::BorrowedFd<'_>>) {
        if let Some(tcp) = tcp
            && (self.marks.tos.is_some() || self.marks.mark.is_some())
        {
            self.marks.apply(tcp);
        }
    }
}

/// Runs `rules` in order: the first accept, reject, close or silent-drop
/// that applies decides; the other actions run and go on; none deciding
/// accepts (HAProxy's default). `vars` are the connection's (None where
/// only `proc` ones exist yet: `tcp-request connection`); `level` says
/// whose counters the `track-sc*` actions set; `fx` gathers the log level
/// and socket marks asked for.
pub(crate) fn run(
    rules: &TcpRules,
    acls: &AclSet,
    view: &View<'_>,
    vars: Option<&crate::sample::vars::Vars<'_>>,
    level: Level,
    fx: &mut Effects,
) -> Verdict {
    run_partial(rules, acls, view, vars, level, fx, true).unwrap_or(Verdict::Accept)
}

/// [`run`] on bytes still coming (`last` false): None when a condition
/// cannot be decided yet (HAProxy's missing data), the actions before it
/// having run; the caller runs the rules again from the first when more
/// bytes came, as HAProxy does. With `last` every condition decides.
pub(crate) fn run_partial(
    rules: &TcpRules,
    acls: &AclSet,
    view: &View<'_>,
    vars: Option<&crate::sample::vars::Vars<'_>>,
    level: Level,
    fx: &mut Effects,
    last: bool,
) -> Option<Verdict> {
    run_now(
        rules,
        acls,
        view,
        (vars, level, &Waits::default()),
        fx,
        last,
    )
}

/// The rules run at once, none waiting: Lua actions run to the end where
/// they are, a `send-spoe-group` (which a proxy without SPOE engines
/// cannot hold) is passed over.
fn run_now(
    rules: &TcpRules,
    acls: &AclSet,
    view: &View<'_>,
    how: RunWith<'_, '_>,
    fx: &mut Effects,
    last: bool,
) -> Option<Verdict> {
    match run_from(rules, 0, acls, view, how, fx, last, None) {
        Step::Done(v) => v,
        Step::Wait(_) => Some(Verdict::Accept),
    }
}

/// Where a run of the rules stopped.
enum Step {
    /// What [`run_partial`] gives.
    Done(Option<Verdict>),
    /// At this action, a Lua action or a `send-spoe-group` whose
    /// condition held, for the caller to run it where it may wait.
    Wait(usize),
}

/// What may make a run of the rules wait, and what each wait needs.
#[derive(Clone, Copy, Default)]
pub(crate) struct Waits<'a> {
    /// The log targets of the Lua actions' errors.
    pub(crate) log: Option<&'a crate::snapshot::log_setup::LogSetup>,
    /// Whether the Lua actions may wait (`tcp-request inspect-delay`
    /// set): without, a Lua action that yields fails with HAProxy's
    /// expired timeout.
    pub(crate) lua: bool,
    /// The rules' proxy's SPOE engines, when it has some, for its
    /// `send-spoe-group` rules.
    pub(crate) spoe: Option<SpoeRules<'a>>,
    /// For `tcp-response content` rules: whether the server may still
    /// send (a Lua action's `txn.res:may_recv()`).
    pub(crate) res_open: bool,
}

impl Waits<'_> {
    /// Whether the rules stop at `action` for the caller to run it.
    fn at(&self, action: &TcpAction) -> bool {
        match action {
            TcpAction::Lua(_) | TcpAction::LuaRes(_) => self.lua,
            TcpAction::SendSpoeGroup { .. } => self.spoe.is_some(),
            _ => false,
        }
    }
}

/// What the `send-spoe-group` rules of a rule set need: the engines of
/// the rules' proxy, whether the rules may wait for an agent (HAProxy's
/// rules may yield only while their inspect delay runs), the snapshot
/// that finds the agents' backends, and the context of the groups'
/// messages (the view's, when None).
#[derive(Clone, Copy)]
pub(crate) struct SpoeRules<'a> {
    pub(crate) engines: &'a [std::sync::Arc<crate::snapshot::spoe::SpoeRt>],
    pub(crate) may_wait: bool,
    pub(crate) snap: &'a crate::snapshot::Snapshot,
    pub(crate) cx: Option<&'a crate::sample::Ctx<'a>>,
}

/// [`run_partial`], where some actions may wait on the worker's runtime:
/// a Lua action (`core.sleep`, a socket, an HTTP exchange; it runs as a
/// coroutine) and a `send-spoe-group` (the group's messages go to its
/// engine's agent, whose answer sets its variables; or, where the rules
/// may not wait, the processing is interrupted at once, error 5, as in
/// HAProxy). The rules stop at each such action, the caller runs it, then
/// the rules go on from the next rule (`fx.resume`, which a partial run
/// that cannot decide keeps for the next). A rule set without such an
/// action runs as [`run_partial`] runs it, with no future of its own to
/// hold (the waiting one is boxed).
pub(crate) async fn run_waiting(
    (rules, acls): (&TcpRules, &AclSet),
    view: &View<'_>,
    vars: Option<&crate::sample::vars::Vars<'_>>,
    level: Level,
    fx: &mut Effects,
    waits: Waits<'_>,
    last: bool,
) -> Option<Verdict> {
    if !rules.iter().any(|(a, _)| waits.at(a)) {
        return run_now(rules, acls, view, (vars, level, &waits), fx, last);
    }
    let run = run_paused((rules, acls), view, (vars, level, &waits), fx, last);
    Box::pin(run).await
}

/// [`run_waiting`]'s loop over the actions that wait.
async fn run_paused(
    (rules, acls): (&TcpRules, &AclSet),
    view: &View<'_>,
    how: RunWith<'_, '_>,
    fx: &mut Effects,
    last: bool,
) -> Option<Verdict> {
    let (vars, _, waits) = how;
    loop {
        // The rules after a `set-src` or `set-dst` see its address, those
        // after a wait too, and those after a Lua action the response's
        // bytes as it left them.
        let rewritten = fx.res_rewrite.clone();
        let moved = View {
            src: fx.src.or(view.src),
            local: fx.dst.or(view.local),
            res_payload: rewritten.as_deref().or(view.res_payload),
            ..*view
        };
        let at = match run_from(rules, fx.resume, acls, &moved, how, fx, last, Some(waits)) {
            Step::Done(v) => {
                if v.is_some() {
                    fx.resume = 0;
                }
                return v;
            }
            Step::Wait(at) => at,
        };
        fx.resume = at + 1;
        let ended = match rules.get(at) {
            Some((TcpAction::Lua(a), _)) => lua_waiting(a, &moved, vars, waits.log).await,
            Some((TcpAction::LuaRes(a), _)) => {
                let mut t = res_txn(&moved, vars, waits);
                let ended = lua_ended(host_run(a, crate::lua::TCP_RES, &mut t).await);
                res_edited(t, fx);
                ended
            }
            Some((TcpAction::SendSpoeGroup { engine, group }, _)) => {
                if let (Some(spoe), Some(vars)) = (waits.spoe, vars) {
                    spoe_group(spoe, (engine, group), &moved, vars).await;
                }
                None
            }
            _ => None,
        };
        if ended.is_some() {
            fx.resume = 0;
            return ended;
        }
    }
}

/// The transaction of a `tcp-response content lua.<name>` action: the
/// server's bytes held, the connection's samples, the rules' log targets.
fn res_txn<'a>(
    view: &'a View<'a>,
    vars: Option<&'a crate::sample::vars::Vars<'a>>,
    waits: &Waits<'a>,
) -> crate::lua::txn::ResTxn<'a> {
    crate::lua::txn::ResTxn {
        conn: crate::lua::txn::ConnTxn {
            cx: crate::sample::Ctx {
                vars,
                ..view.sample_ctx()
            },
            log: waits.log,
        },
        res: crate::lua::txn::Chan {
            data: view.res_payload.unwrap_or_default().to_vec(),
            may_recv: waits.res_open,
            edited: false,
        },
    }
}

/// Keeps the response's bytes a Lua action changed for the caller.
fn res_edited(t: crate::lua::txn::ResTxn<'_>, fx: &mut Effects) {
    if t.res.edited {
        fx.res_rewrite = Some(t.res.data);
    }
}

/// Runs the Lua action `a` of rule set `kind` as a coroutine that may
/// wait (Continue when the scripts are gone).
async fn host_run<T: crate::lua::txn::Txn + Send>(
    a: &crate::config::model::LuaAction,
    kind: u8,
    t: &mut T,
) -> crate::lua::ActionEnd {
    let Some(scripts) = crate::sample::script::active() else {
        return crate::lua::ActionEnd::Continue;
    };
    let Some(host) = scripts.as_any().downcast_ref::<crate::lua::Host>() else {
        return crate::lua::ActionEnd::Continue;
    };
    host.run_action(&a.name, &a.args, kind, t).await
}

/// The verdict of a TCP rule's Lua action, None when the rules go on.
fn lua_ended(end: crate::lua::ActionEnd) -> Option<Verdict> {
    use crate::lua::ActionEnd;
    match end {
        ActionEnd::Continue | ActionEnd::Failed => None,
        ActionEnd::Stop | ActionEnd::Done | ActionEnd::Closed => Some(Verdict::Accept),
        ActionEnd::Deny | ActionEnd::Error | ActionEnd::Invalid | ActionEnd::Abort => {
            Some(Verdict::Reject)
        }
    }
}

/// A `tcp-request content lua.<name>` action run as a coroutine that may
/// wait: the verdict it gives, None when the rules go on.
async fn lua_waiting(
    a: &crate::config::model::LuaAction,
    view: &View<'_>,
    vars: Option<&crate::sample::vars::Vars<'_>>,
    log: Option<&crate::snapshot::log_setup::LogSetup>,
) -> Option<Verdict> {
    let scripts = crate::sample::script::active()?;
    let host = scripts.as_any().downcast_ref::<crate::lua::Host>()?;
    let mut t = crate::lua::txn::ConnTxn {
        cx: crate::sample::Ctx {
            vars,
            ..view.sample_ctx()
        },
        log,
    };
    lua_ended(
        host.run_action(&a.name, &a.args, crate::lua::TCP_REQ, &mut t)
            .await,
    )
}

/// A `send-spoe-group <engine> <group>` rule: the group's messages sent
/// to the engine's agent and its answer waited for, or the processing
/// interrupted where the rules may not wait.
async fn spoe_group(
    spoe: SpoeRules<'_>,
    (engine, group): (&str, &str),
    view: &View<'_>,
    vars: &crate::sample::vars::Vars<'_>,
) {
    let Some(e) = spoe.engines.iter().find(|e| e.conf.id == engine) else {
        return;
    };
    let Some(msgs) = e.group(group) else { return };
    if !spoe.may_wait {
        e.interrupted(vars);
        return;
    }
    let own;
    let cx = match spoe.cx {
        Some(cx) => cx,
        None => {
            own = crate::sample::Ctx {
                vars: Some(vars),
                ..view.sample_ctx()
            };
            &own
        }
    };
    let about = crate::upstream::spoe::Sent::Group(group);
    e.notify(msgs, cx, vars, spoe.snap, about).await;
}

/// The rules from `from` on; with `waits`, they stop at an action that
/// waits.
#[allow(clippy::too_many_arguments)]
fn run_from(
    rules: &TcpRules,
    from: usize,
    acls: &AclSet,
    view: &View<'_>,
    how: RunWith<'_, '_>,
    fx: &mut Effects,
    last: bool,
    waits: Option<&Waits<'_>>,
) -> Step {
    let mut paused = None;
    let v = run_body(
        rules,
        from,
        acls,
        *view,
        how,
        fx,
        last,
        (waits, &mut paused),
    );
    match paused {
        Some(at) => Step::Wait(at),
        None => Step::Done(v),
    }
}

/// The variables, the stick counters' level and the waits (the log
/// targets of the Lua actions' errors among them) a run works with.
type RunWith<'v, 'l> = (
    Option<&'v crate::sample::vars::Vars<'v>>,
    Level,
    &'l Waits<'l>,
);

/// [`run_from`]'s loop: an action that `waits` says waits, its condition
/// holding, is noted in `paused`, and the loop ends.
#[allow(clippy::too_many_arguments)]
fn run_body(
    rules: &TcpRules,
    from: usize,
    acls: &AclSet,
    mut view: View<'_>,
    (vars, level, with): RunWith<'_, '_>,
    fx: &mut Effects,
    last: bool,
    (waits, paused): (Option<&Waits<'_>>, &mut Option<usize>),
) -> Option<Verdict> {
    // The rules after a `set-src` or `set-dst` see its address.
    let view = &mut view;
    for (at, (action, cond)) in rules.iter().enumerate().skip(from) {
        // The conditions see the session's variables too.
        let cx = crate::sample::Ctx {
            vars,
            ..view.sample_ctx()
        };
        let holds = match cond {
            None => true,
            Some(c) if last => acls.eval(c, &cx),
            Some(c) => acls.eval_partial(c, &cx)?,
        };
        if !holds {
            continue;
        }
        if waits.is_some_and(|w| w.at(action)) {
            *paused = Some(at);
            return None;
        }
        match action {
            TcpAction::Accept => return Some(Verdict::Accept),
            // Run by the caller of `run_waiting`, when the proxy has
            // SPOE engines (which a rule naming one requires).
            TcpAction::SendSpoeGroup { .. } => {}
            TcpAction::Reject => return Some(Verdict::Reject),
            TcpAction::SilentDrop => return Some(Verdict::SilentDrop),
            TcpAction::Close => return Some(Verdict::Close),
            TcpAction::LuaService(name) => {
                fx.service = Some(name.clone());
                return Some(Verdict::Service);
            }
            TcpAction::Var(rule) => {
                // Stored silently or not at all, as in HAProxy.
                rule.run(&crate::sample::Ctx {
                    vars,
                    ..view.sample_ctx()
                });
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
            TcpAction::Lua(a) => {
                let Some(scripts) = crate::sample::script::active() else {
                    continue;
                };
                let Some(host) = scripts.as_any().downcast_ref::<crate::lua::Host>() else {
                    continue;
                };
                let mut t = crate::lua::txn::ConnTxn {
                    cx: crate::sample::Ctx {
                        vars,
                        ..view.sample_ctx()
                    },
                    log: with.log,
                };
                let end = host.run_action_now(&a.name, &a.args, crate::lua::TCP_REQ, &mut t);
                if let Some(v) = lua_ended(end) {
                    return Some(v);
                }
            }
            // The rules after it see the bytes as it left them only
            // where they wait (`run_paused`).
            TcpAction::LuaRes(a) => {
                let Some(scripts) = crate::sample::script::active() else {
                    continue;
                };
                let Some(host) = scripts.as_any().downcast_ref::<crate::lua::Host>() else {
                    continue;
                };
                let mut t = res_txn(view, vars, with);
                let end = host.run_action_now(&a.name, &a.args, crate::lua::TCP_RES, &mut t);
                res_edited(t, fx);
                if let Some(v) = lua_ended(end) {
                    return Some(v);
                }
            }
            TcpAction::Priority(rule) => rule.run(&crate::sample::Ctx {
                vars,
                ..view.sample_ctx()
            }),
            TcpAction::SetLogLevel(l) => fx.level = Some(*l),
            TcpAction::SetTos(v) => fx.marks.tos = Some(*v),
            TcpAction::SetMark(v) => fx.marks.mark = Some(*v),
            // tokio schedules every task alike.
            TcpAction::SetNice(_) => {}
            TcpAction::ExpectProxy => fx.expect_proxy = true,
            TcpAction::Capture { expr, slot, len } => {
                let cx = crate::sample::Ctx {
                    vars,
                    ..view.sample_ctx()
                };
                let v = expr
                    .eval(&cx)
                    .and_then(|s| s.cast(crate::sample::value::SmpType::Str));
                if let Some(v) = v {
                    let b = v.bytes().unwrap_or(b"");
                    fx.captures.push((*slot, b[..b.len().min(*len)].to_vec()));
                }
            }
            TcpAction::SetAddr { part, expr } => {
                use crate::config::model::AddrPart;
                let cx = crate::sample::Ctx {
                    vars,
                    ..view.sample_ctx()
                };
                let Some(v) = expr.eval(&cx) else { continue };
                let src = matches!(part, AddrPart::Src | AddrPart::SrcPort);
                let cur = if src { view.src } else { view.local };
                let Some(new) = moved_addr(*part, v, cur) else {
                    continue;
                };
                if src {
                    (view.src, fx.src) = (Some(new), Some(new));
                } else {
                    (view.local, fx.dst) = (Some(new), Some(new));
                }
            }
        }
    }
    Some(Verdict::Accept)
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
