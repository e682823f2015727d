//! Cross-statement checks once everything is parsed (HAProxy's
//! `check_config_validity()` subset): backend references, modes, timeouts,
//! listeners, and the frontend `maxconn` default.

use crate::config::diag::Diagnostic;
use crate::config::model::{Config, Mode, Proxy, ProxyKind};
use crate::config::parser::type_str;
use crate::config::suggest;

pub(crate) fn check(config: &mut Config, diags: &mut Vec<Diagnostic>) {
    if let Some(global) = config.global.maxconn {
        for p in &mut config.proxies {
            if p.kind.has_frontend() && p.maxconn.is_none() {
                p.maxconn = Some(global);
            }
        }
    }
    for (idx, p) in config.proxies.iter().enumerate() {
        // HAProxy checks nothing of a proxy that will not start.
        if p.disabled {
            continue;
        }
        if p.kind.has_frontend() {
            if let Some((name, _)) = &p.default_backend {
                check_target(config, idx, p, name, "default_backend", diags);
                if !p.servers.is_empty() {
                    diags.push(Diagnostic::warning(
                        Some(p.loc.clone()),
                        format!(
                            "In proxy '{}', the 'default_backend' rule always has precedence over the servers, which will never be used.",
                            p.name
                        ),
                    ));
                }
            }
            // A dynamic name is looked up per request.
            for rule in p.use_backends.iter().filter(|r| r.dynamic.is_none()) {
                check_target(config, idx, p, &rule.backend, "use_backend", diags);
            }
            if p.binds.is_empty() {
                diags.push(Diagnostic::warning(
                    Some(p.loc.clone()),
                    format!(
                        "{} '{}' has no 'bind' directive. Please declare it as a backend if this was intended.",
                        // HAProxy's proxy_type_str: a listen section is a "proxy".
                        match p.kind {
                            crate::config::model::ProxyKind::Frontend => "frontend",
                            _ => "proxy",
                        },
                        p.name
                    ),
                ));
            }
        }
        l6_in_http(p, diags);
        for u in &p.extras.use_servers {
            if !p.servers.iter().any(|s| s.name == u.server) {
                diags.push(Diagnostic::alert(
                    None,
                    format!(
                        "{} '{}' : unable to find server '{}' referenced in a 'use-server' rule.",
                        crate::config::parser::type_str(p.kind),
                        p.name,
                        u.server
                    ),
                ));
            }
        }
        capture_ids(p, diags);
        crate::config::table_check::proxy(config, p, diags);
        missing_timeouts(p, diags);
        auth_acls(config, p, diags);
        tcp_cookies(p, diags);
        portless_checks(p, diags);
    }
    duplicate_binds(config, diags);
    case_adjust_file(config, diags);
    crate::config::mailers::check(config, diags);
    crate::config::fcgi::check(config, diags);
    crate::config::spoe::check(config, diags);
    crate::config::external_check::check(config, diags);
}

/// The last `h1-case-adjust-file`, read once the configuration is parsed,
/// as HAProxy 2.6 reads it (after the `h1-case-adjust` lines, so an entry
/// of both is a duplicate of the file's): two names a line, `#` comments
/// and blank lines skipped, spaces and tabs around them dropped; the
/// first bad line ends the reading.
fn case_adjust_file(config: &mut Config, diags: &mut Vec<Diagnostic>) {
    let Some(path) = config.global.h1_case_adjust_file.clone() else {
        return;
    };
    let name = path.display();
    let Ok(text) = std::fs::read(&path) else {
        diags.push(Diagnostic::alert(
            None,
            format!("h1-headers-case-adjust-file '{name}': failed to open file."),
        ));
        return;
    };
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = line.split(|&b| b == b'\r').next().unwrap_or_default();
        let start = line.iter().position(|b| !blank(b)).unwrap_or(line.len());
        let line = &line[start..];
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let key_end = line.iter().position(blank).unwrap_or(line.len());
        let rest = &line[key_end..];
        let rest = &rest[rest.iter().position(|b| !blank(b)).unwrap_or(rest.len())..];
        let value_end = rest.iter().rposition(|b| !blank(b)).map_or(0, |i| i + 1);
        let from = String::from_utf8_lossy(&line[..key_end]);
        let to = String::from_utf8_lossy(&rest[..value_end]);
        if let Err(e) =
            crate::config::parser::add_case_adjust(&mut config.global.h1_case_adjust, &from, &to)
        {
            diags.push(Diagnostic::alert(
                None,
                format!(
                    "h1-headers-case-adjust-file '{name}' : {e} at line {}.",
                    n + 1
                ),
            ));
            return;
        }
    }
}

