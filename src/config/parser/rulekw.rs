//! Rules: `acl`, conditions, `use_backend`, `http-request`, `redirect`,
//! `capture`, `http-response`, `errorfile` and the reply arguments of
//! `return`/`deny`, and the argument parsers of their actions.

use super::*;
use crate::config::model::{AddrPart, UriPart};
use crate::sample::Stage;

impl State<'_> {
    /// Splits the `if|unless <cond>` off a rule line: where it starts (the
    /// line's end when there is none) and the parsed condition. A bad
    /// condition is reported here (None).
    pub(super) fn rule_condition(
        &mut self,
        loc: &Loc,
        words: &[String],
        rule: &str,
        action: &str,
    ) -> Option<(usize, Option<Condition>)> {
        let cond_at = cond_start(words);
        if cond_at == words.len() {
            return Some((cond_at, None));
        }
        match self.condition(loc, &words[cond_at..]) {
            Ok(c) => {
                let stage = match rule {
                    "http-request" => Some(self.http_stage(false)),
                    "http-response" | "http-after-response" => Some(self.http_stage(true)),
                    _ => None,
                };
                if let Some(stage) = stage
                    && matches!(self.section, Section::Proxy(_))
                {
                    self.warn_conflicts(loc, &c, stage, &words[cond_at..], None);
                }
                Some((cond_at, Some(c)))
            }
            Err(e) => {
                let m = format!(
                    "error detected while parsing an '{rule} {action}' condition : {e}{}",
                    stop(&e)
                );
                self.alert(loc, m);
                None
            }
        }
    }

    /// Where the current section's `http-request` (or, `response`,
    /// `http-response`) rules run: at the frontend's place, the backend's,
    /// or both for a `listen` or `defaults` section, as HAProxy checks
    /// their sample fetches.
    pub(super) fn http_stage(&self, response: bool) -> Stage {
        let (fe, be) = self
            .proxy_kind()
            .map_or((true, true), |k| (k.has_frontend(), k.has_backend()));
        if response {
            Stage::http_response(fe, be)
        } else {
            Stage::http_request(fe, be)
        }
    }

    /// HAProxy's "error detected in <type> '<name>' while parsing '<rule>'
    /// rule : <msg>." of a rule's action.
    /// `cache-use <name>`, `cache-store <name>`: the cache's name; the
    /// proxy gets the cache's filter (implicitly declared).
    fn cache_action_args(&mut self, loc: &Loc, a: &[String]) -> Result<String, String> {
        let name = a.first().map_or("", String::as_str);
        if name.is_empty() || name == "if" || name == "unless" {
            return Err("expects a cache name".into());
        }
        if let Some(extra) = a.get(1) {
            return Err(format!("unexpected argument '{extra}'"));
        }
        self.cache_filter_for(loc, name);
        Ok(name.to_string())
    }

    fn rule_error(&self, rule: &str, action: &str, msg: String) -> String {
        let (t, pname) = match self.section {
            Section::Proxy(i) => self
                .proxies
                .get(i)
                // HAProxy 2.6 names a listen section "proxy" here.
                .map_or(("proxy", ""), |p| match p.kind {
                    ProxyKind::Listen => ("proxy", p.name.as_str()),
                    k => (type_str(k), p.name.as_str()),
                }),
            _ => ("defaults", ""),
        };
        format!("error detected in {t} '{pname}' while parsing '{rule} {action}' rule : {msg}.")
    }

    pub(super) fn kw_acl(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "acl", false, true, true) {
            return;
        }
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            return self.alert(loc, "'acl' expects an ACL name.");
        };
        if let Err(c) = check_acl_name(name) {
            return self.alert(
                loc,
                format!("character '{c}' is not permitted in acl name '{name}'."),
            );
        }
        crate::sample::stick::context(crate::sample::stick::ArgCtx::Acl);
        match parse_acl(name, &words[2..], loc.clone()) {
            Ok(def) => {
                if def.never_matches {
                    self.never_matches(loc, &words[2]);
                }
                self.px().acls.push(def)
            }
            Err(e) => self.alert(
                loc,
                format!("error detected while parsing ACL '{name}' : {e}."),
            ),
        }
    }

    /// Notes a condition of a proxy's rule that reads layer 6 fetches, for
    /// HAProxy's check-time warning on HTTP proxies (`validate.rs`); the
    /// rank orders the rule sets as HAProxy checks them.
    fn note_l6(&mut self, loc: &Loc, cond: &Condition) {
        use crate::sample::stage::Src;
        if !matches!(self.section, Section::Proxy(_)) {
            return;
        }
        let first = |i: usize| self.raw_words.get(i).map_or("", String::as_str);
        let rank = match (first(0), first(1)) {
            ("use_backend", _) => 0,
            ("use-server", _) => 1,
            ("stick", _) => 2,
            ("tcp-request", "connection") => 3,
            ("tcp-request", "session") => 4,
            ("tcp-request", "content") => 5,
            ("tcp-response", _) => 6,
            ("http-request" | "redirect", _) => 7,
            ("http-response", _) => 8,
            ("http-after-response", _) => 9,
            _ => return,
        };
        let acls = &self.px().acls;
        let l6 = cond.groups.iter().flatten().any(|t| {
            acls.iter().filter(|a| a.name == t.name).any(|a| {
                let u = a.expr.fetch().uses;
                u.has(Src::L6req) || u.has(Src::L6res)
            })
        });
        if l6 {
            self.px().l6_conds.push((rank, loc.clone()));
        }
    }

    /// HAProxy's warning for an ACL that can never match: no location in
    /// it, as HAProxy prints it.
    fn never_matches(&mut self, loc: &Loc, criterion: &str) {
        self.diags.push(crate::config::diag::Diagnostic::warning(
            Some(loc.clone()),
            crate::acl::parse::never_matches_warning(criterion),
        ));
    }

    /// HAProxy's warning for a condition with an ACL whose keywords cannot
    /// work where the rule runs (`stage`): the first ACL that can never
    /// match, else the first with such a keyword among others. A `tcp-*`
    /// rule set's (`in_rule`) is named in them, as HAProxy names it.
    pub(super) fn warn_conflicts(
        &mut self,
        loc: &Loc,
        cond: &Condition,
        stage: Stage,
        words: &[String],
        in_rule: Option<&str>,
    ) {
        let place = stage.name();
        let within = in_rule.map_or(String::new(), |r| format!(" in '{r}'"));
        let acls = &self.px().acls;
        // An anonymous ACL's keyword as written (`url_param`, not the
        // `urlp` it stands for): the word after its `{`, in order.
        let mut written = words
            .windows(2)
            .filter(|w| w[0].trim_start_matches('!') == "{")
            .map(|w| w[1].split('(').next().unwrap_or(""));
        let anon_kw: Vec<(&str, &str)> = cond
            .groups
            .iter()
            .flatten()
            .filter(|t| t.name.starts_with('{'))
            .filter_map(|t| Some((t.name.as_str(), written.next()?)))
            .collect();
        let kw_of = |name: &str, fetch: &'static str| -> String {
            anon_kw
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(fetch, |(_, k)| k)
                .to_string()
        };
        let conflicts = |name: &str| {
            let lines = acls.iter().filter(|a| a.name == name);
            let bad = lines
                .clone()
                .filter(|a| !a.expr.fetch().uses.usable_in(stage));
            (
                lines.count(),
                bad.clone().count(),
                bad.map(|a| a.expr.fetch().name).next(),
            )
        };
        let terms = || cond.groups.iter().flatten().map(|t| t.name.as_str());
        let never = terms().find_map(|n| match conflicts(n) {
            (all, bad, Some(kw)) if all == bad => Some((n, kw)),
            _ => None,
        });
        let msg = match never {
            Some((n, kw)) if n.starts_with('{') => format!(
                "anonymous acl will never match{within} because it uses keyword '{}' which is incompatible with '{place}'",
                kw_of(n, kw)
            ),
            Some((n, _)) => format!(
                "acl '{n}' will never match{within} because it only involves keywords that are incompatible with '{place}'"
            ),
            None => match terms().find_map(|n| conflicts(n).2.map(|kw| (n, kw))) {
                Some((n, kw)) if n.starts_with('{') => format!(
                    "anonymous acl involves keyword '{}' which is incompatible with '{place}'",
                    kw_of(n, kw)
                ),
                // HAProxy's `tcp-*` rules say "keyword".
                Some((n, kw)) if in_rule.is_some() => format!(
                    "acl '{n}' involves keyword '{kw}' which is incompatible with '{place}'"
                ),
                Some((n, kw)) => format!(
                    "acl '{n}' involves keywords '{kw}' which is incompatible with '{place}'"
                ),
                None => return,
            },
        };
        self.diags.push(crate::config::diag::Diagnostic::parsing(
            Level::Warning,
            loc,
            msg,
        ));
    }

    /// Parse `if|unless ...` and check that every ACL it names exists
    /// already (HAProxy resolves them at parse time); anonymous and used
    /// predefined ACLs are added to the proxy.
    pub(super) fn condition(&mut self, loc: &Loc, words: &[String]) -> Result<Condition, String> {
        let acls = &self.px().acls;
        let have: Vec<&str> = (PREDEFINED.iter().copied())
            .filter(|p| acls.iter().any(|a| a.name == *p))
            .collect();
        let (cond, anon) = crate::sample::stick::within(crate::sample::stick::ArgCtx::Acl, || {
            parse_condition_at(words, loc, &|n| !have.contains(&n))
        })?;
        // Each anonymous ACL's criterion is the word after its `{`.
        let criteria = words
            .windows(2)
            .filter(|w| w[0].trim_start_matches('!') == "{");
        for (def, w) in anon
            .iter()
            .filter(|a| a.name.starts_with('{'))
            .zip(criteria)
        {
            if def.never_matches {
                self.never_matches(loc, &w[1]);
            }
        }
        let mut extra: Vec<AclDef> = anon;
        for term in cond.groups.iter().flatten() {
            let known = self.px().acls.iter().any(|a| a.name == term.name)
                || extra.iter().any(|a| a.name == term.name);
            if known {
                continue;
            }
            if PREDEFINED.contains(&term.name.as_str()) {
                if let Some(def) = predefined(&term.name, loc.clone()) {
                    extra.push(def);
                }
                continue;
            }
            let names: Vec<String> = self
                .px()
                .acls
                .iter()
                .filter(|a| !a.name.starts_with('{'))
                .map(|a| a.name.clone())
                .collect();
            let sugg = suggest::suffix(
                &term.name,
                names
                    .iter()
                    .map(String::as_str)
                    .chain(PREDEFINED.iter().copied()),
            );
            self.missing_acl = Some(term.name.clone());
            return Err(format!("no such ACL : '{}'{sugg}", term.name));
        }
        self.px().acls.extend(extra);
        self.note_l6(loc, &cond);
        Ok(cond)
    }

    pub(super) fn kw_use_backend(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "use_backend", false, true, false) {
            return;
        }
        crate::sample::stick::context(crate::sample::stick::ArgCtx::UseBackend);
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            return self.alert(loc, "'use_backend' expects a backend name.");
        };
        // HAProxy reads every name as a log-format, when the configuration
        // is checked: one with anything but plain text in it (a `%`) is
        // resolved per request.
        let dynamic = if name.contains('%') {
            // HAProxy reads it once the configuration is parsed.
            match crate::sample::patref::late(|| {
                parse_logfmt(name, Stage::http_request(true, false))
            }) {
                Ok(f) => Some(f),
                Err(e) => {
                    self.diags.push(Diagnostic::new(
                        Level::Alert,
                        Some(loc.clone()),
                        format!(
                            "Parsing [{loc}]: failed to parse use_backend rule '{name}' : {e}{}",
                            if e.ends_with('.') { "" } else { "." }
                        ),
                    ));
                    return;
                }
            }
        } else {
            None
        };
        let cond = if words.len() > 2 {
            match self.condition(loc, &words[2..]) {
                Ok(c) => c,
                Err(e) => {
                    return self.alert(
                        loc,
                        format!(
                            "error detected while parsing switching rule : {e}{}",
                            stop(&e)
                        ),
                    );
                }
            }
        } else {
            // Unconditional: "unless <nothing>" is always true.
            Condition {
                unless: true,
                groups: Vec::new(),
            }
        };
        let rule = UseBackend {
            backend: name.clone(),
            dynamic,
            cond,
            loc: loc.clone(),
        };
        self.px().use_backends.push(rule);
    }

    pub(super) fn kw_http_request(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "http-request", false, true, true) {
            return;
        }
        crate::sample::stick::context(crate::sample::stick::ArgCtx::HttpRequest);
        let action = words.get(1).map_or("", String::as_str);
        let Some(entry) = HTTP_REQUEST.iter().find(|e| e.name == var_key(action)) else {
            if kw::HTTP_REQUEST_UNSUPPORTED.contains(&action)
                || kw::haproxy_has(kw::Kind::HttpRequest, action)
            {
                return self.unsupported(loc, &format!("http-request {action}"));
            }
            let sugg = suggest::suffix(
                action,
                kw::HTTP_REQUEST_SUPPORTED
                    .iter()
                    .chain(kw::HTTP_REQUEST_UNSUPPORTED)
                    .copied(),
            );
            return self.alert(
                loc,
                format!("'http-request' expects 'return', 'deny' or another HAProxy action, but got '{action}'{sugg}"),
            );
        };
        if action == "normalize-uri" && !self.global.expose_experimental {
            return self.alert(
                loc,
                "'normalize-uri' action is experimental, must be allowed via a global 'expose-experimental-directives'",
            );
        }
        // The action first, then its condition, as HAProxy reads them (the
        // pattern files they read are numbered in that order).
        let cond_at = cond_start(words);
        let args = &words[action_args(action).min(cond_at)..cond_at];
        let parsed = (entry.run)(self, loc, args);
        let cond = match &parsed {
            Ok(_) => match self.rule_condition(loc, words, "http-request", action) {
                Some((_, cond)) => cond,
                None => return,
            },
            Err(_) => None,
        };
        self.warn_misplaced(loc, "http-request", legacykw::ReqStage::HttpRequest);
        let parsed = match parsed {
            Ok(HttpRequestAction::NormalizeUri(n)) if cond.is_some() => Ok(
                HttpRequestAction::NormalizeUri(self.normalizer_with_condition(loc, n)),
            ),
            p => p,
        };
        match parsed {
            Ok(a) => self
                .px()
                .http_request
                .push(HttpRequestRule { action: a, cond }),
            Err(e) => match e.strip_prefix(WHOLE_MESSAGE) {
                Some(m) => self.tight(Level::Alert, loc, m),
                None => {
                    let m = self.rule_error("http-request", action, e);
                    self.alert(loc, m)
                }
            },
        }
    }

    /// `redirect location|prefix|scheme <to> [code <n>] [drop-query]
    /// [append-slash] [if|unless <cond>]`: `<to>` is taken literally (the
    /// `http-request redirect` form takes a log-format).
    pub(super) fn kw_redirect(&mut self, loc: &Loc, words: &[String]) {
        crate::sample::stick::context(crate::sample::stick::ArgCtx::Redirect);
        if !self.cap(loc, "redirect", false, true, true) {
            return;
        }
        let Some((cond_at, cond)) = self.rule_condition(loc, words, "redirect", "") else {
            return;
        };
        self.warn_misplaced(loc, "redirect", legacykw::ReqStage::Redirect);
        match redirect_args(&words[1..cond_at], None) {
            Ok(action) => self.px().redirects.push(HttpRequestRule { action, cond }),
            Err(e) => self.alert(
                loc,
                format!("error detected while parsing redirect rule : {e}."),
            ),
        }
    }

    /// `capture request|response header <name> len <n>`; `capture cookie`
    /// is not supported yet.
    pub(super) fn kw_capture(&mut self, loc: &Loc, words: &[String]) {
        crate::sample::stick::context(crate::sample::stick::ArgCtx::Capture);
        let what = words.get(1).map_or("", String::as_str);
        if what == "cookie" {
            return self.unsupported(loc, "capture cookie");
        }
        if !matches!(what, "request" | "response")
            || words.get(2).map(String::as_str) != Some("header")
        {
            return self.alert(
                loc,
                "'capture' expects 'cookie', 'request header' or 'response header'.",
            );
        }
        if !self.cap(loc, "capture", false, true, false) {
            return;
        }
        let name = words.get(3).filter(|n| !n.is_empty());
        let len = match (words.get(4).map(String::as_str), words.get(5)) {
            (Some("len"), Some(n)) => parse_u32(n).filter(|&n| n > 0),
            _ => None,
        };
        let (Some(name), Some(len)) = (name, len) else {
            return self.alert(
                loc,
                format!("'capture {what} header' expects <header name> 'len' <len>."),
            );
        };
        if words.len() > 6 {
            return self.alert(
                loc,
                format!("'capture {what} header' does not expect any other argument."),
            );
        }
        let entry = (name.to_ascii_lowercase(), len as usize);
        let c = &mut self.px().captures;
        if what == "request" {
            c.request.push(entry);
        } else {
            c.response.push(entry);
        }
    }

    /// `http-request capture <expr> len <n> | id <n>` (`request`) and
    /// `http-response capture <expr> id <n>`: a slot of its own for `len`
    /// (request side, frontends only), a declared one for `id`; HAProxy
    /// 2.6's messages.
    pub(super) fn capture_rule(
        &mut self,
        args: &[String],
        request: bool,
    ) -> Result<(crate::sample::Expr, usize), String> {
        let text = args.first().map_or("", String::as_str);
        let is_fe = self.proxy_kind().is_some_and(|k| k.has_frontend());
        if request && !is_fe {
            let name = self.px().name.clone();
            return Err(format!("proxy '{name}' has no frontend capability"));
        }
        let expr = match crate::sample::Expr::parse(text) {
            Ok((e, used)) if used == text.len() => e,
            Ok((_, used)) => {
                return Err(format!(
                    "failed to parse sample expression <{text}> : unexpected '{}'",
                    &text[used..]
                ));
            }
            Err(crate::sample::ExprError::Invalid(m)) => {
                return Err(format!("failed to parse sample expression <{text}> : {m}"));
            }
            Err(e) => return Err(e.to_string()),
        };
        let stage = self.http_stage(!request);
        if !expr.fetch().uses.usable_in(stage) {
            return Err(format!(
                "fetch method '{text}' extracts information from '{}', none of which is available here",
                expr.fetch().uses.names()
            ));
        }
        let caps = &mut self.px().captures;
        let slots = if request {
            &mut caps.request
        } else {
            &mut caps.response
        };
        let kw = args.get(1).map_or("", String::as_str);
        let v = args.get(2).map(String::as_str);
        let slot = match kw {
            "len" if request => {
                let v = v.ok_or("missing length value")?;
                let len = v.parse::<i64>().unwrap_or(0);
                if len <= 0 {
                    return Err("length must be > 0".into());
                }
                slots.push((String::new(), len as usize));
                slots.len() - 1
            }
            // The slot may be declared later: `validate` checks it.
            "id" => {
                let v = v.ok_or("missing id value")?;
                v.parse().map_err(|_| format!("cannot parse id '{v}'"))?
            }
            "" if request => {
                return Err("expects <expression> [ 'len' <length> | id <idx> ]".into());
            }
            "" => return Err("expects <expression> id <idx>".into()),
            other if request => return Err(format!("expects 'len' or 'id', found '{other}'")),
            other => return Err(format!("expects 'id', found '{other}'")),
        };
        if let Some(extra) = args.get(3) {
            return Err(format!(
                "unexpected keyword '{extra}' (expects 'if' or 'unless')"
            ));
        }
        Ok((expr, slot))
    }

    /// `declare capture request|response len <n>`: a capture slot that
    /// `capture` rules fill by id.
    pub(super) fn kw_declare(&mut self, loc: &Loc, words: &[String]) {
        if !self.proxy_kind().is_some_and(|k| k.has_frontend()) {
            return self.alert(
                loc,
                "'declare' only available in frontend or listen section",
            );
        }
        let what = words.get(1).map_or("", String::as_str);
        if what != "capture" {
            return self.alert(
                loc,
                format!("unknown declaration type '{what}' (supports 'capture')"),
            );
        }
        let side = words.get(2).map_or("", String::as_str);
        if !matches!(side, "request" | "response") {
            return self.alert(
                loc,
                "'declare capture' requires a direction ('request' or 'response')",
            );
        }
        let len = match (words.get(3).map(String::as_str), words.get(4)) {
            (Some("len"), Some(n)) => n.parse::<i64>().unwrap_or(0),
            _ => return self.alert(loc, "'declare capture' requires a capture length ('len')"),
        };
        if len <= 0 {
            return self.alert(loc, "length must be > 0");
        }
        let c = &mut self.px().captures;
        let slots = if side == "request" {
            &mut c.request
        } else {
            &mut c.response
        };
        slots.push((String::new(), len as usize));
    }

    /// `http-response set-header|add-header|del-header|deny [if|unless ...]`.
    pub(super) fn kw_http_response(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "http-response", false, true, true) {
            return;
        }
        crate::sample::stick::context(crate::sample::stick::ArgCtx::HttpResponse);
        let action = words.get(1).map_or("", String::as_str);
        let Some(entry) = HTTP_RESPONSE.iter().find(|e| e.name == var_key(action)) else {
            if kw::haproxy_has(kw::Kind::HttpResponse, action) {
                return self.unsupported(loc, &format!("http-response {action}"));
            }
            let sugg = suggest::suffix(
                action,
                kw::HTTP_RESPONSE_SUPPORTED
                    .iter()
                    .copied()
                    .chain(kw::haproxy26(kw::Kind::HttpResponse)),
            );
            return self.alert(
                loc,
                format!("'http-response' expects 'deny', 'set-header' or another HAProxy action, but got '{action}'{sugg}"),
            );
        };
        let cond_at = cond_start(words);
        let args = &words[action_args(action).min(cond_at)..cond_at];
        let parsed = (entry.run)(self, loc, args);
        let cond = match &parsed {
            Ok(_) => match self.rule_condition(loc, words, "http-response", action) {
                Some((_, cond)) => cond,
                None => return,
            },
            Err(_) => None,
        };
        match parsed {
            Ok(a) => self
                .px()
                .http_response
                .push(HttpResponseRule { action: a, cond }),
            Err(e) => match e.strip_prefix(WHOLE_MESSAGE) {
                Some(m) => self.tight(Level::Alert, loc, m),
                None => {
                    let m = self.rule_error("http-response", action, e);
                    self.alert(loc, m)
                }
            },
        }
    }
    /// `http-after-response set-header|add-header|del-header`, with a
    /// condition or not: HAProxy 2.6's other actions there are named as
    /// not supported yet.
    pub(super) fn kw_http_after_response(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "http-after-response", false, true, true) {
            return;
        }
        let action = words.get(1).map_or("", String::as_str);
        let Some(entry) = HTTP_AFTER_RESPONSE
            .iter()
            .find(|e| e.name == var_key(action))
        else {
            if kw::haproxy_has(kw::Kind::HttpAfterResponse, action) {
                return self.unsupported(loc, &format!("http-after-response {action}"));
            }
            return self.alert(
                loc,
                format!("'http-after-response' expects 'set-header', 'add-header' or another HAProxy action, but got '{action}'"),
            );
        };
        // HAProxy tests the conditions once the request is gone (a `path`
        // there finds nothing): they are evaluated so (`http::after`).
        let cond_at = cond_start(words);
        let args = &words[action_args(action).min(cond_at)..cond_at];
        let parsed = (entry.run)(self, loc, args);
        let cond = match &parsed {
            Ok(_) => match self.rule_condition(loc, words, "http-after-response", action) {
                Some((_, cond)) => cond,
                None => return,
            },
            Err(_) => None,
        };
        match parsed {
            Ok(a) => self
                .px()
                .http_after_response
                .push(HttpResponseRule { action: a, cond }),
            Err(e) => match e.strip_prefix(WHOLE_MESSAGE) {
                Some(m) => self.tight(Level::Alert, loc, m),
                None => {
                    let m = self.rule_error("http-after-response", action, e);
                    self.alert(loc, m)
                }
            },
        }
    }

    /// `errorfile <code> <file>`: the file is read now, whole; it is the
    /// complete HTTP response sent for that code.
    pub(super) fn kw_errorfile(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "errorfile", true, true, true) {
            return;
        }
        let (Some(code), Some(path)) = (words.get(1), words.get(2)) else {
            return self.alert(loc, "'errorfile' expects <code> and <file> as arguments.");
        };
        let Some(code) = parse_u32(code)
            .and_then(|c| u16::try_from(c).ok())
            .filter(|c| ERROR_PAGE_CODES.contains(c))
        else {
            return self.warn(
                loc,
                format!("status code '{code}' not handled, error customization will be ignored."),
            );
        };
        let bytes = match std::fs::read(crate::sys::cfgdir::resolve(path)) {
            Ok(b) => b,
            Err(_) => {
                return self.alert(loc, format!("errorfile : error opening file '{path}'."));
            }
        };
        // An empty file (`errorfile 408 /dev/null`, which HAProxy's
        // documentation recommends) is an empty answer: the connection is
        // closed without a byte.
        let page = if bytes.is_empty() {
            Some(bytes::Bytes::new())
        } else {
            crate::wire::error_pages::load_errorfile(&bytes)
        };
        let Some(page) = page else {
            return self.alert(
                loc,
                format!("unable to parse the custom error message file '{path}' for code {code} : not a valid HTTP response."),
            );
        };
        let p = self.px();
        p.errorfiles.retain(|(c, _)| *c != code);
        p.errorfiles.push((code, page));
    }

    /// `http-error status <code> [<reply arguments>]`: the proxy's page for
    /// `<code>`, as an `errorfile` gives one; `default-errorfiles` drops
    /// the proxy's own. Replies with samples (`lf-string`, `lf-file`, a
    /// `hdr` with `%[...]`) are not taken yet.
    pub(super) fn kw_http_error(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "http-error", true, true, true) {
            return;
        }
        if words.get(1).is_none_or(|w| w != "status") {
            return self.alert(
                loc,
                "http-error : expects at least a <status> as arguments.",
            );
        }
        let stage = self.http_stage(false);
        let reply = match self.reply_args(loc, &words[1..], 200, stage) {
            Ok(r) => r,
            Err(e) => {
                let e = e.strip_prefix(WHOLE_MESSAGE).unwrap_or(&e).to_string();
                return self.alert(loc, format!("http-error : {e}"));
            }
        };
        let code = reply.status;
        let literal = |f: &LogFmt| -> Option<String> {
            f.0.iter()
                .map(|p| match p {
                    crate::config::model::FmtPart::Lit(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect()
        };
        let headers: Option<Vec<(String, String)>> = reply
            .headers
            .iter()
            .map(|(n, f)| literal(f).map(|v| (n.clone(), v)))
            .collect();
        let page = match (&reply.body, headers) {
            (ReplyBody::ErrorPage, _) => None,
            (ReplyBody::Message(page), _) => Some(bytes::Bytes::from(page.clone())),
            (ReplyBody::Static(body), Some(h)) => {
                Some(bytes::Bytes::from(crate::wire::error_pages::static_reply(
                    code,
                    &h,
                    reply.content_type.as_deref(),
                    body,
                )))
            }
            _ => {
                return self.unsupported(
                    loc,
                    "http-error with 'lf-string', 'lf-file' or a 'hdr' made of samples",
                );
            }
        };
        let p = self.px();
        p.errorfiles.retain(|(c, _)| *c != code);
        if let Some(page) = page {
            p.errorfiles.push((code, page));
        }
    }

    /// `deny [deny_status <code>] [<reply arguments>]`, for `http-request`
    /// and `http-response`: without reply arguments, the error page of the
    /// status (which must have one, as HAProxy checks).
    pub(super) fn deny_args(
        &mut self,
        loc: &Loc,
        args: &[String],
        default_status: u16,
        stage: Stage,
    ) -> Result<HttpReply, String> {
        let mut status = default_status;
        let mut rest = args;
        if let [w, v, tail @ ..] = args
            && w == "deny_status"
        {
            status = parse_u32(v)
                .and_then(|c| u16::try_from(c).ok())
                .filter(|c| (200..=599).contains(c))
                .ok_or_else(|| format!("Unexpected status code '{v}'"))?;
            rest = tail;
        } else if args.first().is_some_and(|w| w == "deny_status") {
            return Err("'deny_status' expects <status_code> as argument".into());
        }
        if rest.is_empty() {
            if !ERROR_PAGE_CODES.contains(&status) {
                return Err(format!(
                    "status code '{status}' not handled by default with 'default-errorfiles' argument."
                ));
            }
            return Ok(HttpReply::error_page(status));
        }
        self.reply_args(loc, rest, status, stage)
    }

    /// HAProxy's http reply arguments (`http_parse_http_reply`): `status`,
    /// `content-type`, one payload among `string`, `lf-string`, `file`,
    /// `lf-file`, `errorfile`, `default-errorfiles`, and `hdr <name> <fmt>`
    /// lines. Texts of errors and warnings are HAProxy 2.6's.
    pub(super) fn reply_args(
        &mut self,
        loc: &Loc,
        args: &[String],
        default_status: u16,
        stage: Stage,
    ) -> Result<HttpReply, String> {
        enum Payload {
            Empty,
            Raw(Vec<u8>),
            Format(String),
            ErrorPage,
            Message(Vec<u8>),
            Section(String),
        }
        let mut status = default_status;
        let mut content_type: Option<String> = None;
        let mut payload = Payload::Empty;
        let mut payload_kw: Option<&str> = None;
        let mut headers = Vec::new();
        let bufsize = self.global.tune_bufsize.unwrap_or(16384) as u64;
        let mut i = 0;
        while let Some(w) = args.get(i) {
            let v = args
                .get(i + 1)
                .map(String::as_str)
                .filter(|v| !v.is_empty());
            let missing = |what: &str| format!("'{w}' expects {what} as argument");
            let w = w.as_str();
            if matches!(
                w,
                "string"
                    | "lf-string"
                    | "file"
                    | "lf-file"
                    | "errorfile"
                    | "errorfiles"
                    | "default-errorfiles"
            ) {
                if let Some(first) = payload_kw {
                    return Err(format!(
                        "unexpected '{w}' argument, '{first}' already defined"
                    ));
                }
                payload_kw = Some(w);
            }
            let read_file = |v: Option<&str>| -> Result<Vec<u8>, String> {
                let path = v.ok_or_else(|| missing("<file>"))?;
                let bytes = std::fs::read(crate::sys::cfgdir::resolve(path))
                    .map_err(|_| format!("error opening file '{path}'"))?;
                if bytes.len() as u64 > bufsize {
                    return Err(format!(
                        "file '{path}' exceeds the buffer size ({} > {bufsize})",
                        bytes.len()
                    ));
                }
                Ok(bytes)
            };
            match w {
                "status" => {
                    let v = v.ok_or_else(|| missing("<status_code>"))?;
                    status = parse_u32(v)
                        .and_then(|c| u16::try_from(c).ok())
                        .filter(|c| (200..=599).contains(c))
                        .ok_or_else(|| format!("Unexpected status code '{v}'"))?;
                }
                "content-type" => {
                    content_type = Some(v.ok_or_else(|| missing("<ctype>"))?.to_string());
                }
                "string" => payload = Payload::Raw(v.ok_or_else(|| missing("<str>"))?.into()),
                "lf-string" => {
                    payload = Payload::Format(v.ok_or_else(|| missing("<fmt>"))?.to_string());
                }
                "file" => payload = Payload::Raw(read_file(v)?),
                "lf-file" => {
                    let bytes = read_file(v)?;
                    payload = Payload::Format(String::from_utf8_lossy(&bytes).into_owned());
                }
                "default-errorfiles" => {
                    payload = Payload::ErrorPage;
                    i += 1;
                    continue;
                }
                "errorfile" => {
                    let path = v.ok_or_else(|| missing("<fmt>"))?;
                    let bytes = std::fs::read(crate::sys::cfgdir::resolve(path))
                        .map_err(|_| format!("error opening file '{path}'"))?;
                    let page = crate::wire::error_pages::load_errorfile(&bytes).ok_or_else(|| {
                        format!("unable to parse the custom error message file '{path}' : not a valid HTTP response")
                    })?;
                    payload = Payload::Message(page.to_vec());
                }
                "errorfiles" => {
                    payload = Payload::Section(v.ok_or_else(|| missing("<name>"))?.to_string());
                }
                "hdr" => {
                    let (Some(name), Some(value)) = (v, args.get(i + 2)) else {
                        return Err("'hdr' expects <name> and <value> as arguments".into());
                    };
                    if value.is_empty() {
                        return Err("'hdr' expects <name> and <value> as arguments".into());
                    }
                    if ["content-length", "transfer-encoding", "content-type"]
                        .iter()
                        .any(|h| h.eq_ignore_ascii_case(name))
                    {
                        self.warn(
                            loc,
                            format!("header '{name}' always ignored by the http reply."),
                        );
                    } else if !name.bytes().all(is_token_byte) {
                        return Err(format!("'hdr' expects a header name (got '{name}')"));
                    } else {
                        headers.push((name.to_ascii_lowercase(), parse_logfmt(value, stage)?));
                    }
                    i += 3;
                    continue;
                }
                other => {
                    return Err(format!(
                        "unexpected keyword '{other}' (expects 'status', 'content-type', 'string', 'lf-string', 'file', 'lf-file', 'errorfile', 'default-errorfiles' or 'hdr', then 'if' or 'unless')"
                    ));
                }
            }
            i += 2;
        }
        let no_body = |what: &str| format!("No body expected for {status} responses{what}");
        let body = match payload {
            Payload::Empty => {
                if let Some(t) = content_type.take() {
                    self.warn(
                        loc,
                        format!("content-type '{t}' ignored by the http reply because neither errorfile nor payload defined."),
                    );
                }
                ReplyBody::Static(Vec::new())
            }
            Payload::ErrorPage | Payload::Message(_) | Payload::Section(_) => {
                if matches!(payload, Payload::ErrorPage) && !ERROR_PAGE_CODES.contains(&status) {
                    return Err(format!(
                        "status code '{status}' not handled by default with 'default-errorfiles' argument."
                    ));
                }
                if let Some(t) = content_type.take() {
                    self.warn(
                        loc,
                        format!("content-type '{t}' ignored by the http reply when used with an erorrfile."),
                    );
                }
                if !headers.is_empty() {
                    headers.clear();
                    self.warn(
                        loc,
                        "hdr parameters ignored by the http reply when used with an erorrfile.",
                    );
                }
                match payload {
                    Payload::Message(page) => ReplyBody::Message(page),
                    Payload::Section(name) => ReplyBody::Section(name),
                    _ => ReplyBody::ErrorPage,
                }
            }
            Payload::Raw(bytes) => {
                if matches!(status, 204 | 304) && !bytes.is_empty() {
                    return Err(no_body(""));
                }
                if content_type.is_none() && !bytes.is_empty() {
                    return Err(
                        "a content type must be defined when non-empty payload is configured"
                            .into(),
                    );
                }
                if bytes.is_empty()
                    && let Some(t) = content_type.take()
                {
                    self.warn(
                        loc,
                        format!("content-type '{t}' ignored by the http reply when used with an empty payload."),
                    );
                }
                ReplyBody::Static(bytes)
            }
            Payload::Format(text) => {
                if matches!(status, 204 | 304) {
                    return Err(no_body(""));
                }
                if content_type.is_none() {
                    return Err("a content type must be defined with a log-format payload".into());
                }
                ReplyBody::Format(parse_logfmt(&text, stage)?)
            }
        };
        Ok(HttpReply {
            status,
            content_type,
            body,
            headers,
        })
    }

    // ---------------------------------------------------------------- server
}

/// `http-request use-service <name>`: sluice has HAProxy's
/// `prometheus-exporter` service.
pub(super) fn use_service_args(args: &[String]) -> Result<HttpRequestAction, String> {
    match args {
        [name] if name == "prometheus-exporter" => Ok(HttpRequestAction::PrometheusExporter),
        [name] if name.starts_with("lua.") => {
            let short = &name["lua.".len()..];
            if crate::sample::script::parsing_has_service(short, true) {
                Ok(HttpRequestAction::LuaService(short.to_string()))
            } else {
                Err(format!("'{name}' unknown service name."))
            }
        }
        [name] => Err(format!(
            "'use-service' expects a service name, 'prometheus-exporter' is the only one sluice has (got '{name}')"
        )),
        [] => Err("'use-service' expects a service name".to_string()),
        [_, extra, ..] => Err(format!(
            "unexpected keyword '{extra}' (expects 'if' or 'unless')"
        )),
    }
}

pub(super) fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A log-format string: literal text, `%[<sample expression>]`, `%ci`,
/// `%f`, `%b`, `%s`, `%%`, evaluated at `stage`.
pub(crate) fn parse_logfmt(text: &str, stage: Stage) -> Result<LogFmt, String> {
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('%') {
        lit.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        let part = if let Some(r) = rest.strip_prefix('%') {
            lit.push('%');
            rest = r;
            continue;
        } else if let Some(r) = rest.strip_prefix("ci") {
            rest = r;
            FmtPart::Src
        } else if let Some((part, r)) = [
            ("ft", FmtPart::Frontend),
            ("f", FmtPart::Frontend),
            ("b", FmtPart::Backend),
            ("s", FmtPart::Server),
        ]
        .into_iter()
        .find_map(|(p, part)| rest.strip_prefix(p).map(|r| (part, r)))
        {
            rest = r;
            part
        } else if let Some(r) = rest.strip_prefix('[') {
            let (expr, used) = crate::config::log_format::parse_sample(r, stage)?;
            rest = &r[used..];
            FmtPart::Sample(expr)
        } else {
            return Err(format!(
                "log-format variable in '{text}' is not supported by sluice yet (only %ci, %f, %b, %s and %[<sample expression>])"
            ));
        };
        if !lit.is_empty() {
            parts.push(FmtPart::Lit(std::mem::take(&mut lit)));
        }
        parts.push(part);
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        parts.push(FmtPart::Lit(lit));
    }
    Ok(LogFmt(parts))
}

/// Arguments of the header, path and redirect actions.
/// `<name> <fmt>` of `set-header` and `add-header`.
fn header_args(args: &[String], stage: Stage) -> Result<(String, LogFmt), String> {
    exact_args(args, 2)?;
    Ok((header_name(args, 0)?, parse_logfmt(&args[1], stage)?))
}

/// `allow` takes no argument: a word left is where HAProxy's rule parser
/// expects the condition.
fn allow_args(args: &[String], rule: &str) -> Result<(), String> {
    match args.first() {
        None => Ok(()),
        Some(extra) => Err(format!(
            "{WHOLE_MESSAGE}'{rule} allow' expects either 'if' or 'unless' followed by a condition but found '{extra}'."
        )),
    }
}

/// `<name> [-m <meth>]` of `del-header`, `rule` naming the rule set in
/// HAProxy's message for words left over.
fn del_header_args(
    args: &[String],
    rule: &str,
) -> Result<(String, crate::config::model::NameMatch), String> {
    use crate::config::model::NameMatch;
    if args.is_empty() {
        return Err("expects at least 1 argument".to_string());
    }
    let mut how = NameMatch::Str;
    let mut used = 1;
    if args.get(1).is_some_and(|a| a == "-m") {
        let Some(meth) = args.get(2) else {
            return Err("-m flag expects exactly 1 argument".to_string());
        };
        how = match meth.as_str() {
            "str" => NameMatch::Str,
            "beg" => NameMatch::Beg,
            "end" => NameMatch::End,
            "sub" => NameMatch::Sub,
            "reg" => NameMatch::Reg(
                crate::config::model::ByteRegex::new(&args[0], false)
                    .map_err(|e| crate::sample::pattern::regex_error(&args[0], &e))?,
            ),
            m => return Err(format!("-m with unsupported matching method '{m}'")),
        };
        used = 3;
    }
    if let Some(extra) = args.get(used) {
        return Err(format!(
            "{WHOLE_MESSAGE}'{rule} del-header' expects either 'if' or 'unless' followed by a condition but found '{extra}'."
        ));
    }
    // A regex is no field name; the other patterns are (parts of) one.
    let name = match how {
        NameMatch::Reg(_) => args[0].clone(),
        _ => header_name(args, 0)?,
    };
    Ok((name, how))
}

/// `<name> <regex> <fmt>` of `replace-header` and `replace-value`.
fn header_rewrite_args(
    args: &[String],
    stage: Stage,
) -> Result<crate::config::model::HeaderRewrite, String> {
    if args.len() != 3 {
        return Err("expects exactly 3 arguments".to_string());
    }
    let re = crate::config::model::ByteRegex::new(&args[1], false)
        .map_err(|e| crate::sample::pattern::regex_error(&args[1], &e))?;
    Ok(crate::config::model::HeaderRewrite {
        name: header_name(args, 0)?,
        re,
        fmt: parse_logfmt(&args[2], stage)?,
    })
}

/// `<regex> <fmt>` of `replace-path`, `replace-pathq` and `replace-uri`.
fn target_rewrite_args(
    args: &[String],
    part: crate::config::model::UriPart,
    stage: Stage,
) -> Result<HttpRequestAction, String> {
    if args.len() != 2 {
        return Err("expects exactly 2 arguments <match-regex> and <replace-format>".to_string());
    }
    let re = crate::config::model::ByteRegex::new(&args[0], false).map_err(|e| {
        format!(
            "failed to parse the regex : {}",
            crate::sample::pattern::regex_error(&args[0], &e)
        )
    })?;
    Ok(HttpRequestAction::ReplaceTarget {
        part,
        re,
        fmt: parse_logfmt(&args[1], stage)?,
    })
}

/// `set-path|set-query|set-pathq|set-uri <fmt>`.
fn set_target(args: &[String], part: UriPart, stage: Stage) -> Result<HttpRequestAction, String> {
    format_arg(args, stage).map(|fmt| HttpRequestAction::SetTarget { part, fmt })
}

/// `set-var(...)`, `set-var-fmt(...)`, `unset-var(...)` of an HTTP rule
/// set: words left before the condition are HAProxy's rule parser's
/// error.
fn http_var_rule(
    args: &[String],
    stage: Stage,
    rule: &str,
) -> Result<crate::config::model::VarRule, String> {
    let takes = if args[0].starts_with("unset-var") {
        1
    } else {
        2
    };
    no_more_args(args.get(takes..).unwrap_or(&[]), rule, &args[0])?;
    var_rule(args, stage)
}

/// `<fmt>` of `set-path`, `set-query`, `set-pathq`, `set-uri` and
/// `set-method`.
fn format_arg(args: &[String], stage: Stage) -> Result<LogFmt, String> {
    if args.len() != 1 {
        return Err("expects exactly 1 argument <format>".to_string());
    }
    parse_logfmt(&args[0], stage)
}

/// `<level>|silent` of `set-log-level`; `rule` names the rule set in
/// HAProxy's message for words left over.
pub(super) fn log_level_args(
    args: &[String],
    rule: &str,
) -> Result<crate::config::model::LogLevel, String> {
    use crate::config::model::LogLevel;
    let level = match args.first().map(String::as_str) {
        Some("silent") => LogLevel::Silent,
        Some(l) => match crate::config::log::LEVELS.iter().position(|n| *n == l) {
            Some(n) => LogLevel::Severity(n as u8),
            None => {
                return Err("expects exactly 1 argument (log level name or 'silent')".to_string());
            }
        },
        None => return Err("expects exactly 1 argument (log level name or 'silent')".to_string()),
    };
    no_more_args(&args[1..], rule, "set-log-level")?;
    Ok(level)
}

/// The sample expression `text` of an action, read as HAProxy's actions
/// read theirs: a fetch its place cannot give is refused naming `quoted`
/// (the expression; for `set-var`, HAProxy names the action word).
pub(super) fn action_expr(
    text: &str,
    stage: Stage,
    quoted: &str,
) -> Result<crate::sample::Expr, String> {
    let (expr, used) = crate::sample::Expr::parse(text).map_err(|e| e.to_string())?;
    if used != text.len() {
        return Err(format!(
            "failed to parse sample expression <{text}> : unexpected '{}'",
            &text[used..]
        ));
    }
    if !expr.fetch().uses.usable_in(stage) {
        return Err(format!(
            "fetch method '{quoted}' extracts information from '{}', none of which is available here",
            expr.fetch().uses.names()
        ));
    }
    Ok(expr)
}

/// `<expr>` of `set-src`, `set-src-port`, `set-dst` and `set-dst-port`.
fn addr_args(
    args: &[String],
    part: crate::config::model::AddrPart,
    stage: Stage,
    action: &str,
) -> Result<HttpRequestAction, String> {
    let Some(text) = args.first() else {
        return Err("missing fetch method".to_string());
    };
    let expr = action_expr(text, stage, text)?;
    no_more_args(&args[1..], "http-request", action)?;
    Ok(HttpRequestAction::SetAddr { part, expr })
}

/// The `<n>` of `set-tos` and `set-mark`: decimal, hexadecimal (`0x`) or
/// octal (`0`), as C's `strtol`; a negative value wraps as HAProxy's does.
pub(super) fn sock_value_args(args: &[String], rule: &str, action: &str) -> Result<u32, String> {
    let Some(text) = args.first() else {
        return Err("expects exactly 1 argument (integer/hex value)".to_string());
    };
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (radix, body) = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, h)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    let v = i64::from_str_radix(body, radix).map_err(|_| {
        let bad = body
            .find(|c: char| !c.is_digit(radix))
            .map_or(text.as_str(), |i| &body[i..]);
        format!("invalid character starting at '{bad}' (integer/hex value expected)")
    })?;
    no_more_args(&args[1..], rule, action)?;
    Ok((if neg { -v } else { v }) as u32)
}

