//! `fcgi-app` sections: how the requests of a backend with `use-fcgi-app`
//! become FastCGI requests (its document root, script names, the
//! parameters set and the fields passed), as checked configuration.

use crate::acl::{AclDef, Condition};
use crate::config::model::LogFmt;
use crate::loc::Loc;

/// One `fcgi-app <name>` section.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FcgiApp {
    pub(crate) name: String,
    pub(crate) loc: Loc,
    /// `docroot <path>` (mandatory: checked once every file is read).
    pub(crate) docroot: Option<String>,
    /// `index <script>`: appended to a path that ends with `/`.
    pub(crate) index: Option<String>,
    /// `path-info <regex>`: its first capture is the script name, its
    /// second the path info (checked to compile when parsed).
    pub(crate) path_info: Option<String>,
    /// `set-param <name> <fmt> [cond]`, in order.
    pub(crate) set_params: Vec<(String, LogFmt, Option<Condition>)>,
    /// `pass-header <name> [cond]`: fields otherwise left out
    /// (`Authorization`, `Proxy-Authorization`).
    pub(crate) pass_headers: Vec<(String, Option<Condition>)>,
    /// `option keep-conn` (on unless `no option keep-conn`).
    pub(crate) keep_conn: bool,
    /// `option get-values`, `option mpxs-conns`, `option max-reqs <n>`:
    /// accepted; sluice sends one request at a time on a connection.
    pub(crate) max_reqs: u32,
    /// The section's own ACLs (`acl` lines, and the anonymous and
    /// predefined ones its conditions use).
    pub(crate) acls: Vec<AclDef>,
}

impl FcgiApp {
    pub(crate) fn new(name: String, loc: Loc) -> FcgiApp {
        FcgiApp {
            name,
            loc,
            docroot: None,
            index: None,
            path_info: None,
            set_params: Vec::new(),
            pass_headers: Vec::new(),
            keep_conn: true,
            max_reqs: 1,
            acls: Vec::new(),
        }
    }
}

/// The checks once every section is read, with HAProxy's messages: each
/// application has a document root, each `use-fcgi-app` names one, in an
/// HTTP backend with FastCGI servers, and each FastCGI server's backend
/// uses one.
pub(crate) fn check(
    config: &crate::config::model::Config,
    diags: &mut Vec<crate::config::diag::Diagnostic>,
) {
    use crate::config::diag::Diagnostic;
    use crate::config::model::Mode;
    for app in &config.global.fcgi_apps {
        if app.docroot.is_none() {
            let msg = format!("fcgi-app '{}': no docroot configured.", app.name);
            diags.push(Diagnostic::alert(None, msg));
        }
    }
    for p in config.proxies.iter().filter(|p| p.kind.has_backend()) {
        let used = p.extras.use_fcgi_app.as_deref();
        let fcgi_servers: Vec<_> = p.servers.iter().filter(|s| s.opts.fcgi).collect();
        if p.mode != Mode::Http {
            for s in &fcgi_servers {
                diags.push(Diagnostic::alert(
                    None,
                    format!(
                        "{} '{}' : MUX protocol 'fcgi' is not usable for server '{}' at [{}].",
                        crate::config::parser::type_str(p.kind),
                        p.name,
                        s.name,
                        s.loc
                    ),
                ));
            }
            if used.is_some() {
                diags.push(Diagnostic::alert(
                    None,
                    format!(
                        "proxy '{}': FCGI application cannot be used in non-HTTP mode.",
                        p.name
                    ),
                ));
            }
            continue;
        }
        match used {
            Some(name) if !config.global.fcgi_apps.iter().any(|a| a.name == name) => {
                diags.push(Diagnostic::alert(
                    None,
                    format!("proxy '{}' : fcgi-app '{name}' not found.", p.name),
                ));
            }
            Some(_) if fcgi_servers.is_empty() => diags.push(Diagnostic::alert(
                None,
                format!(
                    "proxy '{}': FCGI app configured but no FCGI server found.",
                    p.name
                ),
            )),
            Some(_) => {}
            None => {
                for s in &fcgi_servers {
                    diags.push(Diagnostic::alert(
                        None,
                        format!(
                            "proxy '{}': FCGI server '{}' has no FCGI app configured.",
                            p.name, s.name
                        ),
                    ));
                }
            }
        }
    }
}
