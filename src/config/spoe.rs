//! SPOE engines (`filter spoe [engine <name>] config <file>`): the SPOE
//! configuration file, read when the proxy's `filter` line is, into one
//! engine: its `spoe-agent` (the backend of its agents, timeouts, the
//! variables' prefix, the options), its `spoe-message` sections (the
//! arguments, sample expressions, and the event that sends them) and its
//! `spoe-group` sections (messages sent by `send-spoe-group` rules).

use std::time::Duration;

use crate::acl::{AclDef, Condition};
use crate::loc::Loc;

/// When a message goes to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpoeEvent {
    /// `on-client-session`: as the stream starts (each HTTP request is a
    /// stream of its own).
    ClientSession,
    /// `on-frontend-tcp-request`: before the frontend's `tcp-request
    /// content` rules.
    FrontendTcpRequest,
    /// `on-backend-tcp-request`: before the backend's.
    BackendTcpRequest,
    /// `on-frontend-http-request`: before the frontend's `http-request`
    /// rules.
    FrontendHttpRequest,
    /// `on-backend-http-request`: before the backend's.
    BackendHttpRequest,
    /// `on-server-session`: once the server's connection is made.
    ServerSession,
    /// `on-tcp-response`: before the `tcp-response content` rules.
    TcpResponse,
    /// `on-http-response`: before the `http-response` rules.
    HttpResponse,
}

impl SpoeEvent {
    /// The event's name, as its `event` line and HAProxy's log lines
    /// give it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SpoeEvent::ClientSession => "on-client-session",
            SpoeEvent::FrontendTcpRequest => "on-frontend-tcp-request",
            SpoeEvent::BackendTcpRequest => "on-backend-tcp-request",
            SpoeEvent::FrontendHttpRequest => "on-frontend-http-request",
            SpoeEvent::BackendHttpRequest => "on-backend-http-request",
            SpoeEvent::ServerSession => "on-server-session",
            SpoeEvent::TcpResponse => "on-tcp-response",
            SpoeEvent::HttpResponse => "on-http-response",
        }
    }

    /// The events of the frontend's side, which an engine of a backend
    /// never sends.
    pub(crate) fn frontend_side(self) -> bool {
        matches!(
            self,
            SpoeEvent::ClientSession
                | SpoeEvent::FrontendTcpRequest
                | SpoeEvent::FrontendHttpRequest
        )
    }

    /// The frontend's event sent with this backend's one by an engine of
    /// a `listen` section (HAProxy puts their messages in one frame).
    pub(crate) fn backend_twin(self) -> Option<SpoeEvent> {
        match self {
            SpoeEvent::FrontendTcpRequest => Some(SpoeEvent::BackendTcpRequest),
            SpoeEvent::FrontendHttpRequest => Some(SpoeEvent::BackendHttpRequest),
            _ => None,
        }
    }
}

/// A `spoe-message` section.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SpoeMessage {
    pub(crate) name: String,
    /// Where its `spoe-message` line is.
    pub(crate) at: Loc,
    /// `args [name=]<sample> ...`: each argument's name (empty when
    /// unnamed) and expression.
    pub(crate) args: Vec<(String, crate::sample::Expr)>,
    pub(crate) event: Option<(SpoeEvent, Option<Condition>)>,
    pub(crate) acls: Vec<AclDef>,
}

/// One engine: the agent and what it is sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SpoeEngine {
    /// `engine <name>` of the filter line (the agent's name without one).
    pub(crate) id: String,
    pub(crate) agent: String,
    /// Where the `spoe-agent` section starts (`file:line`).
    pub(crate) agent_at: String,
    pub(crate) backend: String,
    pub(crate) timeout_hello: Duration,
    pub(crate) timeout_idle: Duration,
    pub(crate) timeout_processing: Duration,
    /// `option var-prefix` (the agent's name by default).
    pub(crate) var_prefix: String,
    pub(crate) set_on_error: Option<String>,
    pub(crate) set_process_time: Option<String>,
    pub(crate) set_total_time: Option<String>,
    pub(crate) continue_on_error: bool,
    pub(crate) force_set_var: bool,
    pub(crate) register_var_names: Vec<String>,
    pub(crate) max_frame_size: u32,
    /// `max-waiting-frames`: frames waiting for their ACK on one
    /// connection, when the agent pipelines.
    pub(crate) max_waiting_frames: u32,
    /// `option pipelining`, `option async` (both on by default): the
    /// capabilities announced in the HELLO frame.
    pub(crate) pipelining: bool,
    pub(crate) async_acks: bool,
    /// `option dontlog-normal`.
    pub(crate) dontlog_normal: bool,
    /// The agent's `log` lines: where its processing is logged.
    pub(crate) log: crate::config::log::ProxyLog,
    /// `option send-frag-payload` (on by default): a payload larger than
    /// a frame goes in several to an agent that takes them.
    pub(crate) send_frag: bool,
    /// The messages the agent's `messages` lines name, in order.
    pub(crate) messages: Vec<SpoeMessage>,
    /// The groups its `groups` lines name: name and message indexes.
    pub(crate) groups: Vec<(String, Vec<usize>)>,
}