/// The `http_auth` and `http_auth_group` ACLs: their userlist must exist,
/// and the groups an `http_auth_group` ACL names must be in it (HAProxy's
/// messages, resolved after parsing as HAProxy does).
fn auth_acls(config: &Config, p: &Proxy, diags: &mut Vec<Diagnostic>) {
    use crate::config::diag::Level;
    for acl in &p.acls {
        let e = &acl.expr;
        let kw = e.fetch_name();
        if !kw.starts_with("http_auth") {
            continue;
        }
        let Some(list) = config
            .global
            .userlists
            .iter()
            .find(|l| l.name == e.first_arg())
        else {
            diags.push(Diagnostic::parsing_tight(
                Level::Alert,
                &acl.loc,
                format!(
                    "unable to find userlist '{}' referenced in arg 1 of ACL keyword '{kw}' in proxy '{}'.",
                    e.first_arg(),
                    p.name
                ),
            ));
            continue;
        };
        if kw != "http_auth_group" {
            continue;
        }
        for g in acl.patterns.texts() {
            if !list.groups.contains(&g) {
                diags.push(Diagnostic::alert(
                    None,
                    format!(
                        "proxy {}: acl {} {kw}(): invalid group '{g}'.",
                        p.name, acl.name
                    ),
                ));
            }
        }
    }
}

/// HAProxy's `proxy_be_by_name()` plus the mode compatibility rule: a TCP
/// frontend may hand over to an HTTP backend, not the reverse.
fn check_target(
    config: &Config,
    idx: usize,
    p: &Proxy,
    name: &str,
    rule: &str,
    diags: &mut Vec<Diagnostic>,
) {
    let target = config
        .proxies
        .iter()
        .enumerate()
        .find(|(_, t)| t.kind.has_backend() && t.name == name);
    let Some((tidx, target)) = target else {
        let sugg = suggest::best_match(
            name,
            config
                .proxies
                .iter()
                .filter(|t| t.kind.has_backend())
                .map(|t| t.name.as_str()),
        );
        let tail = match sugg {
            Some(s) => format!("; did you mean '{s}' maybe ?"),
            None if config
                .proxies
                .iter()
                .any(|t| t.name == name && t.kind == ProxyKind::Frontend) =>
            {
                format!(" ('{name}' is a frontend, not a backend).")
            }
            None => ".".to_string(),
        };
        diags.push(Diagnostic::alert(
            Some(p.loc.clone()),
            format!(
                "Proxy '{}': unable to find required {rule}: '{name}'{tail}",
                p.name
            ),
        ));
        return;
    };
    if tidx == idx {
        diags.push(Diagnostic::alert(
            Some(p.loc.clone()),
            format!("Proxy '{}': loop detected for {rule}: '{name}'.", p.name),
        ));
        return;
    }
    if target.mode != p.mode && !(p.mode == Mode::Tcp && target.mode == Mode::Http) {
        let how = if rule == "default_backend" {
            "as its default backend".to_string()
        } else {
            "in a 'use_backend' rule".to_string()
        };
        diags.push(Diagnostic::alert(
            Some(p.loc.clone()),
            format!(
                "{} {} '{}' ({}) tries to use incompatible {} {} '{}' ({}) {how} (see 'mode').",
                p.mode.as_str(),
                type_str(p.kind),
                p.name,
                p.loc,
                target.mode.as_str(),
                type_str(target.kind),
                target.name,
                target.loc
            ),
        ));
    }
}