/// The `<n>` of `set-nice`: an integer (`atoi`: a word that is none is
/// 0), kept within -1024..1024.
pub(super) fn nice_args(args: &[String], rule: &str) -> Result<i32, String> {
    let Some(text) = args.first() else {
        return Err("expects exactly 1 argument (integer value)".to_string());
    };
    let digits: String = text
        .chars()
        .enumerate()
        .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && (*c == '-' || *c == '+')))
        .map(|(_, c)| c)
        .collect();
    let n = digits.parse::<i64>().unwrap_or(0).clamp(-1024, 1024) as i32;
    no_more_args(&args[1..], rule, "set-nice")?;
    Ok(n)
}

/// `on|off` of `strict-mode`; `rule` names the rule set in HAProxy's
/// message for words left over.
fn strict_mode_args(args: &[String], rule: &str) -> Result<bool, String> {
    let on = match args.first().map(String::as_str) {
        None => return Err("expects exactly 1 arguments".to_string()),
        Some("on") => true,
        Some("off") => false,
        Some(v) => {
            return Err(format!(
                "Unexpected value '{v}'. Only 'on' and 'off' are supported"
            ));
        }
    };
    no_more_args(&args[1..], rule, "strict-mode")?;
    Ok(on)
}

/// HAProxy's rule parser's error for words between an action's arguments
/// and its condition.
fn no_more_args(rest: &[String], rule: &str, action: &str) -> Result<(), String> {
    match rest.first() {
        None => Ok(()),
        Some(extra) => Err(format!(
            "{WHOLE_MESSAGE}'{rule} {action}' expects either 'if' or 'unless' followed by a condition but found '{extra}'."
        )),
    }
}