/// Why a SPOE file gives no engine, in HAProxy's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SpoeError {
    /// Said of the `filter` line.
    Filter(String),
    /// Said of a line of the file, then of the `filter` line as HAProxy
    /// says it ("Error(s) found in configuration file").
    Line(Loc, String),
}

/// What a SPOE file says, or its first error; HAProxy's warnings go to
/// `warnings`.
pub(crate) fn load(
    path: &str,
    engine: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Result<SpoeEngine, SpoeError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
            std::io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
            _ => e.to_string(),
        };
        SpoeError::Filter(format!("Could not open configuration file {path} : {why}"))
    })?;
    parse(path, &text, engine, env, warnings)
}

#[derive(Default)]
struct AgentDraft {
    name: String,
    loc: Option<Loc>,
    backend: Option<String>,
    messages: Vec<String>,
    groups: Vec<String>,
    timeout_hello: Option<Duration>,
    timeout_idle: Option<Duration>,
    timeout_processing: Option<Duration>,
    var_prefix: Option<String>,
    set_on_error: Option<String>,
    set_process_time: Option<String>,
    set_total_time: Option<String>,
    continue_on_error: bool,
    force_set_var: bool,
    register_var_names: Vec<String>,
    max_frame_size: Option<u32>,
    max_waiting_frames: Option<u32>,
    no_pipelining: bool,
    no_async: bool,
    dontlog_normal: bool,
    no_send_frag: bool,
    log: crate::config::log::ProxyLog,
}

enum In {
    Nothing,
    Agent,
    Message(usize),
    Group(usize),
}

fn var_name_ok(n: &str) -> bool {
    !n.is_empty()
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_')
}

