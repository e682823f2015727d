//! Statistics and the runtime API: `show stat` CSV, `show info`, the stats
//! socket (CLI) and the HTTP stats page. Everything reads the runtime's
//! atomic counters and the current snapshot; nothing here is on the
//! request path.

pub(crate) mod admin;
pub(crate) mod csv;
pub(crate) mod errors;
pub(crate) mod info;
pub(crate) mod page;
pub(crate) mod prometheus;
pub(crate) mod sess;

/// A small hand-built config shared by the unit tests: `web_fe` → `web_be`
/// (s1 with `maxconn 512`, s2 unlimited, both checked) and a `listen stats`
/// without servers, global `maxconn 4096`.
#[cfg(test)]
pub(crate) mod fixture {
    use std::sync::Arc;

    use crate::config::model::{CheckParams, Config, Loc, Mode, Proxy, ProxyKind, Server};
    use crate::snapshot::runtime::Runtime;

    fn loc() -> Loc {
        Loc {
            file: Arc::from("test.cfg"),
            line: 1,
        }
    }

    fn server(name: &str, port: u16, maxconn: u32) -> Server {
        Server {
            name: name.into(),
            addr_text: format!("127.0.0.1:{port}"),
            addr: ([127, 0, 0, 1], port).into(),
            unix: None,
            weight: 1,
            maxconn,
            check: Some(CheckParams::default()),
            opts: Default::default(),
            id: None,
            cookie: None,
            loc: loc(),
            tls: None,
            check_tls: None,
            fqdn: None,
            resolve: None,
            init_addr: None,
            srvrecord: None,
            redir: None,
            agent: None,
        }
    }

    pub(crate) fn config() -> Config {
        let mut cfg = Config::default();
        cfg.global.maxconn = Some(4096);
        let mut fe = Proxy::new("web_fe".into(), ProxyKind::Frontend, loc());
        fe.mode = Mode::Http;
        fe.default_backend = Some(("web_be".into(), loc()));
        let mut be = Proxy::new("web_be".into(), ProxyKind::Backend, loc());
        be.mode = Mode::Http;
        be.servers = vec![server("s1", 17001, 512), server("s2", 17002, 0)];
        let mut st = Proxy::new("stats".into(), ProxyKind::Listen, loc());
        st.mode = Mode::Http;
        cfg.proxies = vec![fe, be, st];
        cfg
    }

    pub(crate) fn runtime() -> Arc<Runtime> {
        Runtime::new(&config(), 2)
    }
}