/// `<code> [reason <fmt>]` of `set-status`.
fn set_status_args(
    args: &[String],
    stage: Stage,
    rule: &str,
) -> Result<HttpResponseAction, String> {
    let Some(code) = args.first() else {
        return Err(
            "expects 1 argument: <status>; or 3 arguments: <status> reason <fmt>".to_string(),
        );
    };
    let code = parse_u32(code)
        .filter(|c| (100..=999).contains(c))
        .ok_or("expects an integer status code between 100 and 999")? as u16;
    let reason = match args.get(1..) {
        Some([kw, fmt, rest @ ..]) if kw == "reason" => {
            no_more_args(rest, rule, "set-status")?;
            Some(parse_logfmt(fmt, stage)?)
        }
        Some(rest) => {
            no_more_args(rest, rule, "set-status")?;
            None
        }
        None => None,
    };
    Ok(HttpResponseAction::SetStatus { code, reason })
}

/// The `i`th argument as a header name (an HTTP token).
fn header_name(args: &[String], i: usize) -> Result<String, String> {
    let n = args.get(i).map_or("", String::as_str);
    // A trailing colon, copied from the wire format, is part of the name
    // for HAProxy 2.6, which sends it as written (`X-Proto:: http`).
    let token = n.strip_suffix(':').unwrap_or(n);
    if token.is_empty() || !token.bytes().all(is_token_byte) {
        return Err(format!("expects a header name (got '{n}')"));
    }
    Ok(n.to_string())
}