pub(crate) fn parse(
    path: &str,
    text: &str,
    engine: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Result<SpoeEngine, SpoeError> {
    let mut agent: Option<AgentDraft> = None;
    let mut messages: Vec<SpoeMessage> = Vec::new();
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut at = In::Nothing;
    // Without an engine name, the file has no scopes; with one, only its
    // scope is read.
    let mut in_scope = engine.is_none();
    for (i, raw) in text.lines().enumerate() {
        let loc = Loc {
            file: path.into(),
            line: u32::try_from(i + 1).unwrap_or(u32::MAX),
        };
        let trimmed = raw.trim();
        if let Some(name) = trimmed.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            in_scope = engine == Some(name.trim());
            at = In::Nothing;
            continue;
        }
        if !in_scope {
            continue;
        }
        let ctx = crate::config::lexer::LexCtx {
            file: path,
            line: loc.line,
            section: "",
            env,
        };
        let words = crate::config::lexer::split_line(raw, &ctx)
            .map_err(|e| SpoeError::Line(loc.clone(), e.message(raw)))?;
        let Some(first) = words.first() else { continue };
        let w = |n: usize| words.get(n).map_or("", String::as_str);
        let err = |m: String| SpoeError::Line(loc.clone(), m);
        match first.as_str() {
            "spoe-agent" => {
                if agent.is_some() {
                    return Err(err("spoe-agent section already defined.".to_string()));
                }
                if w(1).is_empty() {
                    return Err(err("missing name for spoe-agent section.".to_string()));
                }
                agent = Some(AgentDraft {
                    name: w(1).to_string(),
                    loc: Some(loc.clone()),
                    ..Default::default()
                });
                at = In::Agent;
                continue;
            }
            "spoe-message" => {
                if w(1).is_empty() {
                    return Err(err("missing name for spoe-message section.".to_string()));
                }
                messages.push(SpoeMessage {
                    name: w(1).to_string(),
                    at: loc.clone(),
                    args: Vec::new(),
                    event: None,
                    acls: Vec::new(),
                });
                at = In::Message(messages.len() - 1);
                continue;
            }
            "spoe-group" => {
                if w(1).is_empty() {
                    return Err(err("missing name for spoe-group section.".to_string()));
                }
                groups.push((w(1).to_string(), Vec::new()));
                at = In::Group(groups.len() - 1);
                continue;
            }
            _ => {}
        }
        match at {
            In::Nothing => {
                return Err(err(format!("unknown keyword '{first}' out of section.")));
            }
            In::Agent => {
                let a = agent.as_mut().ok_or_else(|| err("no agent".to_string()))?;
                agent_line(a, &words, &loc).map_err(|e| SpoeError::Line(loc.clone(), e))?;
            }
            In::Message(m) => message_line(&mut messages[m], &words, &loc)
                .map_err(|e| SpoeError::Line(loc.clone(), e))?,
            In::Group(g) => match first.as_str() {
                "messages" => groups[g].1.extend(words[1..].iter().cloned()),
                other => {
                    return Err(err(format!(
                        "unknown keyword '{other}' in spoe-group section."
                    )));
                }
            },
        }
    }
    let Some(a) = agent else {
        return Err(SpoeError::Filter(format!(
            "No SPOE agent found in file {path}"
        )));
    };
    let aloc = a
        .loc
        .as_ref()
        .map_or_else(|| path.to_string(), ToString::to_string);
    let Some(backend) = a.backend.clone() else {
        return Err(SpoeError::Filter(format!(
            "No backend declared for SPOE agent '{}' declared at {aloc}",
            a.name
        )));
    };
    if a.timeout_hello.is_none() || a.timeout_idle.is_none() || a.timeout_processing.is_none() {
        warnings.push(format!(
            "Proxy '{{proxy}}': missing timeouts for SPOE agent '{}' declare at {aloc}.",
            a.name
        ));
    }
    // The agent's messages, then its groups' (a group's message not in a
    // `messages` line is still sent by the group).
    let mut used: Vec<SpoeMessage> = Vec::new();
    let find = |name: &str, used: &mut Vec<SpoeMessage>| -> Result<usize, SpoeError> {
        if let Some(i) = used.iter().position(|m| m.name == name) {
            return Ok(i);
        }
        let m = messages.iter().find(|m| m.name == name).ok_or_else(|| {
            SpoeError::Filter(format!(
                "SPOE agent '{}' try to use undefined SPOE message '{name}' at {aloc}",
                a.name
            ))
        })?;
        used.push(m.clone());
        Ok(used.len() - 1)
    };
    for m in &a.messages {
        find(m, &mut used)?;
    }
    let mut out_groups = Vec::new();
    for gname in &a.groups {
        let (_, names) = groups.iter().find(|(n, _)| n == gname).ok_or_else(|| {
            SpoeError::Filter(format!(
                "SPOE agent '{}' try to use undefined SPOE group '{gname}' at {aloc}",
                a.name
            ))
        })?;
        let mut idx = Vec::new();
        for n in names {
            idx.push(find(n, &mut used)?);
        }
        out_groups.push((gname.clone(), idx));
    }
    // The names registered are the engine's `proc` variables: they exist
    // from the start (empty), as those the configuration names do.
    let var_prefix = a.var_prefix.clone().unwrap_or_else(|| a.name.clone());
    for n in &a.register_var_names {
        crate::sample::vars::declare_proc(&format!("{var_prefix}.{n}"));
    }
    Ok(SpoeEngine {
        id: engine.unwrap_or(&a.name).to_string(),
        var_prefix: a.var_prefix.clone().unwrap_or_else(|| a.name.clone()),
        agent_at: aloc.clone(),
        agent: a.name,
        backend,
        timeout_hello: a.timeout_hello.unwrap_or(Duration::from_secs(3)),
        timeout_idle: a.timeout_idle.unwrap_or(Duration::from_secs(30)),
        timeout_processing: a.timeout_processing.unwrap_or(Duration::from_secs(15)),
        set_on_error: a.set_on_error,
        set_process_time: a.set_process_time,
        set_total_time: a.set_total_time,
        continue_on_error: a.continue_on_error,
        force_set_var: a.force_set_var,
        register_var_names: a.register_var_names,
        max_frame_size: a.max_frame_size.unwrap_or(16_380),
        max_waiting_frames: a.max_waiting_frames.unwrap_or(20),
        pipelining: !a.no_pipelining,
        async_acks: !a.no_async,
        dontlog_normal: a.dontlog_normal,
        send_frag: !a.no_send_frag,
        log: a.log,
        messages: used,
        groups: out_groups,
    })
}

