//! TLS keywords: the options of `bind ... ssl`, the TLS options of
//! `server` lines, and the `ssl-*` defaults of the global section.
//! Certificates are loaded here, so a bad file is reported at its line.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::tls::upstream::{ServerTlsOpts, SniSpec, UpstreamTls};
use crate::tls::{BindTls, LoadedCert, TlsVersion, Verify, certs};

/// Bind options that take no argument and change nothing with rustls
/// (the protocols they disable are never offered, or they are tuning).
const BIND_NOOPS: &[&str] = &[
    "no-sslv3",
    "no-tlsv10",
    "no-tlsv11",
    "prefer-client-ciphers",
];

/// What a `bind` line's options make: its TLS setup (`None`: plain TCP),
/// `accept-proxy`, `proto`, `v6only`/`v4v6` and the UNIX socket file's
/// `mode` and owner.
pub(super) struct BindOptions {
    pub(super) tls: Option<Arc<crate::tls::ListenTls>>,
    pub(super) accept_proxy: bool,
    pub(super) proto: BindProto,
    pub(super) v6: BindV6,
    pub(super) perms: crate::config::model::UnixPerms,
    /// `id <n>` (`so_id`) and `name <n>` (`so_name`).
    pub(super) id: Option<u32>,
    pub(super) name: Option<String>,
    /// `backlog`, `maxconn`, `defer-accept`, `tfo`, ...
    pub(super) sock: crate::config::model::BindSock,
}