/// Marks an action's error that is the whole message (HAProxy's rule
/// parser says it, not the action's: no "error detected ..." around it).
const WHOLE_MESSAGE: &str = "\u{1}";

/// `wait-for-body time <time> [at-least <bytes>]`, as HAProxy 2.6 reads
/// them (either order, the last of each kept).
fn wait_for_body_args(
    args: &[String],
    rule: &str,
) -> Result<crate::config::model::WaitForBody, String> {
    const USAGE: &str = "expects time <time> [ at-least <bytes> ]";
    let mut time = None;
    let mut at_least = 0;
    let mut i = 0;
    while let Some(kw) = args.get(i) {
        let value = || {
            args.get(i + 1)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("missing argument for '{kw}'"))
        };
        match kw.as_str() {
            "time" => {
                let v = value()?;
                time = Some(crate::config::units::parse_time(v).map_err(|e| match e {
                    crate::config::units::TimeError::Overflow => {
                        "time overflow (maximum value is 2147483647 ms or ~24.8 days)".to_string()
                    }
                    crate::config::units::TimeError::BadChar(c) => {
                        format!("unexpected character '{c}'")
                    }
                    crate::config::units::TimeError::Empty => USAGE.to_string(),
                })?);
            }
            "at-least" => at_least = size_value(value()?)?,
            _ => {
                return Err(format!(
                    "{WHOLE_MESSAGE}'{rule} wait-for-body' expects either 'if' or 'unless' followed by a condition but found '{kw}'."
                ));
            }
        }
        i += 2;
    }
    let time = time.ok_or_else(|| USAGE.to_string())?;
    Ok(crate::config::model::WaitForBody { time, at_least })
}