/// `http-request|http-response capture ... id <n>` needs slot `n` of the
/// proxy's captures (declared anywhere in it).
/// HAProxy's warning for each rule condition of an HTTP proxy that reads
/// layer 6 fetches (the connection's buffer: it holds no request bytes
/// once HTTP is parsed), in the order HAProxy checks the rule sets.
fn l6_in_http(p: &Proxy, diags: &mut Vec<Diagnostic>) {
    if p.mode != crate::config::model::Mode::Http {
        return;
    }
    let mut conds: Vec<&(u8, crate::loc::Loc)> = p.l6_conds.iter().collect();
    conds.sort_by_key(|(rank, _)| *rank);
    for (_, at) in conds {
        diags.push(Diagnostic::warning(
            None,
            format!(
                "Proxy '{}': L6 sample fetches ignored on HTTP proxies (declared at {at}).",
                p.name
            ),
        ));
    }
}

fn capture_ids(p: &Proxy, diags: &mut Vec<Diagnostic>) {
    use crate::config::model::{HttpRequestAction as Q, HttpResponseAction as R};
    let req = p.http_request.iter().filter_map(|r| match &r.action {
        Q::Capture { slot, .. } => Some((*slot, p.captures.request.len(), "request")),
        _ => None,
    });
    // HAProxy names `http-after-response` captures as `http-response`
    // ones.
    let resp = p
        .http_response
        .iter()
        .chain(&p.http_after_response)
        .filter_map(|r| match &r.action {
            R::Capture { slot, .. } => Some((*slot, p.captures.response.len(), "response")),
            _ => None,
        });
    for (slot, have, side) in req.chain(resp) {
        if slot >= have {
            diags.push(Diagnostic::alert(
                None,
                format!(
                    "Proxy '{}': unable to find capture id '{slot}' referenced by http-{side} capture rule.",
                    p.name
                ),
            ));
        }
    }
}

/// HAProxy warns when a frontend lacks `timeout client`, or a backend with
/// servers lacks `timeout connect` or `timeout server` (TCP backends may
/// use `timeout tunnel` instead of `timeout server`).
fn missing_timeouts(p: &Proxy, diags: &mut Vec<Diagnostic>) {
    let t = &p.timeouts;
    let fe_missing = p.kind.has_frontend() && t.client.is_none();
    let be_missing = p.kind.has_backend()
        && !p.servers.is_empty()
        && (t.connect.is_none()
            || (t.server.is_none() && (p.mode == Mode::Http || t.tunnel.is_none())));
    if fe_missing || be_missing {
        diags.push(Diagnostic::warning(
            Some(p.loc.clone()),
            format!(
                "missing timeouts for {} '{}'.\n   | While not properly invalid, you will certainly encounter various problems\n   | with such a configuration. To fix this, please ensure that all following\n   | timeouts are set to a non-zero value: 'client', 'connect', 'server'.",
                type_str(p.kind),
                p.name
            ),
        ));
    }
}

/// A `cookie` (or a server's `cookie <value>`) in a TCP backend is
/// ignored, with HAProxy 2.6's warnings.
fn tcp_cookies(p: &Proxy, diags: &mut Vec<Diagnostic>) {
    if !p.kind.has_backend() || p.mode == Mode::Http {
        return;
    }
    if p.cookie.is_some() {
        diags.push(Diagnostic::warning(
            Some(p.loc.clone()),
            format!(
                "cookie will be ignored for {} '{}' (needs 'mode http').",
                type_str(p.kind),
                p.name
            ),
        ));
    }
    for s in p.servers.iter().filter(|s| s.cookie.is_some()) {
        diags.push(Diagnostic::warning(
            Some(s.loc.clone()),
            format!(
                "{} '{}' : ignoring cookie for server '{}' as HTTP mode is disabled.",
                type_str(p.kind),
                p.name,
                s.name
            ),
        ));
    }
}