fn agent_line(a: &mut AgentDraft, words: &[String], loc: &Loc) -> Result<(), String> {
    let w = |n: usize| words.get(n).map_or("", String::as_str);
    let err = |m: String| m;
    let _ = loc;
    let time = |s: &str| {
        crate::config::units::parse_time(s)
            .map_err(|_| err(format!("'timeout {}' : invalid time '{s}'.", w(1))))
    };
    match w(0) {
        "use-backend" => {
            if w(1).is_empty() {
                return Err(err("'use-backend' expects a backend name.".to_string()));
            }
            a.backend = Some(w(1).to_string());
        }
        "messages" => a.messages.extend(words[1..].iter().cloned()),
        "groups" => a.groups.extend(words[1..].iter().cloned()),
        "timeout" => {
            let t = time(w(2))?;
            match w(1) {
                "hello" => a.timeout_hello = Some(t),
                "idle" => a.timeout_idle = Some(t),
                "processing" => a.timeout_processing = Some(t),
                other => {
                    return Err(err(format!(
                        "'timeout' supports 'hello', 'idle' or 'processing' (got {other})."
                    )));
                }
            }
        }
        "max-frame-size" => {
            let n: u32 = w(1)
                .parse()
                .ok()
                .filter(|n| (256..=65_532).contains(n))
                .ok_or_else(|| {
                    err(format!(
                        "'{}' expects a positive integer argument between 256 and 65532.",
                        w(0)
                    ))
                })?;
            a.max_frame_size = Some(n);
        }
        "register-var-names" => {
            for n in &words[1..] {
                if !var_name_ok(n) {
                    return Err(err(format!("'{}': invalid variable name '{n}'.", w(0))));
                }
                a.register_var_names.push(n.clone());
            }
        }
        "max-waiting-frames" => {
            let n: u32 =
                w(1).parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    err(format!("'{}' expects a positive integer argument.", w(0)))
                })?;
            a.max_waiting_frames = Some(n);
        }
        "log" => match crate::config::log::parse_log(words)? {
            crate::config::log::LogLine::Global => a.log.global = true,
            crate::config::log::LogLine::Target(t) => a.log.targets.push(t),
        },
        // Rates: the agent's connections are opened as requests need
        // them.
        "maxconnrate" | "maxerrrate" => {}
        "option" | "no" => {
            let neg = w(0) == "no";
            let at = usize::from(neg);
            // `no log`: the loggers so far are forgotten.
            if neg && w(1) == "log" {
                a.log = Default::default();
                return Ok(());
            }
            if w(at) != "option" {
                return Err(err(format!(
                    "unknown keyword '{}' in spoe-agent section.",
                    w(0)
                )));
            }
            let name = w(at + 1);
            let var = |n: &str| -> Result<String, String> {
                if var_name_ok(n) {
                    Ok(n.to_string())
                } else {
                    Err(err(format!(
                        "'option {name}' expects a valid variable name."
                    )))
                }
            };
            match name {
                "var-prefix" => a.var_prefix = Some(var(w(at + 2))?),
                "set-on-error" => a.set_on_error = Some(var(w(at + 2))?),
                "set-process-time" => a.set_process_time = Some(var(w(at + 2))?),
                "set-total-time" => a.set_total_time = Some(var(w(at + 2))?),
                "continue-on-error" => a.continue_on_error = !neg,
                "force-set-var" => a.force_set_var = !neg,
                "async" => a.no_async = neg,
                "pipelining" => a.no_pipelining = neg,
                "dontlog-normal" => a.dontlog_normal = !neg,
                "send-frag-payload" => a.no_send_frag = neg,
                other => {
                    return Err(err(format!("option '{other}' is not supported.")));
                }
            }
        }
        other => {
            return Err(err(format!(
                "unknown keyword '{other}' in spoe-agent section."
            )));
        }
    }
    Ok(())
}

