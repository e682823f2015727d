//! The commands that add servers to a running backend and remove them
//! (`add server`, `del server`), with HAProxy 2.6's replies. The new list
//! of servers is published as a reload publishes one (see
//! `Runtime::edit_servers`): no request path takes a lock for it.

use crate::config::model::Server;

use super::*;

/// `<backend>/<server>` split at the first `/` after the first character,
/// as HAProxy splits it (`None`: no server name).
fn backend_server(arg: Option<&String>) -> Option<(&str, &str)> {
    let a = arg?;
    let at = a.char_indices().skip(1).find(|&(_, c)| c == '/')?.0;
    let (b, s) = (&a[..at], &a[at + 1..]);
    (!s.is_empty()).then_some((b, s))
}

/// The lowest server id not taken in `servers` (HAProxy's `get_next_id`).
fn next_free_id(servers: &[Server]) -> u32 {
    let used: std::collections::BTreeSet<u32> = servers.iter().filter_map(|s| s.id).collect();
    (1..).find(|n| !used.contains(n)).unwrap_or(u32::MAX)
}

/// `add server <b>/<s> <addr> [options]`: the server starts in
/// maintenance, with its checks disabled, until `enable server` (and
/// `enable health`).
pub(super) fn cmd_add_server(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let Some((bk, sv)) = backend_server(args.first()) else {
        return text("Require 'backend/server'.");
    };
    let Some(be) = ctx.snap.backend(bk) else {
        return text("No such backend.");
    };
    if be.lb.map_based() {
        return text("Backend must use a dynamic load balancing to support dynamic servers.");
    }
    let mut words = vec!["server".to_string(), sv.to_string()];
    words.extend(args[1..].iter().cloned());
    let added = ctx.rt.edit_servers(|cfg, _| {
        let Some(p) = cfg
            .proxies
            .iter_mut()
            .find(|p| p.name == bk && p.kind.has_backend())
        else {
            return Err("No such backend.".to_string());
        };
        let mut server = crate::config::dynamic_server(p, &words)?;
        if p.servers.iter().any(|s| s.name == server.name) {
            return Err("Already exists a server with the same name in backend.\n".to_string());
        }
        if server.id.is_none() {
            server.id = Some(next_free_id(&p.servers));
        }
        p.servers.push(server);
        Ok(())
    });
    match added {
        Ok(_) => {
            start_tasks(ctx.rt);
            tracing::info!("New server registered: {bk}/{sv}.");
            text("New server registered.\n")
        }
        Err(e) => text(e),
    }
}

/// `del server <b>/<s>`: only a server in maintenance, with no session,
/// idle connection or queued request left.
pub(super) fn cmd_del_server(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let Some((bk, sv)) = backend_server(args.first()) else {
        return text("Require 'backend/server'.");
    };
    let Some(be) = ctx.snap.backend(bk) else {
        return text("No such backend.");
    };
    let Some(s) = be.servers.iter().find(|s| s.name == sv) else {
        return text("No such server.");
    };
    let st = &s.state;
    if !st.is_maint() {
        return text("Only servers in maintenance mode can be deleted.");
    }
    if st.inflight() > 0
        || st.pool.load().idle_count() > 0
        || st.waiters.load(std::sync::atomic::Ordering::Relaxed) > 0
    {
        return text("Server still has connections attached to it, cannot remove it.");
    }
    let removed = ctx.rt.edit_servers(|cfg, _| {
        let p = cfg
            .proxies
            .iter_mut()
            .find(|p| p.name == bk && p.kind.has_backend())
            .ok_or("No such backend.")?;
        let before = p.servers.len();
        p.servers.retain(|s| s.name != sv);
        if p.servers.len() == before {
            return Err("No such server.");
        }
        Ok(())
    });
    match removed {
        Ok(_) => {
            be.state.forget_server(sv);
            tracing::info!("Server deleted: {bk}/{sv}.");
            text("Server deleted.")
        }
        Err(e) => text(e),
    }
}

/// The tasks a server added at run time needs (its checks), started as
/// after a reload; nothing outside a tokio runtime (unit tests).
fn start_tasks(rt: &Arc<Runtime>) {
    if tokio::runtime::Handle::try_current().is_ok() {
        crate::upstream::check::spawn_checks(rt);
        crate::upstream::check::spawn_agents(rt);
        crate::upstream::dns::spawn_resolvers(rt);
    }
}