/// A size as HAProxy's `parse_size_err` reads it: digits, then `k`, `m`
/// or `g` (powers of 1024), nothing after.
fn size_value(v: &str) -> Result<u64, String> {
    let end = v
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(v.len());
    let bad = |c: char| format!("unexpected character '{c}'");
    let n: u64 = match v[..end].parse() {
        Ok(n) => n,
        Err(_) => return Err(bad(v.chars().next().unwrap_or(' '))),
    };
    let mut rest = v[end..].chars();
    let mul = match rest.next() {
        None => 1,
        Some('k' | 'K') => 1 << 10,
        Some('m' | 'M') => 1 << 20,
        Some('g' | 'G') => 1 << 30,
        Some(c) => return Err(bad(c)),
    };
    if let Some(c) = rest.next() {
        return Err(bad(c));
    }
    n.checked_mul(mul)
        .filter(|&n| n <= u64::from(u32::MAX))
        .ok_or_else(|| "value too large".to_string())
}

fn exact_args(args: &[String], n: usize) -> Result<(), String> {
    if args.len() != n {
        return Err(format!("expects exactly {n} argument(s)"));
    }
    Ok(())
}

/// Arguments of `http-request redirect` and of the `redirect` keyword:
/// `location|prefix|scheme <to> [code <n>] [drop-query] [append-slash]`;
/// `<to>` is a log-format for `http-request redirect`, literal otherwise.
/// `logfmt` is the stage of `http-request redirect`'s log-format.
pub(super) fn redirect_args(
    args: &[String],
    logfmt: Option<Stage>,
) -> Result<HttpRequestAction, String> {
    let kind = match args.first().map(String::as_str) {
        Some("location") => RedirectKind::Location,
        Some("prefix") => RedirectKind::Prefix,
        Some("scheme") => RedirectKind::Scheme,
        _ => {
            return Err("expects 'location', 'prefix' or 'scheme' followed by a value".into());
        }
    };
    let value = args
        .get(1)
        .ok_or_else(|| format!("'{}' expects an argument", args[0]))?;
    let fmt = match logfmt {
        Some(stage) => parse_logfmt(value, stage)?,
        None => LogFmt(vec![FmtPart::Lit(value.clone())]),
    };
    let (mut drop_query, mut append_slash) = (false, false);
    let mut code = 302;
    let mut i = 2;
    while let Some(w) = args.get(i) {
        match w.as_str() {
            "code" => {
                let v = args.get(i + 1).map_or("", String::as_str);
                code = parse_u32(v)
                    .and_then(|c| u16::try_from(c).ok())
                    .filter(|c| matches!(c, 301 | 302 | 303 | 307 | 308))
                    .ok_or_else(|| {
                        format!("'code' expects one of 301, 302, 303, 307 or 308 (got '{v}')")
                    })?;
                i += 2;
            }
            "drop-query" => {
                drop_query = true;
                i += 1;
            }
            "append-slash" => {
                append_slash = true;
                i += 1;
            }
            other => {
                return Err(format!(
                    "redirect option '{other}' is not supported by sluice yet (only 'code', 'drop-query', 'append-slash')"
                ));
            }
        }
    }
    Ok(HttpRequestAction::Redirect {
        kind,
        fmt,
        code,
        drop_query,
        append_slash,
    })
}

