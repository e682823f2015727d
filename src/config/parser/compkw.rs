//! `compression`, `filter compression|cache`, and `cache <name>` sections
//! (`total-max-size`, `max-object-size`, `max-age`, `process-vary`,
//! `max-secondary-entries`), with HAProxy 2.6's messages.

use super::*;

impl State<'_> {
    /// `compression algo <a>... | type <t>... | offload`.
    pub(super) fn kw_compression(&mut self, loc: &Loc, words: &[String]) {
        let what = words.get(1).map_or("", String::as_str);
        let in_defaults = self.proxy_kind().is_none();
        let comp = self.px().compression.get_or_insert_with(Default::default);
        match what {
            "algo" => {
                if words.len() < 3 {
                    // HAProxy names the line twice in this one.
                    let msg = format!("parsing [{loc}] : '{}' expects <algorithm>.", words[0]);
                    return self.alert(loc, msg);
                }
                for name in &words[2..] {
                    match CompAlgo::by_name(name) {
                        // HAProxy puts each algorithm in front of the
                        // ones before it.
                        Some(a) => comp.algos.insert(0, a),
                        None => {
                            let msg =
                                format!("'{}' : '{name}' is not a supported algorithm.", words[0]);
                            return self.alert(loc, msg);
                        }
                    }
                }
            }
            "offload" => {
                comp.offload = true;
                if in_defaults {
                    let msg = format!("'{}' : '{what}' ignored in 'defaults' section.", words[0]);
                    self.warn(loc, msg);
                }
            }
            "type" => {
                if words.len() < 3 {
                    let msg = format!("'{}' expects <type>.", words[0]);
                    return self.alert(loc, msg);
                }
                for t in &words[2..] {
                    comp.types.insert(0, t.clone());
                }
            }
            _ => {
                let msg = format!("'{}' expects 'algo', 'type' or 'offload'", words[0]);
                self.alert(loc, msg)
            }
        }
    }

    /// `filter compression`, `filter cache <name>`; HAProxy's other
    /// filters are not supported by sluice yet.
    pub(super) fn kw_filter(&mut self, loc: &Loc, words: &[String]) {
        let Some(kind) = self.proxy_kind() else {
            let msg = format!(
                "parsing [{loc}] : {} is not allowed in a 'default' section.",
                words[0]
            );
            return self.alert(loc, msg);
        };
        let pname = self.px().name.clone();
        let Some(name) = words.get(1).filter(|w| !w.is_empty()) else {
            let msg = format!(
                "parsing [{loc}] : missing argument for '{}' in {} '{pname}'.",
                words[0],
                type_str(kind)
            );
            return self.alert(loc, msg);
        };
        let (kind, used) = match name.as_str() {
            "compression" => {
                if self
                    .px()
                    .filters
                    .iter()
                    .any(|f| f.kind == FilterKind::Compression)
                {
                    let msg = format!(
                        "'filter' : '{pname}: Proxy supports only one compression filter\n'"
                    );
                    return self.alert(loc, msg);
                }
                (FilterKind::Compression, 2)
            }
            "cache" => {
                let Some(cname) = words.get(2).filter(|w| !w.is_empty()) else {
                    let msg = "'filter' : 'cache : expects a <name> argument'";
                    return self.alert(loc, msg);
                };
                let px = self.px();
                // An implicit declaration of the same cache (by an action
                // before) gives way to the explicit one.
                if let Some(i) = px
                    .filters
                    .iter()
                    .position(|f| f.kind == FilterKind::Cache(cname.clone()))
                {
                    if px.filters[i].explicit {
                        let msg = format!(
                            "'filter' : '{pname}: multiple explicit declarations of the cache filter '{cname}''"
                        );
                        return self.alert(loc, msg);
                    }
                    px.filters.remove(i);
                }
                (FilterKind::Cache(cname.clone()), 3)
            }
            "spoe" => return self.spoe_filter(loc, words),
            "fcgi-app" => {
                // `use-fcgi-app` declares the same filter.
                let Some(app) = words.get(2).filter(|w| !w.is_empty()) else {
                    let msg = "'filter' : 'fcgi-app : expects a <name> argument'";
                    return self.alert(loc, msg);
                };
                self.px().extras.use_fcgi_app = Some(app.clone());
                return;
            }
            "trace" | "opentracing" => {
                return self.unsupported(loc, &format!("filter {name}"));
            }
            other => {
                let msg = format!(
                    "'filter' : unknown keyword '{other}'. Registered keywords :\n    \
                     [CACHE] cache\n    [COMP] compression\n    [FCGI] fcgi-app\n    \
                     [  OT] opentracing\n    [SPOE] spoe\n    [TRACE] trace"
                );
                return self.alert(loc, msg);
            }
        };
        if let Some(extra) = words.get(used) {
            let msg = format!("'filter {name}' : unknown keyword '{extra}'.");
            return self.alert(loc, msg);
        }
        self.px().filters.push(FilterDecl {
            kind,
            explicit: true,
            loc: loc.clone(),
        });
    }

    /// `filter spoe [engine <name>] config <file>`: the engine's file is
    /// read now, its errors reported on the `filter` line.
    fn spoe_filter(&mut self, loc: &Loc, words: &[String]) {
        let (mut engine, mut file) = (None, None);
        let mut i = 2;
        while i < words.len() {
            match (words[i].as_str(), words.get(i + 1)) {
                ("engine", Some(v)) => engine = Some(v.clone()),
                ("config", Some(v)) => file = Some(v.clone()),
                (w, _) => {
                    let msg = format!("'filter' : 'spoe' : unknown keyword '{w}'");
                    return self.alert(loc, msg);
                }
            }
            i += 2;
        }
        let Some(file) = file else {
            return self.alert(loc, "'filter' : ''spoe' : missing config file'");
        };
        let env = |n: &str| std::env::var(n).ok();
        use crate::config::spoe::SpoeError;
        let mut warnings = Vec::new();
        let loaded = crate::config::spoe::load(&file, engine.as_deref(), &env, &mut warnings);
        let pname = self.px().name.clone();
        for w in warnings {
            let msg = w.replace("{proxy}", &pname);
            self.diags.push(Diagnostic::warning(None, msg));
        }
        match loaded {
            Ok(e) => {
                // HAProxy's check: an engine of a backend never sends the
                // frontend's events.
                if !self.proxy_kind().is_some_and(|k| k.has_frontend()) {
                    for m in &e.messages {
                        if m.event.as_ref().is_some_and(|(ev, _)| ev.frontend_side()) {
                            let msg = format!(
                                "Proxy '{pname}': frontend event used on a backend proxy at {}.",
                                m.at
                            );
                            self.diags.push(Diagnostic::warning(None, msg));
                        }
                    }
                }
                self.px().extras.spoe.push(e)
            }
            Err(SpoeError::Filter(e)) => self.alert(loc, format!("'filter' : '{e}'")),
            Err(SpoeError::Line(at, e)) => {
                self.alert(&at, e);
                let msg = format!("'filter' : 'Error(s) found in configuration file {file}'");
                self.alert(loc, msg);
            }
        }
    }

    /// The cache filter an action names, declared implicitly unless the
    /// proxy has one for that cache already.
    pub(super) fn cache_filter_for(&mut self, loc: &Loc, name: &str) {
        if self.proxy_kind().is_none() {
            return;
        }
        let kind = FilterKind::Cache(name.to_string());
        let px = self.px();
        if !px.filters.iter().any(|f| f.kind == kind) {
            px.filters.push(FilterDecl {
                kind,
                explicit: false,
                loc: loc.clone(),
            });
        }
    }

    /// `cache <name>`.
    pub(super) fn start_cache(&mut self, loc: &Loc, words: &[String]) {
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            self.tight(
                Level::Alert,
                loc,
                format!("'{}' expects a <name> argument", words[0]),
            );
            self.section = Section::Skip;
            return;
        };
        if let Some(extra) = words.get(2) {
            let _ = extra;
            self.alert(
                loc,
                format!(
                    "'{}' cannot handle unexpected argument '{}'.",
                    words[0], words[2]
                ),
            );
            self.section = Section::Skip;
            return;
        }
        let mut id = name.clone();
        if id.len() > 32 {
            let mut cut = 32;
            while !id.is_char_boundary(cut) {
                cut -= 1;
            }
            id.truncate(cut);
            self.tight(
                Level::Warning,
                loc,
                format!("cache name is limited to 32 characters, truncate to '{id}'."),
            );
        }
        if self.global.caches.iter().any(|c| c.name == id) {
            self.tight(Level::Alert, loc, format!("Duplicate cache name '{id}'."));
            self.section = Section::Skip;
            return;
        }
        self.global.caches.push(CacheSection::new(id, loc.clone()));
        self.section = Section::Cache(self.global.caches.len() - 1);
    }

    pub(super) fn cache_line(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let k = words[0].as_str();
        let arg = words.get(1).map_or("", String::as_str);
        let known = matches!(
            k,
            "total-max-size"
                | "max-age"
                | "max-object-size"
                | "process-vary"
                | "max-secondary-entries"
        );
        if !known {
            let msg = format!("unknown keyword '{k}' in 'cache' section");
            return self.tight(Level::Alert, loc, msg);
        }
        if let Some(extra) = words.get(2) {
            let msg = format!("'{k}' cannot handle unexpected argument '{extra}'.");
            return self.alert(loc, msg);
        }
        match k {
            "total-max-size" => match arg.parse::<u64>() {
                Ok(mb) if mb <= u64::from(u32::MAX >> 20) => {
                    // 1 KiB blocks, as HAProxy counts them.
                    self.global.caches[i].max_blocks = (mb * 1024) as u32;
                }
                Ok(_) => {
                    let msg = format!(
                        "\"total-max-size\" ({arg}) must not be greater than {}",
                        u32::MAX >> 20
                    );
                    self.tight(Level::Alert, loc, msg);
                }
                Err(_) => {
                    let msg = format!("total-max-size wrong value '{arg}'");
                    self.tight(Level::Alert, loc, msg);
                }
            },
            "max-age" => {
                if arg.is_empty() {
                    let msg = format!("'{k}' expects an age parameter in seconds.");
                    self.tight(Level::Warning, loc, msg);
                }
                self.global.caches[i].max_age = atoi(arg).max(0) as u32;
            }
            "max-object-size" => {
                if arg.is_empty() {
                    let msg = format!("'{k}' expects a maximum file size parameter in bytes.");
                    self.tight(Level::Warning, loc, msg);
                }
                match arg.parse::<u32>() {
                    Ok(n) => self.global.caches[i].max_object_size = n,
                    Err(_) => {
                        let msg = format!("max-object-size wrong value '{arg}'");
                        self.tight(Level::Alert, loc, msg);
                    }
                }
            }
            "process-vary" => match arg {
                "on" => self.global.caches[i].process_vary = true,
                "off" => self.global.caches[i].process_vary = false,
                _ => {
                    let msg = format!(
                        "'{k}' expects \"on\" or \"off\" (enable or disable vary processing)."
                    );
                    self.tight(Level::Warning, loc, msg);
                }
            },
            _ => {
                if arg.is_empty() {
                    let msg = format!("'{k}' expects a strictly positive number.");
                    self.tight(Level::Warning, loc, msg);
                }
                match arg.parse::<u32>() {
                    Ok(n) if n > 0 => self.global.caches[i].max_secondary_entries = n,
                    _ => {
                        let msg = format!("max-secondary-entries wrong value '{arg}'");
                        self.tight(Level::Alert, loc, msg);
                    }
                }
            }
        }
    }

    /// The checks HAProxy makes when a `cache` section ends: a size is
    /// required, an object may take half of it at most (a 256th by
    /// default).
    pub(super) fn finish_caches(&mut self) {
        let mut refused = Vec::new();
        for (i, c) in self.global.caches.iter_mut().enumerate() {
            let total = u64::from(c.max_blocks) * 1024;
            if c.max_blocks == 0 {
                refused.push((i, format!("Size not specified for cache '{}'", c.name)));
            } else if c.max_object_size == 0 {
                c.max_object_size = (total >> 8) as u32;
            } else if u64::from(c.max_object_size) > total / 2 {
                refused.push((
                    i,
                    format!(
                        "\"max-object-size\" is limited to an half of \"total-max-size\" => {}",
                        total / 2
                    ),
                ));
            }
        }
        for (_, msg) in refused {
            self.diags.push(Diagnostic::alert(None, msg));
        }
    }

    /// What HAProxy checks of each proxy's filters once every section is
    /// read: the cache a filter names exists, and the compression filter
    /// does not come before a cache's. `compression` without a `filter
    /// compression` declares the filter last, implicitly.
    pub(super) fn check_filters(&mut self) {
        let mut msgs = Vec::new();
        for p in &mut self.proxies {
            let t = type_str(p.kind);
            let mut comp_seen = false;
            for f in &p.filters {
                match &f.kind {
                    FilterKind::Compression => comp_seen = true,
                    FilterKind::Cache(name) => {
                        if !self.global.caches.iter().any(|c| c.name == *name) {
                            msgs.push(format!(
                                "config: {t} '{}': unable to find the cache '{name}' referenced by the filter 'cache'.",
                                p.name
                            ));
                        } else if comp_seen {
                            msgs.push(format!(
                                "config: {t} '{}': unable to enable the compression filter before the cache '{name}'.",
                                p.name
                            ));
                        }
                    }
                }
            }
            if p.compression.is_some() {
                let mut comp = false;
                for f in &p.filters {
                    match f.kind {
                        FilterKind::Compression => comp = true,
                        FilterKind::Cache(_) if comp => {
                            msgs.push(format!(
                                "config: {t} '{}': unable to enable the compression filter before any cache filter.",
                                p.name
                            ));
                            break;
                        }
                        FilterKind::Cache(_) => {}
                    }
                }
                if !comp {
                    p.filters.push(FilterDecl {
                        kind: FilterKind::Compression,
                        explicit: false,
                        loc: p.loc.clone(),
                    });
                }
            }
        }
        for m in msgs {
            self.diags.push(Diagnostic::alert(None, m));
        }
        // Each action's cache, by its place in the sections.
        let caches: Vec<String> = self.global.caches.iter().map(|c| c.name.clone()).collect();
        let idx = |name: &str| caches.iter().position(|c| c == name).unwrap_or(0);
        for p in &mut self.proxies {
            for r in &mut p.http_request {
                if let HttpRequestAction::CacheUse(c) = &mut r.action {
                    c.idx = idx(&c.name);
                }
            }
            for r in &mut p.http_response {
                if let HttpResponseAction::CacheStore(c) = &mut r.action {
                    c.idx = idx(&c.name);
                }
            }
        }
    }
}

/// C's `atoi`: leading digits (after an optional sign), 0 without any.
fn atoi(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let n = digits.parse::<i64>().unwrap_or(0);
    if neg { -n } else { n }
}