fn message_line(m: &mut SpoeMessage, words: &[String], loc: &Loc) -> Result<(), String> {
    let w = |n: usize| words.get(n).map_or("", String::as_str);
    let err = |msg: String| msg;
    match w(0) {
        "args" => {
            for a in &words[1..] {
                let (name, text) = match a.split_once('=') {
                    Some((n, t)) if !n.contains('(') => (n.to_string(), t),
                    _ => (String::new(), a.as_str()),
                };
                let (expr, _) =
                    crate::sample::Expr::parse(text).map_err(|e| err(format!("'args': {e}.")))?;
                m.args.push((name, expr));
            }
        }
        "acl" => {
            let def =
                crate::acl::parse::parse_acl(w(1), &words[2..], loc.clone()).map_err(|e| {
                    err(format!(
                        "error detected while parsing ACL '{}' : {e}.",
                        w(1)
                    ))
                })?;
            m.acls.push(def);
        }
        "event" => {
            let ev = match w(1) {
                "on-client-session" => SpoeEvent::ClientSession,
                "on-frontend-tcp-request" => SpoeEvent::FrontendTcpRequest,
                "on-backend-tcp-request" => SpoeEvent::BackendTcpRequest,
                "on-frontend-http-request" => SpoeEvent::FrontendHttpRequest,
                "on-backend-http-request" => SpoeEvent::BackendHttpRequest,
                "on-server-session" => SpoeEvent::ServerSession,
                "on-tcp-response" => SpoeEvent::TcpResponse,
                "on-http-response" => SpoeEvent::HttpResponse,
                other => return Err(err(format!("unknown event '{other}'."))),
            };
            let cond = if words.len() > 2 {
                let (c, anon) = crate::acl::parse::parse_condition_at(&words[2..], loc, &|_| true)
                    .map_err(&err)?;
                m.acls.extend(anon);
                for t in c.groups.iter().flatten() {
                    if m.acls.iter().any(|a| a.name == t.name) {
                        continue;
                    }
                    match crate::acl::parse::predefined(&t.name, loc.clone()) {
                        Some(d) => m.acls.push(d),
                        None => return Err(err(format!("no such ACL : '{}'", t.name))),
                    }
                }
                Some(c)
            } else {
                None
            };
            m.event = Some((ev, cond));
        }
        other => {
            return Err(err(format!(
                "unknown keyword '{other}' in spoe-message section."
            )));
        }
    }
    Ok(())
}

/// The checks once every section is read, with HAProxy's messages: each
/// engine's agents are in a backend that exists, and each
/// `send-spoe-group` names an engine of its proxy and a group of it.
pub(crate) fn check(
    config: &crate::config::model::Config,
    diags: &mut Vec<crate::config::diag::Diagnostic>,
) {
    use crate::config::diag::Diagnostic;
    use crate::config::model::{HttpRequestAction, HttpResponseAction};
    for p in &config.proxies {
        for e in &p.extras.spoe {
            let known = config
                .proxies
                .iter()
                .any(|b| b.kind.has_backend() && b.name == e.backend);
            if !known {
                diags.push(Diagnostic::alert(
                    None,
                    format!(
                        "Proxy {} : unknown backend '{}' used by SPOE agent '{}' declared at {}.",
                        p.name, e.backend, e.agent, e.agent_at
                    ),
                ));
            }
        }
        let http = p.http_request.iter().filter_map(|r| match &r.action {
            HttpRequestAction::SendSpoeGroup { engine, group } => Some((engine, group)),
            _ => None,
        });
        let http_res = p.http_response.iter().filter_map(|r| match &r.action {
            HttpResponseAction::SendSpoeGroup { engine, group } => Some((engine, group)),
            _ => None,
        });
        let tcp = p
            .tcp_content
            .iter()
            .chain(&p.tcp_response)
            .filter_map(|r| match &r.action {
                crate::config::model::TcpAction::SendSpoeGroup { engine, group } => {
                    Some((engine, group))
                }
                _ => None,
            });
        for (engine, group) in http.chain(http_res).chain(tcp) {
            match p.extras.spoe.iter().find(|e| e.id == *engine) {
                None => diags.push(Diagnostic::alert(
                    None,
                    format!(
                        "Proxy '{}': unable to find SPOE engine '{engine}' used by the send-spoe-group '{group}'.",
                        p.name
                    ),
                )),
                Some(e) if !e.groups.iter().any(|(g, _)| g == group) => {
                    diags.push(Diagnostic::alert(
                        None,
                        format!(
                            "Proxy '{}': unable to find SPOE group '{group}' into SPOE engine '{engine}' configuration.",
                            p.name
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
    }
}