/// The table row of an action: the variable actions are one row,
/// `set-var`, whatever follows their name (`set-var-fmt(txn.x,ifset)`).
/// Where a rule's condition starts (the words' end without one).
fn cond_start(words: &[String]) -> usize {
    words
        .iter()
        .position(|w| w == "if" || w == "unless")
        .unwrap_or(words.len())
}

/// The map and ACL actions are a row each, whatever file their name gives
/// (`set-map(/etc/haproxy/hosts.map)`).
/// `lua.<name> [args]` (`a[0]` the action word) for an action a script
/// registered for `kind`; else the message of an unknown action, which
/// starts with `expects`.
fn lua_action(a: &[String], kind: &str, rule: &str, expects: &str) -> Result<LuaAction, String> {
    let word = a.first().map_or("", String::as_str);
    let name = word.strip_prefix("lua.").unwrap_or(word);
    let Some(nargs) = crate::sample::script::parsing_action_args(name, kind) else {
        return Err(format!("{WHOLE_MESSAGE}{expects}, but got '{word}'"));
    };
    // The action takes the words it registered for; HAProxy reads the
    // next one as the condition.
    if let Some(extra) = a.get(1 + nargs) {
        return Err(format!(
            "{WHOLE_MESSAGE}'{rule} {word}' expects either 'if' or 'unless' followed by a condition but found '{extra}'."
        ));
    }
    Ok(LuaAction {
        name: name.to_string(),
        args: a[1..].to_vec(),
    })
}

fn var_key(action: &str) -> &str {
    if action.starts_with("lua.") {
        "lua"
    } else if let Some(row) = TABLE_ACTIONS.iter().find(|r| action.starts_with(**r)) {
        row
    } else if ["set-var", "unset-var"]
        .iter()
        .any(|p| action.starts_with(p))
    {
        "set-var"
    } else if action.starts_with("do-resolve") {
        "do-resolve"
    } else if let Some(&row) = MAP_ACTIONS
        .iter()
        .find(|r| action.strip_prefix(**r).is_some_and(|t| t.starts_with('(')))
    {
        row
    } else {
        action
    }
}

const MAP_ACTIONS: [&str; 4] = ["set-map", "del-map", "add-acl", "del-acl"];

/// The stick table actions: a row each, whatever follows (`track-sc1`,
/// `sc-inc-gpc0(2)`).
const TABLE_ACTIONS: [&str; 3] = ["track-sc", "sc-inc-gpc", "sc-set-gpt"];

/// Where an action's arguments start in its line: the variable, map and
/// ACL actions get their own word too (it names the variable or file).
fn action_args(action: &str) -> usize {
    let row = var_key(action);
    if row == "set-var"
        || row == "do-resolve"
        || row == "lua"
        || MAP_ACTIONS.contains(&row)
        || TABLE_ACTIONS.contains(&row)
    {
        1
    } else {
        2
    }
}

/// `set-map(<file>) <key fmt> <value fmt>`, `del-map(<file>) <key fmt>`,
/// `add-acl(<file>) <key fmt>`, `del-acl(<file>) <key fmt>`: `args[0]` is
/// the action word. As in HAProxy, the file is what lies between the
/// action's `(` and its last character.
pub(crate) fn map_rule(
    args: &[String],
    stage: Stage,
) -> Result<crate::config::model::MapRule, String> {
    use crate::config::model::{MapOp, MapRule};
    let word = args[0].as_str();
    let op = match var_key(word) {
        "add-acl" => MapOp::AddAcl,
        "set-map" => MapOp::SetMap,
        _ => MapOp::Delete,
    };
    let file = word.get(8..word.len().saturating_sub(1)).unwrap_or("");
    if op == MapOp::SetMap && args.len() < 3 {
        return Err("expects exactly 2 arguments".to_string());
    }
    if args.len() < 2 {
        return Err("expects exactly 1 arguments".to_string());
    }
    let key = parse_logfmt(&args[1], stage)?;
    let value = match op {
        MapOp::SetMap => Some(parse_logfmt(&args[2], stage)?),
        _ => None,
    };
    Ok(MapRule {
        op,
        file: file.to_string(),
        key,
        value,
    })
}

/// `set-var(<name>[,<cond>...]) <expr>`, `set-var-fmt(<name>[,<cond>...])
/// <fmt>`, `unset-var(<name>)`: `args[0]` is the action word. Messages
/// are HAProxy 2.6's.
/// `stage` is where its expression or format is evaluated.
pub(crate) fn var_rule(
    args: &[String],
    stage: Stage,
) -> Result<crate::config::model::VarRule, String> {
    use crate::config::model::{VarRule, VarValue};
    use crate::sample::vars::{Conds, Scope, VarName};
    let word = args[0].as_str();
    let (kind, rest) = if let Some(r) = word.strip_prefix("set-var-fmt") {
        (2, r)
    } else if let Some(r) = word.strip_prefix("set-var") {
        (1, r)
    } else {
        (0, word.strip_prefix("unset-var").unwrap_or(word))
    };
    let usage =
        "Expects 'set-var(<var-name>)', 'set-var-fmt(<var-name>)' or 'unset-var(<var-name>)'";
    let Some(inner) = rest.strip_prefix('(') else {
        return Err(format!("invalid or incomplete action '{word}'. {usage}"));
    };
    let Some(inner) = inner.strip_suffix(')') else {
        return Err(format!(
            "incomplete argument after action '{word}'. {usage}"
        ));
    };
    let mut parts = inner.split(',');
    let name = parts.next().unwrap_or("");
    let mut conds = Conds::default();
    for c in parts.filter(|c| !c.is_empty()) {
        if kind == 0 {
            return Err("unset-var does not expect parameters after the variable name. Only \"set-var\" and \"set-var-fmt\" manage conditions".to_string());
        }
        conds.add(c)?;
    }
    // A bad character is quoted up to the end of the word, as HAProxy does.
    let var = VarName::parse_quoting(name, &rest[1..])?;
    if var.scope == Scope::Proc {
        crate::sample::vars::declare_proc(&var.name);
    }
    let value = match kind {
        0 => VarValue::Unset,
        1 if args.len() < 2 => return Err("missing fetch method".to_string()),
        // HAProxy takes no format as an empty one.
        2 if args.len() < 2 => VarValue::Fmt(parse_logfmt("", stage)?),
        1 => VarValue::Expr(action_expr(&args[1], stage, word)?),
        _ => VarValue::Fmt(parse_logfmt(&args[1], stage)?),
    };
    let extra = if kind == 0 { 1 } else { 2 };
    if let Some(w) = args.get(extra) {
        return Err(format!(
            "unexpected keyword '{w}' (expects 'if' or 'unless')"
        ));
    }
    Ok(VarRule { var, conds, value })
}

/// Runs a variable rule where there is no request (the `global` section,
/// the CLI): only `proc` variables exist there.
pub(crate) fn run_outside(rule: &crate::config::model::VarRule) -> bool {
    rule.run(&crate::sample::Ctx::default())
}

/// `http-request auth [realm <realm>]`.
fn auth_args(s: &State<'_>, args: &[String]) -> Result<HttpRequestAction, String> {
    let realm = match args {
        [] => match s.section {
            Section::Proxy(i) => s.proxies.get(i).map_or(String::new(), |p| p.name.clone()),
            _ => String::new(),
        },
        [kw, ..] if kw != "realm" => {
            return Err(format!(
                "unexpected keyword '{kw}' (expects 'realm', 'if' or 'unless')"
            ));
        }
        [_] => return Err("missing realm value.\n".to_string()),
        [_, r] => r.clone(),
        [_, _, extra, ..] => {
            return Err(format!(
                "unexpected keyword '{extra}' (expects 'if' or 'unless')"
            ));
        }
    };
    Ok(HttpRequestAction::Auth { realm })
}

