//! `fcgi-app` sections and the proxies' `use-fcgi-app`.

use super::rulekw::parse_logfmt;
use super::*;
use crate::config::fcgi::FcgiApp;
use crate::sample::Stage;

impl State<'_> {
    /// `fcgi-app <name>`: a new section (a second one of the same name is
    /// refused, as in HAProxy).
    pub(super) fn start_fcgi_app(&mut self, loc: &Loc, words: &[String]) {
        self.section = Section::Skip;
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            return self.tight(Level::Alert, loc, "'fcgi-app' expects <name> as argument.");
        };
        if let Some(other) = self.global.fcgi_apps.iter().find(|a| a.name == *name) {
            let msg = format!(
                "Parsing [{loc}]: fcgi-app section '{name}' has the same name as another one declared at {}.",
                other.loc
            );
            self.diags.push(Diagnostic::alert(None, msg));
            return;
        }
        self.global
            .fcgi_apps
            .push(FcgiApp::new(name.clone(), loc.clone()));
        self.section = Section::FcgiApp(self.global.fcgi_apps.len() - 1);
    }

    /// A line of an `fcgi-app` section.
    pub(super) fn fcgi_app_line(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let w = |n: usize| words.get(n).map_or("", String::as_str);
        match w(0) {
            "docroot" => {
                if w(1).is_empty() {
                    return self.alert(loc, "'docroot' expects <path> as argument.");
                }
                self.global.fcgi_apps[i].docroot = Some(w(1).to_string());
            }
            "index" => {
                if w(1).is_empty() {
                    return self.alert(loc, "'index' expects <filename> as argument.");
                }
                self.global.fcgi_apps[i].index = Some(w(1).to_string());
            }
            "path-info" => {
                if w(1).is_empty() {
                    return self.alert(loc, "'path-info' expects <regex> as argument.");
                }
                if let Err(e) = regex::bytes::Regex::new(w(1)) {
                    let why = crate::sample::pattern::regex_error(w(1), &e);
                    return self.alert(loc, format!("'{}' : {why}.", w(1)));
                }
                self.global.fcgi_apps[i].path_info = Some(w(1).to_string());
            }
            "set-param" => {
                if w(1).is_empty() || w(2).is_empty() {
                    return self.alert(loc, "'set-param' expects <name> and <value> as arguments.");
                }
                let fmt = match parse_logfmt(w(2), Stage::http_request(false, true)) {
                    Ok(f) => f,
                    Err(e) => return self.alert(loc, format!("'set-param' : {e}")),
                };
                let Some(cond) = self.fcgi_cond(i, loc, w(1), &words[3..]) else {
                    return;
                };
                self.global.fcgi_apps[i]
                    .set_params
                    .push((w(1).to_string(), fmt, cond));
            }
            "pass-header" => {
                if w(1).is_empty() {
                    return self.alert(loc, "'pass-header' expects <name> as arguments.");
                }
                let Some(cond) = self.fcgi_cond(i, loc, w(1), &words[2..]) else {
                    return;
                };
                self.global.fcgi_apps[i]
                    .pass_headers
                    .push((w(1).to_string(), cond));
            }
            "acl" => {
                let name = w(1);
                if name.is_empty() {
                    return self.alert(loc, "'acl' expects an ACL name.");
                }
                if let Err(c) = check_acl_name(name) {
                    return self.alert(
                        loc,
                        format!("character '{c}' is not permitted in acl name '{name}'."),
                    );
                }
                match parse_acl(name, &words[2..], loc.clone()) {
                    Ok(def) => self.global.fcgi_apps[i].acls.push(def),
                    Err(e) => self.alert(
                        loc,
                        format!("error detected while parsing ACL '{name}' : {e}."),
                    ),
                }
            }
            "option" | "no" => self.fcgi_option(i, loc, words),
            // STDERR lines go to sluice's own log (`tracing`); the target
            // is checked as a `log` line's would be.
            "log-stderr" => {
                if w(1).is_empty() {
                    self.alert(loc, "'log-stderr' expects arguments.");
                }
            }
            other => {
                let msg = format!("unknown keyword '{other}' in 'fcgi-app' section");
                self.tight(Level::Alert, loc, msg);
            }
        }
    }

    /// `[no] option keep-conn|get-values|mpxs-conns`, `option max-reqs <n>`.
    fn fcgi_option(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let neg = words[0] == "no";
        let at = usize::from(neg);
        if words.get(at).map(String::as_str) != Some("option") {
            let msg = format!("unknown keyword '{}' in 'fcgi-app' section", words[0]);
            return self.tight(Level::Alert, loc, msg);
        }
        let name = words.get(at + 1).map_or("", String::as_str);
        match name {
            "keep-conn" => self.global.fcgi_apps[i].keep_conn = !neg,
            "get-values" | "mpxs-conns" => {}
            "max-reqs" if !neg => {
                let n = words
                    .get(at + 2)
                    .and_then(|v| parse_u32(v))
                    .filter(|&n| n > 0);
                match n {
                    Some(n) => self.global.fcgi_apps[i].max_reqs = n,
                    None => self.tight(
                        Level::Alert,
                        loc,
                        "option 'max-reqs' expects a strictly positive integer argument.",
                    ),
                }
            }
            _ => self.alert(loc, format!("unknown option '{name}'.")),
        }
    }

    /// The `if|unless` condition after a rule of section `i` (None: the
    /// error was said; Some(None): no condition). Its ACLs are the
    /// section's own and the predefined ones.
    fn fcgi_cond(
        &mut self,
        i: usize,
        loc: &Loc,
        what: &str,
        words: &[String],
    ) -> Option<Option<Condition>> {
        if words.is_empty() {
            return Some(None);
        }
        let app = &self.global.fcgi_apps[i];
        let known: Vec<String> = app.acls.iter().map(|a| a.name.clone()).collect();
        let parsed = parse_condition_at(words, loc, &|n| !known.iter().any(|k| k == n));
        let (cond, anon) = match parsed {
            Ok(c) => c,
            Err(e) => {
                self.alert(loc, format!("'{what}' : {e}."));
                return None;
            }
        };
        let mut extra: Vec<AclDef> = anon;
        for term in cond.groups.iter().flatten() {
            let app = &self.global.fcgi_apps[i];
            if app.acls.iter().chain(&extra).any(|a| a.name == term.name) {
                continue;
            }
            match predefined(&term.name, loc.clone()) {
                Some(def) if PREDEFINED.contains(&term.name.as_str()) => extra.push(def),
                _ => {
                    self.alert(loc, format!("'{what}' : no such ACL : '{}'.", term.name));
                    return None;
                }
            }
        }
        self.global.fcgi_apps[i].acls.extend(extra);
        Some(Some(cond))
    }

    /// `use-fcgi-app <name>` (backends): checked once every section is
    /// read (`config::fcgi::check`).
    pub(super) fn kw_use_fcgi_app(&mut self, loc: &Loc, words: &[String]) {
        let is_backend = self.proxy_kind().is_some_and(|k| k.has_backend());
        if !is_backend {
            return self.alert(
                loc,
                "'use-fcgi-app' only available in backend or listen section",
            );
        }
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            return self.alert(loc, "'use-fcgi-app' expects <name> as argument");
        };
        self.px().extras.use_fcgi_app = Some(name.clone());
    }
}