impl State<'_> {
    fn base_path(base: Option<&PathBuf>, p: &str) -> PathBuf {
        // Relative to `default-path` (the base may be relative itself).
        crate::sys::cfgdir::resolve(match base {
            Some(b) if !p.starts_with('/') => b.join(p),
            _ => PathBuf::from(p),
        })
    }

    /// The options after the address of a `bind` line: the TLS
    /// configuration when `ssl` is set. Err after reporting.
    pub(super) fn bind_options(
        &mut self,
        loc: &Loc,
        text: &str,
        words: &[String],
    ) -> Result<BindOptions, ()> {
        let g = self.global.ssl.clone();
        let mut ssl = false;
        let mut certs: Vec<LoadedCert> = Vec::new();
        let mut crt_given = false;
        let mut bt = BindTls {
            session_cache: self.global.ssl_cachesize.map(|n| n as usize),
            max_fragment: self.global.ssl_hard_maxrecord.map(|n| n as usize),
            ..BindTls::default()
        };
        bt.suites.ciphers = g.bind_ciphers.clone();
        // A bind line's own `curves` replaces it.
        bt.suites.curves = g.bind_curves.clone();
        bt.suites.ciphersuites = g.bind_ciphersuites.clone();
        let mut alpn: Option<String> = None;
        let mut ca_file: Option<PathBuf> = None;
        let mut warnings = Vec::new();
        let mut ok = true;
        let mut accept_proxy = false;
        let mut proto = BindProto::Auto;
        let (mut v6only, mut v4v6) = (false, false);
        let mut perms = crate::config::model::UnixPerms::default();
        let (mut id, mut name) = (None, None);
        let mut sock = crate::config::model::BindSock::default();
        let mut crl_file: Option<PathBuf> = None;
        let mut ca_verify_file: Option<PathBuf> = None;
        // HAProxy's messages about the listener's own options name the
        // section: `'bind <addr>' in section 'frontend' : ...`.
        let section = format!("'bind {text}' in section '{}'", self.px().kind.keyword());
        // `ssl-default-bind-options` come first, the line's own override.
        let defaults: Vec<String> = g.bind_options.clone();
        for (from_global, list) in [(true, &defaults[..]), (false, words)] {
            let mut i = 0;
            while let Some(w) = list.get(i) {
                let arg = list.get(i + 1).map(String::as_str);
                let need = |this: &mut Self| -> Option<&str> {
                    match arg {
                        Some(a) if !a.is_empty() => Some(a),
                        _ => {
                            this.alert(loc, format!("'bind {text}' : '{w}' : missing value."));
                            None
                        }
                    }
                };
                let step = match w.as_str() {
                    "ssl" => {
                        ssl = true;
                        1
                    }
                    "accept-proxy" => {
                        accept_proxy = true;
                        1
                    }
                    // Socket options, not TLS ones: HAProxy refuses them in
                    // `ssl-default-bind-options` too.
                    "v6only" if !from_global => {
                        v6only = true;
                        1
                    }
                    "v4v6" if !from_global => {
                        v4v6 = true;
                        1
                    }
                    // The UNIX socket file's; HAProxy 2.6 takes them on any
                    // bind and they mean nothing on a TCP or abstract one.
                    "mode" if !from_global => {
                        let Some(a) = need(self) else {
                            ok = false;
                            break;
                        };
                        match u32::from_str_radix(a, 8).ok().filter(|m| *m <= 0o7777) {
                            Some(m) => perms.mode = Some(m),
                            None => {
                                self.alert(
                                    loc,
                                    format!("'bind {text}' : 'mode' : invalid mode '{a}' (octal integer expected)."),
                                );
                                ok = false;
                            }
                        }
                        2
                    }
                    "uid" | "gid" | "user" | "group" if !from_global => {
                        match super::globalkw::socket_owner(w, arg) {
                            Ok(id) if w == "uid" || w == "user" => perms.uid = Some(id),
                            Ok(id) => perms.gid = Some(id),
                            Err(e) => {
                                self.alert(loc, format!("'bind {text}' : {e}."));
                                ok = false;
                            }
                        }
                        2
                    }
                    "crt" | "crt-list" => {
                        crt_given = true;
                        let Some(a) = need(self) else {
                            ok = false;
                            break;
                        };
                        let path = Self::base_path(g.crt_base.as_ref(), a);
                        let loaded = if w == "crt-list" {
                            certs::load_crt_list(&path, g.crt_base.as_deref(), g.ca_base.as_deref())
                        } else if path.is_dir() {
                            certs::load_dir(&path)
                        } else {
                            certs::load_pem(&path).map(|c| vec![c])
                        };
                        match loaded {
                            Ok(c) => certs.extend(c),
                            Err(e) => {
                                self.alert(loc, format!("'bind {text}' : {e}."));
                                ok = false;
                            }
                        }
                        2
                    }
                    "alpn" => {
                        let Some(a) = need(self) else {
                            ok = false;
                            break;
                        };
                        alpn = Some(a.to_string());
                        2
                    }
                    "proto" => {
                        let Some(a) = need(self) else {
                            ok = false;
                            break;
                        };
                        proto = match a {
                            "h1" => BindProto::H1,
                            "h2" => BindProto::H2,
                            _ => {
                                self.alert(
                                    loc,
                                    format!("'bind {text}' : 'proto' : unknown MUX protocol '{a}' (sluice knows 'h1' and 'h2')."),
                                );
                                ok = false;
                                break;
                            }
                        };
                        2
                    }
                    "ssl-min-ver" | "ssl-max-ver" => {
                        let Some(a) = need(self) else {
                            ok = false;
                            break;
                        };
                        match TlsVersion::parse(a) {
                            Some(v) if w == "ssl-min-ver" => bt.suites.min_ver = Some(v),
                            Some(v) => bt.suites.max_ver = Some(v),
                            None => {
                                self.alert(
                                    loc,
                                    format!("'bind {text}' : '{w}' : unknown value '{a}', expects 'SSLv3', 'TLSv1.0', 'TLSv1.1', 'TLSv1.2' or 'TLSv1.3'."),
                                );
                                ok = false;
                            }
                        }
                        2
                    }
                    "strict-sni" => {
                        bt.strict_sni = true;
                        1
                    }
                    "no-tls-tickets" => {
                        bt.no_tickets = true;
                        1
                    }
                    "no-tlsv12" => {
                        bt.suites.min_ver = Some(TlsVersion::Tls13);
                        1
                    }
                    "no-tlsv13" => {
                        bt.suites.max_ver = Some(TlsVersion::Tls12);
                        1
                    }
                    "ciphers" | "ciphersuites" => {
                        let Some(a) = need(self) else {
                            ok = false;
                            break;
                        };
                        if w == "ciphers" {
                            bt.suites.ciphers = Some(a.to_string());
                        } else {
                            bt.suites.ciphersuites = Some(a.to_string());
                        }
                        2
                    }
                    "verify" => {
                        let Some(a) = need(self) else {
                            ok = false;
                            break;
                        };
                        bt.verify = match a {
                            "none" => Verify::None,
                            "optional" => Verify::Optional,
                            "required" => Verify::Required,
                            _ => {
                                self.alert(
                                    loc,
                                    format!("'bind {text}' : 'verify' : unknown verify method '{a}', only 'none', 'optional', and 'required' are supported."),
                                );
                                ok = false;
                                Verify::None
                            }
                        };
                        2
                    }
                    "ca-file" => {
                        let Some(a) = need(self) else {
                            ok = false;
                            break;
                        };
                        ca_file = Some(Self::base_path(g.ca_base.as_ref(), a));
                        2
                    }
                    "name" if !from_global => {
                        match arg.filter(|a| !a.is_empty()) {
                            Some(a) => name = Some(a.to_string()),
                            None => {
                                self.alert(loc, format!("{section} : 'name' : missing name"));
                                ok = false;
                            }
                        }
                        2
                    }
                    "id" if !from_global => {
                        let why = match arg.filter(|a| !a.is_empty()) {
                            None => Some("'id' : expects an integer argument".to_string()),
                            Some(a) => match a.parse::<i64>() {
                                Err(_) => {
                                    Some(format!("'id' : expects an integer argument, found '{a}'"))
                                }
                                Ok(n) if n <= 0 => {
                                    Some("'id' : custom id has to be > 0".to_string())
                                }
                                Ok(n) => {
                                    id = u32::try_from(n).ok();
                                    None
                                }
                            },
                        };
                        if let Some(why) = why {
                            self.alert(loc, format!("{section} : {why}"));
                            ok = false;
                        }
                        2
                    }
                    "force-tlsv12" | "force-tlsv13" => {
                        let v = if w == "force-tlsv12" {
                            TlsVersion::Tls12
                        } else {
                            TlsVersion::Tls13
                        };
                        bt.suites.min_ver = Some(v);
                        bt.suites.max_ver = Some(v);
                        1
                    }
                    "force-sslv3" | "force-tlsv10" | "force-tlsv11" => {
                        self.alert(
                            loc,
                            format!("'bind {text}' : '{w}' : {}", super::sockkw::OLD_TLS),
                        );
                        ok = false;
                        1
                    }
                    "curves" | "ecdhe" => {
                        let Some(a) = arg.filter(|a| !a.is_empty()) else {
                            let what = if w == "curves" {
                                "curve suite"
                            } else {
                                "named curve"
                            };
                            self.alert(loc, format!("{section} : '{w}' : missing {what}"));
                            ok = false;
                            break;
                        };
                        bt.suites.curves = Some(a.to_string());
                        2
                    }
                    "no-ca-names" => {
                        bt.no_ca_names = true;
                        1
                    }
                    "crl-file" | "ca-verify-file" => {
                        let Some(a) = need(self) else {
                            ok = false;
                            break;
                        };
                        let p = Self::base_path(g.ca_base.as_ref(), a);
                        if w == "crl-file" {
                            crl_file = Some(p);
                        } else {
                            ca_verify_file = Some(p);
                        }
                        2
                    }
                    sockopt if !from_global && super::sockkw::is_bind_sockopt(sockopt) => {
                        match super::sockkw::bind_sockopt(sockopt, arg, &mut sock) {
                            Ok(n) => n,
                            Err(why) => {
                                self.alert(loc, format!("{section} : {why}"));
                                ok = false;
                                break;
                            }
                        }
                    }
                    ign if let Some((n, why)) = kw::ignored(kw::BIND_IGNORED, ign) => {
                        // A notice, not a warning: `zero-warning` setups
                        // keep starting.
                        self.diags.push(Diagnostic::parsing(
                            Level::Notice,
                            loc,
                            format!("'bind {text}' : '{ign}' is accepted and ignored: {why}."),
                        ));
                        1 + n
                    }
                    noop if BIND_NOOPS.contains(&noop) => 1,
                    other if from_global => {
                        self.alert(
                            loc,
                            format!("'ssl-default-bind-options' : unknown or unsupported option '{other}'."),
                        );
                        ok = false;
                        break;
                    }
                    other
                        if kw::BIND_UNSUPPORTED.contains(&other)
                            || kw::haproxy_has(kw::Kind::Bind, other) =>
                    {
                        self.alert(
                            loc,
                            format!(
                                "'bind {text}' : '{other}' option is not supported by sluice yet"
                            ),
                        );
                        ok = false;
                        break;
                    }
                    other => {
                        let sugg = suggest::suffix(
                            other,
                            kw::BIND_SUPPORTED
                                .iter()
                                .chain(kw::BIND_UNSUPPORTED)
                                .copied(),
                        );
                        // HAProxy names the section for a peers' bind.
                        let at = if matches!(self.section, Section::Peers(_)) {
                            " in section 'peers':"
                        } else {
                            ""
                        };
                        self.alert(
                            loc,
                            format!("'bind {text}'{at} unknown keyword '{other}'{sugg}"),
                        );
                        ok = false;
                        break;
                    }
                };
                i += step;
            }
        }
        if !ok {
            return Err(());
        }
        let v6 = match (v6only, v4v6) {
            (true, _) => BindV6::V6Only,
            (false, true) => BindV6::V4V6,
            (false, false) => BindV6::System,
        };
        if !ssl {
            if crt_given {
                self.warn(
                    loc,
                    format!("'bind {text}' : 'crt' given without 'ssl': the listener is plain TCP, add 'ssl' to enable TLS."),
                );
            }
            return Ok(BindOptions {
                tls: None,
                accept_proxy,
                proto,
                v6,
                perms,
                id,
                name,
                sock,
            });
        }
        if certs.is_empty() {
            if self.peers_no_certificate(text) {
                return Err(());
            }
            let px = self.px().name.clone();
            self.alert(
                loc,
                format!(
                    "Proxy '{px}': no SSL certificate specified for bind '{text}' (use 'crt')."
                ),
            );
            return Err(());
        }
        // `ca-verify-file`: more roots to verify with (rustls names them
        // in the certificate request too, unless `no-ca-names`).
        let mut roots: Option<rustls::RootCertStore> = None;
        for ca in ca_file.iter().chain(&ca_verify_file) {
            match certs::load_ca(ca) {
                Ok(r) => roots
                    .get_or_insert_with(rustls::RootCertStore::empty)
                    .roots
                    .extend(r.roots),
                Err(e) => {
                    self.alert(loc, format!("'bind {text}' : {e}."));
                    return Err(());
                }
            }
        }
        bt.ca = roots.map(Arc::new);
        if let Some(crl) = &crl_file {
            match certs::load_crls(crl) {
                Ok(c) => bt.crls = c,
                Err(e) => {
                    self.alert(loc, format!("'bind {text}' : {e}."));
                    return Err(());
                }
            }
        }
        bt.alpn = match &alpn {
            Some(list) => crate::tls::alpn_protocols(list, true, &mut warnings),
            None => Vec::new(),
        };
        bt.certs = certs;
        let built = bt.listen_tls(&mut warnings);
        for w in warnings {
            match w.strip_prefix(crate::tls::NOTICE) {
                Some(n) => self.diags.push(Diagnostic::parsing(
                    Level::Notice,
                    loc,
                    format!("'bind {text}' : {n}"),
                )),
                None => self.warn(loc, format!("'bind {text}' : {w}")),
            }
        }
        match built {
            Ok(cfg) => Ok(BindOptions {
                tls: Some(Arc::new(cfg)),
                accept_proxy,
                proto,
                v6,
                perms,
                id,
                name,
                sock,
            }),
            Err(e) => {
                self.alert(loc, format!("'bind {text}' : {e}"));
                Err(())
            }
        }
    }

    /// One TLS option of a `server` / `default-server` line; returns the
    /// number of words used.
    pub(super) fn server_tls_option(
        &mut self,
        w: &str,
        v: Option<&str>,
        tls: &mut Option<ServerTlsOpts>,
    ) -> Result<usize, String> {
        let g = &self.global.ssl;
        let need = || match v {
            Some(a) if !a.is_empty() => Ok(a),
            _ => Err(format!("'{w}' expects an argument.")),
        };
        // Options other than `ssl` itself may come before it (HAProxy
        // keeps them for when `ssl` is set); they are kept the same way.
        if tls.is_none() {
            let mut t = ServerTlsOpts {
                enabled: false,
                verify_required: !g.server_verify_none,
                suites: crate::tls::Suites {
                    ciphers: g.server_ciphers.clone(),
                    ciphersuites: g.server_ciphersuites.clone(),
                    ..Default::default()
                },
                ..Default::default()
            };
            // `ssl-default-server-options`: the version bounds.
            let mut it = g.server_options.iter();
            while let Some(o) = it.next() {
                match o.as_str() {
                    "ssl-min-ver" => {
                        t.suites.min_ver = it.next().and_then(|v| TlsVersion::parse(v))
                    }
                    "ssl-max-ver" => {
                        t.suites.max_ver = it.next().and_then(|v| TlsVersion::parse(v))
                    }
                    "no-tlsv12" => t.suites.min_ver = Some(TlsVersion::Tls13),
                    "no-tlsv13" => t.suites.max_ver = Some(TlsVersion::Tls12),
                    _ => {}
                }
            }
            *tls = Some(t);
        }
        let Some(t) = tls.as_mut() else {
            return Err(format!("'{w}' : internal error"));
        };
        Ok(match w {
            "ssl" => {
                t.enabled = true;
                t.no_ssl = false;
                1
            }
            "no-ssl" => {
                t.enabled = false;
                t.no_ssl = true;
                1
            }
            "verify" => {
                t.verify_required = match need()? {
                    "none" => false,
                    "required" => true,
                    other => {
                        return Err(format!(
                            "'verify' : unknown verify method '{other}', only 'none' and 'required' are supported."
                        ));
                    }
                };
                2
            }
            "ca-file" => {
                let p = Self::base_path(g.ca_base.as_ref(), need()?);
                t.ca_file = Some(p.display().to_string());
                2
            }
            "crt" => {
                let p = Self::base_path(g.crt_base.as_ref(), need()?);
                t.crt = Some(p.display().to_string());
                2
            }
            "sni" => {
                let e = need()?;
                t.sni = Some(SniSpec::parse(e).ok_or_else(|| {
                    format!("'sni' : sluice supports 'str(<name>)' and 'req.hdr(host)' only (got '{e}').")
                })?);
                2
            }
            "alpn" => {
                t.alpn = Some(need()?.to_string());
                2
            }
            "ssl-min-ver" | "ssl-max-ver" => {
                let a = need()?;
                let v = TlsVersion::parse(a).ok_or_else(|| {
                    format!("'{w}' : unknown value '{a}', expects 'SSLv3', 'TLSv1.0', 'TLSv1.1', 'TLSv1.2' or 'TLSv1.3'.")
                })?;
                if w == "ssl-min-ver" {
                    t.suites.min_ver = Some(v);
                } else {
                    t.suites.max_ver = Some(v);
                }
                2
            }
            "ciphers" => {
                t.suites.ciphers = Some(need()?.to_string());
                2
            }
            "ciphersuites" => {
                t.suites.ciphersuites = Some(need()?.to_string());
                2
            }
            "force-tlsv12" | "force-tlsv13" => {
                let v = if w == "force-tlsv12" {
                    TlsVersion::Tls12
                } else {
                    TlsVersion::Tls13
                };
                t.suites.min_ver = Some(v);
                t.suites.max_ver = Some(v);
                1
            }
            "no-tlsv12" => {
                t.suites.min_ver = Some(TlsVersion::Tls13);
                1
            }
            "no-tlsv13" => {
                t.suites.max_ver = Some(TlsVersion::Tls12);
                1
            }
            // rustls never offers them.
            "no-sslv3" | "no-tlsv10" | "no-tlsv11" => 1,
            "force-sslv3" | "force-tlsv10" | "force-tlsv11" => {
                return Err(format!(
                    "'{w}' : TLS versions below TLSv1.2 are not supported by sluice (rustls speaks TLSv1.2 and TLSv1.3 only), a server forced to one could not be reached."
                ));
            }
            "crl-file" => {
                let p = Self::base_path(g.ca_base.as_ref(), need()?);
                t.crl_file = Some(p.display().to_string());
                2
            }
            "ssl-reuse" | "no-ssl-reuse" => {
                t.no_reuse = w == "no-ssl-reuse";
                1
            }
            "tls-tickets" | "no-tls-tickets" => {
                t.no_tickets = w == "no-tls-tickets";
                1
            }
            "verifyhost" => {
                t.verifyhost = Some(need()?.to_string());
                2
            }
            "no-verifyhost" => {
                t.verifyhost = None;
                1
            }
            "check-sni" => {
                t.check_sni = Some(need()?.to_string());
                2
            }
            "check-alpn" => {
                t.check_alpn = Some(need()?.to_string());
                2
            }
            _ => 1,
        })
    }

    /// The TLS of a server line, built (CA and client certificate
    /// loaded); `h2`: the server has `proto h2`.
    pub(super) fn server_tls(
        &mut self,
        opts: &ServerTlsOpts,
        h2: bool,
    ) -> Result<Option<Arc<UpstreamTls>>, String> {
        if !opts.enabled {
            return Ok(None);
        }
        let mut warnings = Vec::new();
        let built = UpstreamTls::new(opts, h2, &mut warnings);
        for w in warnings {
            match w.strip_prefix(crate::tls::NOTICE) {
                Some(n) => tracing::info!("server option: {n}"),
                None => tracing::warn!("server option: {w}"),
            }
        }
        built.map(|u| Some(Arc::new(u)))
    }

    /// `ssl-default-*`, `ssl-server-verify`, `crt-base`, `ca-base` in the
    /// global section.
    pub(super) fn global_ssl(&mut self, loc: &Loc, words: &[String]) {
        let k = words[0].as_str();
        let arg = words.get(1).map(String::as_str).filter(|a| !a.is_empty());
        let Some(a) = arg else {
            if k == "ssl-default-bind-curves" {
                return self.alert(
                    loc,
                    format!("global statement '{k}' expects a curves suite as an arguments."),
                );
            }
            return self.alert(loc, format!("'{k}' expects an argument."));
        };
        let g = &mut self.global.ssl;
        match k {
            "ssl-default-bind-options" => g.bind_options = words[1..].to_vec(),
            "ssl-default-server-options" => g.server_options = words[1..].to_vec(),
            "ssl-default-bind-ciphers" => g.bind_ciphers = Some(a.to_string()),
            "ssl-default-bind-curves" => g.bind_curves = Some(a.to_string()),
            "ssl-default-bind-ciphersuites" => g.bind_ciphersuites = Some(a.to_string()),
            "ssl-default-server-ciphers" => g.server_ciphers = Some(a.to_string()),
            "ssl-default-server-ciphersuites" => g.server_ciphersuites = Some(a.to_string()),
            "crt-base" => g.crt_base = Some(Path::new(a).to_path_buf()),
            "ca-base" => g.ca_base = Some(Path::new(a).to_path_buf()),
            "ssl-server-verify" => match a {
                "none" => g.server_verify_none = true,
                "required" => g.server_verify_none = false,
                _ => self.alert(
                    loc,
                    "'ssl-server-verify' expects 'none' or 'required' as argument.",
                ),
            },
            _ => {}
        }
    }
}