/// An `http-request` or `http-response` action's parser: its arguments
/// (after the action, before the condition) to the action.
pub(crate) type ActionKw<A> = Kwd<fn(&mut State<'_>, &Loc, &[String]) -> Result<A, String>>;

/// The `http-request` actions, in the order suggestions try them:
/// `kw_http_request` dispatches through this table and
/// [`kw::HTTP_REQUEST_SUPPORTED`] is read from it.
pub(crate) const HTTP_REQUEST: &[ActionKw<HttpRequestAction>] = &[
    kwd("lua", |_, _, a| {
        lua_action(
            a,
            "http-req",
            "http-request",
            "'http-request' expects 'return', 'deny' or another HAProxy action",
        )
        .map(HttpRequestAction::Lua)
    }),
    kwd("cache-use", |s, loc, a| {
        s.cache_action_args(loc, a)
            .map(|name| HttpRequestAction::CacheUse(CacheRef { name, idx: 0 }))
    }),
    kwd("return", |s, loc, a| {
        let st = s.http_stage(false);
        s.reply_args(loc, a, 200, st).map(HttpRequestAction::Return)
    }),
    kwd("deny", |s, loc, a| {
        let st = s.http_stage(false);
        s.deny_args(loc, a, 403, st).map(HttpRequestAction::Deny)
    }),
    kwd("tarpit", |s, loc, a| {
        let st = s.http_stage(false);
        s.deny_args(loc, a, 500, st).map(HttpRequestAction::Tarpit)
    }),
    kwd("use-service", |_, _, a| use_service_args(a)),
    kwd("allow", |_, _, a| {
        allow_args(a, "http-request").map(|()| HttpRequestAction::Allow)
    }),
    kwd("redirect", |s, _, a| {
        redirect_args(a, Some(s.http_stage(false)))
    }),
    kwd("set-header", |s, _, a| {
        header_args(a, s.http_stage(false))
            .map(|(name, fmt)| HttpRequestAction::SetHeader { name, fmt })
    }),
    kwd("add-header", |s, _, a| {
        header_args(a, s.http_stage(false))
            .map(|(name, fmt)| HttpRequestAction::AddHeader { name, fmt })
    }),
    kwd("del-header", |_, _, a| {
        del_header_args(a, "http-request")
            .map(|(name, how)| HttpRequestAction::DelHeader { name, how })
    }),
    kwd("replace-header", |s, _, a| {
        header_rewrite_args(a, s.http_stage(false)).map(HttpRequestAction::ReplaceHeader)
    }),
    kwd("replace-value", |s, _, a| {
        header_rewrite_args(a, s.http_stage(false)).map(HttpRequestAction::ReplaceValue)
    }),
    kwd("set-path", |s, _, a| {
        set_target(a, UriPart::Path, s.http_stage(false))
    }),
    kwd("set-query", |s, _, a| {
        set_target(a, UriPart::Query, s.http_stage(false))
    }),
    kwd("set-pathq", |s, _, a| {
        set_target(a, UriPart::PathQ, s.http_stage(false))
    }),
    kwd("set-uri", |s, _, a| {
        set_target(a, UriPart::Uri, s.http_stage(false))
    }),
    kwd("replace-path", |s, _, a| {
        target_rewrite_args(a, UriPart::Path, s.http_stage(false))
    }),
    kwd("replace-pathq", |s, _, a| {
        target_rewrite_args(a, UriPart::PathQ, s.http_stage(false))
    }),
    kwd("replace-uri", |s, _, a| {
        target_rewrite_args(a, UriPart::Uri, s.http_stage(false))
    }),
    kwd("set-method", |s, _, a| {
        format_arg(a, s.http_stage(false)).map(HttpRequestAction::SetMethod)
    }),
    kwd("reject", |_, _, a| {
        no_more_args(a, "http-request", "reject").map(|()| HttpRequestAction::Reject)
    }),
    kwd("strict-mode", |_, _, a| {
        strict_mode_args(a, "http-request").map(HttpRequestAction::StrictMode)
    }),
    kwd("set-log-level", |_, _, a| {
        log_level_args(a, "http-request").map(HttpRequestAction::SetLogLevel)
    }),
    kwd("set-tos", |_, _, a| {
        sock_value_args(a, "http-request", "set-tos").map(HttpRequestAction::SetTos)
    }),
    kwd("set-mark", |_, _, a| {
        sock_value_args(a, "http-request", "set-mark").map(HttpRequestAction::SetMark)
    }),
    kwd("set-nice", |_, _, a| {
        nice_args(a, "http-request").map(HttpRequestAction::SetNice)
    }),
    kwd("set-src", |s, _, a| {
        addr_args(a, AddrPart::Src, s.http_stage(false), "set-src")
    }),
    kwd("set-src-port", |s, _, a| {
        addr_args(a, AddrPart::SrcPort, s.http_stage(false), "set-src-port")
    }),
    kwd("set-dst", |s, _, a| {
        addr_args(a, AddrPart::Dst, s.http_stage(false), "set-dst")
    }),
    kwd("set-dst-port", |s, _, a| {
        addr_args(a, AddrPart::DstPort, s.http_stage(false), "set-dst-port")
    }),
    // ---- Captures (what goes around the sample engine). ----
    kwd("capture", |s, _, a| {
        s.capture_rule(a, true)
            .map(|(expr, slot)| HttpRequestAction::Capture { expr, slot })
    }),
    // Variables and authentication (issue 17): `set-var` stands for
    // `set-var(...)`, `set-var-fmt(...)` and `unset-var(...)`.
    kwd("set-var", |s, _, a| {
        http_var_rule(a, s.http_stage(false), "http-request").map(HttpRequestAction::Var)
    }),
    // The map and ACL actions: a row each for `<name>(<file>)`.
    kwd("set-map", |s, _, a| {
        map_rule(a, s.http_stage(false)).map(HttpRequestAction::Map)
    }),
    kwd("del-map", |s, _, a| {
        map_rule(a, s.http_stage(false)).map(HttpRequestAction::Map)
    }),
    kwd("add-acl", |s, _, a| {
        map_rule(a, s.http_stage(false)).map(HttpRequestAction::Map)
    }),
    kwd("del-acl", |s, _, a| {
        map_rule(a, s.http_stage(false)).map(HttpRequestAction::Map)
    }),
    kwd("auth", |s, _, a| auth_args(s, a)),
    // Stick tables: a row each for `track-sc<n>`, `sc-inc-gpc*` and
    // `sc-set-gpt*`.
    kwd("track-sc", |s, loc, a| {
        s.http_table_action(false, loc, a)
            .map(HttpRequestAction::Table)
    }),
    kwd("sc-inc-gpc", |s, loc, a| {
        s.http_table_action(false, loc, a)
            .map(HttpRequestAction::Table)
    }),
    kwd("sc-set-gpt", |s, loc, a| {
        s.http_table_action(false, loc, a)
            .map(HttpRequestAction::Table)
    }),
    kwd("silent-drop", |_, _, a| {
        exact_args(a, 0).map(|()| HttpRequestAction::SilentDrop)
    }),
    kwd("wait-for-body", |_, _, a| {
        wait_for_body_args(a, "http-request").map(HttpRequestAction::WaitForBody)
    }),
    kwd("send-spoe-group", |_, _, a| {
        spoe_group_args(a).map(|(engine, group)| HttpRequestAction::SendSpoeGroup { engine, group })
    }),
    // The stream's own handling (issue 22): `sample::tune`.
    kwd("set-timeout", |s, _, a| {
        s.set_timeout_args(a).map(HttpRequestAction::SetTimeout)
    }),
    kwd("set-priority-class", |s, _, a| {
        priority_args(a, s.http_stage(false), "http-request", "set-priority-class")
            .map(HttpRequestAction::Priority)
    }),
    kwd("set-priority-offset", |s, _, a| {
        priority_args(
            a,
            s.http_stage(false),
            "http-request",
            "set-priority-offset",
        )
        .map(HttpRequestAction::Priority)
    }),
    kwd("disable-l7-retry", |_, _, a| {
        no_more_args(a, "http-request", "disable-l7-retry")
            .map(|()| HttpRequestAction::DisableL7Retry)
    }),
    kwd("do-resolve", |s, _, a| {
        do_resolve_args(a, s.http_stage(false), "http-request").map(HttpRequestAction::DoResolve)
    }),
    // Refused without `expose-experimental-directives` before it is
    // dispatched here (`kw_http_request`).
    kwd("normalize-uri", |_, _, a| {
        normalize_uri_args(a).map(HttpRequestAction::NormalizeUri)
    }),
    kwd("early-hint", |s, _, a| {
        if a.len() < 2 {
            return Err("expects exactly 2 arguments".to_string());
        }
        header_args(&a[..2], s.http_stage(false))
            .and_then(|h| no_more_args(&a[2..], "http-request", "early-hint").map(|()| h))
            .map(|(name, fmt)| HttpRequestAction::EarlyHint { name, fmt })
    }),
    kwd("wait-for-handshake", |_, _, a| {
        no_more_args(a, "http-request", "wait-for-handshake")
            .map(|()| HttpRequestAction::WaitForHandshake)
    }),
];

impl State<'_> {
    /// HAProxy 2.6 reads `path-strip-dotdot`, `percent-decode-unreserved`
    /// and `percent-to-uppercase` followed by a condition, without their
    /// option, as `path-merge-slashes` (its parser leaves the normalizer
    /// unset, and the first one is that). sluice does as it does, so that a
    /// request is forwarded as HAProxy forwards it, and says so.
    fn normalizer_with_condition(
        &mut self,
        loc: &Loc,
        n: crate::config::model::UriNormalizer,
    ) -> crate::config::model::UriNormalizer {
        use crate::config::model::UriNormalizer as U;
        let name = match n {
            U::PathStripDotdot { full: false } => "path-strip-dotdot",
            U::PercentDecodeUnreserved { strict: false } => "percent-decode-unreserved",
            U::PercentToUppercase { strict: false } => "percent-to-uppercase",
            other => return other,
        };
        self.diags.push(Diagnostic::parsing(
            Level::Notice,
            loc,
            format!(
                "'http-request normalize-uri {name}' followed by a condition merges slashes instead, as HAProxy 2.6 does (it reads no normalizer there); write the rule without a condition for {name} itself."
            ),
        ));
        U::PathMergeSlashes
    }
}

/// `normalize-uri <normalizer> [full|strict]`.
fn normalize_uri_args(args: &[String]) -> Result<crate::config::model::UriNormalizer, String> {
    use crate::config::model::UriNormalizer as U;
    let Some(name) = args.first() else {
        return Err("missing argument <normalizer>".to_string());
    };
    // The normalizers that take an option, and its word.
    let (flagged, option): (fn(bool) -> U, &str) = match name.as_str() {
        "path-strip-dotdot" => (|full| U::PathStripDotdot { full }, "full"),
        "percent-decode-unreserved" => (|strict| U::PercentDecodeUnreserved { strict }, "strict"),
        "percent-to-uppercase" => (|strict| U::PercentToUppercase { strict }, "strict"),
        other => {
            let n = match other {
                "fragment-encode" => U::FragmentEncode,
                "fragment-strip" => U::FragmentStrip,
                "path-merge-slashes" => U::PathMergeSlashes,
                "path-strip-dot" => U::PathStripDot,
                "query-sort-by-name" => U::QuerySortByName,
                _ => return Err(format!("unknown normalizer '{other}'")),
            };
            no_more_args(&args[1..], "http-request", "normalize-uri")?;
            return Ok(n);
        }
    };
    match args.get(1).map(String::as_str) {
        None => Ok(flagged(false)),
        Some(w) if w == option => {
            no_more_args(&args[2..], "http-request", "normalize-uri")?;
            Ok(flagged(true))
        }
        Some(w) => Err(format!("unknown argument '{w}' for '{name}' normalizer")),
    }
}

/// `do-resolve(<var>,<resolvers>[,ipv4|ipv6]) <expr>` of `rule`: `args[0]`
/// is the action word. The section is looked for once the configuration
/// is read (`config::load`).
pub(super) fn do_resolve_args(
    args: &[String],
    stage: Stage,
    rule: &str,
) -> Result<crate::config::model::DoResolve, String> {
    let word = args[0].as_str();
    let usage = |what: &str| {
        format!(
            "Can't parse '{what}'. Expects 'do-resolve(<varname>,<resolvers>[,<options>]) <expr>'. Available options are 'ipv4' and 'ipv6'"
        )
    };
    let inner = word
        .strip_prefix("do-resolve(")
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| usage(word))?;
    let mut parts = inner.split(',');
    let (var, resolvers) = match (parts.next(), parts.next()) {
        (Some(v), Some(r)) if !v.is_empty() && !r.is_empty() => (v, r),
        _ => return Err(usage(word)),
    };
    let ipv4 = match parts.next() {
        None | Some("ipv6") => false,
        Some("ipv4") => true,
        Some(_) => return Err(usage(word)),
    };
    if parts.next().is_some() {
        return Err(usage(word));
    }
    let Some(text) = args.get(1) else {
        return Err(usage(""));
    };
    let var = crate::sample::vars::VarName::parse(var)?;
    let expr = action_expr(text, stage, text)?;
    no_more_args(&args[2..], rule, word)?;
    Ok(crate::config::model::DoResolve {
        var,
        resolvers: resolvers.to_string(),
        ipv4,
        expr,
    })
}

/// `set-priority-class <expr>` or `set-priority-offset <expr>` (`action`),
/// of `rule` (`http-request`, `tcp-request content`).
pub(super) fn priority_args(
    args: &[String],
    stage: Stage,
    rule: &str,
    action: &str,
) -> Result<crate::config::model::PriorityRule, String> {
    use crate::config::model::PriorityRule;
    let text = args.first().map_or("", String::as_str);
    if text.is_empty() {
        return Err("missing fetch method".to_string());
    }
    let expr = action_expr(text, stage, text)?;
    no_more_args(args.get(1..).unwrap_or(&[]), rule, action)?;
    Ok(match action {
        "set-priority-class" => PriorityRule::Class(expr),
        _ => PriorityRule::Offset(expr),
    })
}