/// Two `bind` lines on one address (sluice-only check: sluice does not use
/// SO_REUSEPORT, so the second listener could never be bound; HAProxy
/// accepts this and shares the port between the listeners).
pub(crate) fn duplicate_binds(config: &Config, diags: &mut Vec<Diagnostic>) {
    let mut seen: Vec<(std::net::SocketAddr, &Proxy, &crate::config::model::Bind)> = Vec::new();
    for p in config.proxies.iter().filter(|p| p.kind.has_frontend()) {
        for b in &p.binds {
            for a in &b.addrs {
                let clash = seen.iter().find(|(o, _, _)| {
                    o.port() == a.port()
                        && o.is_ipv4() == a.is_ipv4()
                        && (o.ip() == a.ip() || o.ip().is_unspecified() || a.ip().is_unspecified())
                });
                if let Some((o, op, ob)) = clash {
                    diags.push(Diagnostic::parsing(
                        crate::config::diag::Level::Alert,
                        &b.loc,
                        format!(
                            "'bind {}' : address {a} overlaps {o} already bound by {} '{}' at {}; sluice listens once per address (a sluice check: HAProxy accepts this and shares the port between both listeners).",
                            b.text,
                            type_str(op.kind),
                            op.name,
                            ob.loc
                        ),
                    ));
                    break;
                }
                seen.push((*a, p, b));
            }
        }
    }
}

/// UNIX `stats socket` paths whose directory cannot hold the socket. At
/// start this fails before anything is bound (HAProxy fails later, at
/// bind, with `cannot bind UNIX socket`). Under `-c` it is only a notice:
/// the check may run on another machine than the one that will serve (a
/// CI box, an image build), and HAProxy's `-c` does not look at the
/// directory at all, so the outcome (exit status, `-dW`) stays the same.
pub(crate) fn stats_socket_dirs(
    config: &Config,
    check: crate::config::DirCheck<'_>,
    diags: &mut Vec<Diagnostic>,
) {
    let checking = crate::config::addr::check_only();
    for s in &config.global.stats_sockets {
        if s.tcp.is_some() || s.fd.is_some() || s.abns {
            continue;
        }
        let dir = s.path.parent().unwrap_or(std::path::Path::new("."));
        if let Err(why) = check(dir) {
            let (level, tail) = if checking {
                (
                    crate::config::diag::Level::Notice,
                    "starting on this machine would fail (-c does not fail for this, as HAProxy's)",
                )
            } else {
                (crate::config::diag::Level::Alert, "cannot start")
            };
            diags.push(Diagnostic::parsing(
                level,
                &s.loc,
                format!(
                    "'stats socket {}' : cannot create the socket: {why}; {tail}.",
                    s.path.display()
                ),
            ));
        }
    }
}

/// A server without a port takes the client's; its checks have no client,
/// so HAProxy requires a `port` for them. (`tcp-check connect port` rules
/// can give it too: such proxies are left to their rules.)
fn portless_checks(p: &Proxy, diags: &mut Vec<Diagnostic>) {
    // A protocol check's rule set connects to the server's port.
    let proto = p
        .tcp_check
        .iter()
        .any(crate::config::check_proto::is_proto_rule);
    if !p.tcp_check.is_empty() && !proto {
        return;
    }
    for s in &p.servers {
        // A UNIX socket server is checked on its socket, port or not.
        if s.unix.is_none() && s.addr.port() == 0 && s.check.is_some_and(|c| c.port.is_none()) {
            diags.push(Diagnostic::alert(
                None,
                format!(
                    "config: {} '{}': server '{}' has neither service port nor check port.",
                    type_str(p.kind),
                    p.name,
                    s.name
                ),
            ));
        }
    }
}