impl State<'_> {
    /// `set-timeout server|tunnel <time>|<expr>`: a time if the value
    /// reads as one, else a sample expression; HAProxy's messages.
    fn set_timeout_args(
        &mut self,
        args: &[String],
    ) -> Result<crate::config::model::SetTimeout, String> {
        use crate::config::model::{SetTimeout, TimeoutValue};
        use crate::config::units::{TimeError, parse_time};
        use crate::sample::tune::TimeoutKind;
        if self.proxy_kind() == Some(ProxyKind::Frontend) {
            return Err(format!(
                "proxy '{}' has no backend capability",
                self.px().name
            ));
        }
        if args.len() < 2 {
            return Err("expects exactly 2 arguments".to_string());
        }
        let kind = match args[0].as_str() {
            "server" => TimeoutKind::Server,
            "tunnel" => TimeoutKind::Tunnel,
            other => {
                return Err(format!(
                    "'set-timeout' rule supports 'server'/'tunnel' (got '{other}')"
                ));
            }
        };
        let value = match parse_time(&args[1]) {
            Ok(d) if d.is_zero() => {
                return Err(format!(
                    "null value is not valid for a 'set-timeout {}' rule",
                    args[0]
                ));
            }
            Ok(d) => TimeoutValue::Fixed(d),
            Err(TimeError::Overflow) => {
                return Err(format!(
                    "timer overflow in argument '{}' to rule 'set-timeout {}' (maximum value is 2147483647 ms or ~24.8 days)",
                    args[1], args[0]
                ));
            }
            Err(e) => match action_expr(&args[1], self.http_stage(false), &args[1]) {
                Ok(expr) => TimeoutValue::Expr(expr),
                // HAProxy reports the value as a time that failed.
                Err(_) => {
                    let c = match e {
                        TimeError::BadChar(c) => c,
                        _ => args[1].chars().next().unwrap_or(' '),
                    };
                    return Err(format!(
                        "unexpected character '{c}' in rule 'set-timeout {}'",
                        args[0]
                    ));
                }
            },
        };
        no_more_args(&args[2..], "http-request", "set-timeout")?;
        Ok(SetTimeout { kind, value })
    }
}

/// The `http-after-response` actions sluice has.
pub(crate) const HTTP_AFTER_RESPONSE: &[ActionKw<HttpResponseAction>] = &[
    kwd("set-header", |s, _, a| {
        header_args(a, s.http_stage(true))
            .map(|(name, fmt)| HttpResponseAction::SetHeader { name, fmt })
    }),
    kwd("add-header", |s, _, a| {
        header_args(a, s.http_stage(true))
            .map(|(name, fmt)| HttpResponseAction::AddHeader { name, fmt })
    }),
    kwd("del-header", |_, _, a| {
        del_header_args(a, "http-after-response")
            .map(|(name, how)| HttpResponseAction::DelHeader { name, how })
    }),
    kwd("allow", |_, _, a| {
        allow_args(a, "http-after-response").map(|()| HttpResponseAction::Allow)
    }),
    kwd("set-status", |s, _, a| {
        set_status_args(a, s.http_stage(true), "http-after-response")
    }),
    kwd("replace-header", |s, _, a| {
        header_rewrite_args(a, s.http_stage(true)).map(HttpResponseAction::ReplaceHeader)
    }),
    kwd("replace-value", |s, _, a| {
        header_rewrite_args(a, s.http_stage(true)).map(HttpResponseAction::ReplaceValue)
    }),
    kwd("set-var", |s, _, a| {
        http_var_rule(a, s.http_stage(true), "http-after-response").map(HttpResponseAction::Var)
    }),
    kwd("capture", |s, _, a| {
        s.capture_rule(a, false)
            .map(|(expr, slot)| HttpResponseAction::Capture { expr, slot })
    }),
    kwd("strict-mode", |_, _, a| {
        strict_mode_args(a, "http-after-response").map(HttpResponseAction::StrictMode)
    }),
];

/// The `http-response` actions, in the order suggestions try them:
/// `kw_http_response` dispatches through this table and
/// [`kw::HTTP_RESPONSE_SUPPORTED`] is read from it.
pub(crate) const HTTP_RESPONSE: &[ActionKw<HttpResponseAction>] = &[
    kwd("lua", |_, _, a| {
        lua_action(
            a,
            "http-res",
            "http-response",
            "'http-response' expects 'deny', 'set-header' or another HAProxy action",
        )
        .map(HttpResponseAction::Lua)
    }),
    kwd("cache-store", |s, loc, a| {
        s.cache_action_args(loc, a)
            .map(|name| HttpResponseAction::CacheStore(CacheRef { name, idx: 0 }))
    }),
    kwd("send-spoe-group", |_, _, a| {
        spoe_group_args(a)
            .map(|(engine, group)| HttpResponseAction::SendSpoeGroup { engine, group })
    }),
    kwd("set-header", |s, _, a| {
        header_args(a, s.http_stage(true))
            .map(|(name, fmt)| HttpResponseAction::SetHeader { name, fmt })
    }),
    kwd("add-header", |s, _, a| {
        header_args(a, s.http_stage(true))
            .map(|(name, fmt)| HttpResponseAction::AddHeader { name, fmt })
    }),
    kwd("del-header", |_, _, a| {
        del_header_args(a, "http-response")
            .map(|(name, how)| HttpResponseAction::DelHeader { name, how })
    }),
    kwd("deny", |s, loc, a| {
        let st = s.http_stage(true);
        s.deny_args(loc, a, 502, st).map(HttpResponseAction::Deny)
    }),
    kwd("allow", |_, _, a| {
        allow_args(a, "http-response").map(|()| HttpResponseAction::Allow)
    }),
    kwd("set-status", |s, _, a| {
        set_status_args(a, s.http_stage(true), "http-response")
    }),
    kwd("replace-header", |s, _, a| {
        header_rewrite_args(a, s.http_stage(true)).map(HttpResponseAction::ReplaceHeader)
    }),
    kwd("replace-value", |s, _, a| {
        header_rewrite_args(a, s.http_stage(true)).map(HttpResponseAction::ReplaceValue)
    }),
    kwd("strict-mode", |_, _, a| {
        strict_mode_args(a, "http-response").map(HttpResponseAction::StrictMode)
    }),
    kwd("set-log-level", |_, _, a| {
        log_level_args(a, "http-response").map(HttpResponseAction::SetLogLevel)
    }),
    kwd("return", |s, loc, a| {
        let st = s.http_stage(true);
        s.reply_args(loc, a, 200, st)
            .map(HttpResponseAction::Return)
    }),
    kwd("silent-drop", |_, _, a| {
        no_more_args(a, "http-response", "silent-drop").map(|()| HttpResponseAction::SilentDrop)
    }),
    kwd("redirect", |s, _, a| {
        match redirect_args(a, Some(s.http_stage(true)))? {
            HttpRequestAction::Redirect { kind, .. }
                if kind != crate::config::model::RedirectKind::Location =>
            {
                Err("response only supports redirect type 'location'".to_string())
            }
            HttpRequestAction::Redirect {
                kind,
                fmt,
                code,
                drop_query,
                append_slash,
            } => Ok(HttpResponseAction::Redirect {
                kind,
                fmt,
                code,
                drop_query,
                append_slash,
            }),
            _ => Err("expects a redirect rule".to_string()),
        }
    }),
    kwd("set-tos", |_, _, a| {
        sock_value_args(a, "http-response", "set-tos").map(HttpResponseAction::SetTos)
    }),
    kwd("set-mark", |_, _, a| {
        sock_value_args(a, "http-response", "set-mark").map(HttpResponseAction::SetMark)
    }),
    kwd("set-nice", |_, _, a| {
        nice_args(a, "http-response").map(HttpResponseAction::SetNice)
    }),
    // ---- Captures (what goes around the sample engine). ----
    kwd("capture", |s, _, a| {
        s.capture_rule(a, false)
            .map(|(expr, slot)| HttpResponseAction::Capture { expr, slot })
    }),
    // Variables (issue 17), as in `HTTP_REQUEST`.
    kwd("set-var", |s, _, a| {
        http_var_rule(a, s.http_stage(true), "http-response").map(HttpResponseAction::Var)
    }),
    kwd("wait-for-body", |_, _, a| {
        wait_for_body_args(a, "http-response").map(HttpResponseAction::WaitForBody)
    }),
    kwd("set-map", |s, _, a| {
        map_rule(a, s.http_stage(true)).map(HttpResponseAction::Map)
    }),
    kwd("del-map", |s, _, a| {
        map_rule(a, s.http_stage(true)).map(HttpResponseAction::Map)
    }),
    kwd("add-acl", |s, _, a| {
        map_rule(a, s.http_stage(true)).map(HttpResponseAction::Map)
    }),
    kwd("del-acl", |s, _, a| {
        map_rule(a, s.http_stage(true)).map(HttpResponseAction::Map)
    }),
    kwd("track-sc", |s, loc, a| {
        s.http_table_action(true, loc, a)
            .map(HttpResponseAction::Table)
    }),
    kwd("sc-inc-gpc", |s, loc, a| {
        s.http_table_action(true, loc, a)
            .map(HttpResponseAction::Table)
    }),
    kwd("sc-set-gpt", |s, loc, a| {
        s.http_table_action(true, loc, a)
            .map(HttpResponseAction::Table)
    }),
];

impl State<'_> {
    /// A stick table action of an `http-request` (or `http-response`)
    /// rule: `args[0]` the action word, the condition split off.
    fn http_table_action(
        &mut self,
        response: bool,
        loc: &Loc,
        args: &[String],
    ) -> Result<crate::config::model::TableAction, String> {
        use super::stickkw::RuleSet;
        let set = if response {
            RuleSet::HttpResponse
        } else {
            RuleSet::HttpRequest
        };
        crate::sample::stick::context(set.arg_ctx());
        let stage = self.http_stage(response);
        let (action, used) = self.table_action(set, args, stage, loc)?;
        if let Some(extra) = args.get(used) {
            let rule = if response {
                "http-response"
            } else {
                "http-request"
            };
            return Err(format!(
                "{WHOLE_MESSAGE}'{rule} {}' expects either 'if' or 'unless' followed by a condition but found '{extra}'.",
                args[0]
            ));
        }
        Ok(action)
    }
}

/// `send-spoe-group <engine> <group>` of `http-request` and
/// `http-response`.
fn spoe_group_args(a: &[String]) -> Result<(String, String), String> {
    match a {
        [engine, group] => Ok((engine.clone(), group.clone())),
        _ => Err("expects 2 arguments: <engine-id> <group-id>".to_string()),
    }
}
