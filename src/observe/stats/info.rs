//! `show info`: HAProxy 2.6.12's key list in its exact order (reference
//! §1.4). Tools match on keys, so every key is printed; what sluice does not
//! have (SSL, pipes, compression, peers...) prints 0, as HAProxy does when
//! the feature is unused.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use crate::observe::stats::csv;
use crate::snapshot::runtime::Runtime;
use crate::snapshot::{DEFAULT_MAXCONN, Snapshot};

/// The version every interface reports (`show version`, `Version:`).
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `Release_date` in HAProxy's `YYYY/MM/DD` form; a release build may set
/// `SLUICE_RELEASE_DATE` at compile time.
pub(crate) const RELEASE_DATE: &str = match option_env!("SLUICE_RELEASE_DATE") {
    Some(d) => d,
    None => "2026/11/30",
};

/// `0d 0h00m08s`, HAProxy's uptime format.
pub(crate) fn format_uptime(secs: u64) -> String {
    format!(
        "{}d {}h{:02}m{:02}s",
        secs / 86400,
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60
    )
}

/// `Name: value` pairs in output order. Values never contain a line break.
/// The global `node`, else the local peer's name (`-L`), else the host
/// name: `show info`'s `node` and the stats page's `stats show-node`.
pub(crate) fn node_name(snap: &Snapshot) -> String {
    snap.global
        .node
        .clone()
        // HAProxy's local peer name defaults to the host name too; -L
        // names the node when the config does not.
        .or_else(|| crate::sys::process::local_peer().map(str::to_string))
        .unwrap_or_else(|| crate::sys::process::hostname().to_string())
}

pub(crate) fn info_fields(rt: &Runtime, snap: &Snapshot) -> Vec<(&'static str, String)> {
    let p = &rt.process;
    let uptime = rt.uptime_secs();
    let maxconn = snap.global.maxconn.unwrap_or(DEFAULT_MAXCONN);
    let nofile = nofile_limit();
    let listeners: usize = snap.frontends().map(|f| f.listeners.len()).sum::<usize>()
        + snap.global.stats_sockets.len();
    let conns = p.conns.cur();
    let (tasks, run_queue) = tokio_load();
    let node = node_name(snap).replace(['\n', '\r'], " ");

    let mut v: Vec<(&'static str, String)> = Vec::with_capacity(72);
    let mut put = |k: &'static str, val: String| v.push((k, val));
    let zero = String::from("0");
    put("Name", "sluice".into());
    put("Version", VERSION.into());
    put("Release_date", RELEASE_DATE.into());
    put("Nbthread", rt.nbthread.to_string());
    put("Nbproc", "1".into());
    put("Process_num", "1".into());
    put("Pid", p.pid.to_string());
    put("Uptime", format_uptime(uptime));
    put("Uptime_sec", uptime.to_string());
    for k in ["Memmax_MB", "PoolAlloc_MB", "PoolUsed_MB", "PoolFailed"] {
        put(k, zero.clone());
    }
    put("Ulimit-n", nofile.to_string());
    put("Maxsock", nofile.to_string());
    // `set maxconn global`'s figure once a supervisor runs.
    let now = match p.maxconn_now.load(Relaxed) {
        0 => maxconn,
        n => n,
    };
    put("Maxconn", now.to_string());
    put("Hard_maxconn", maxconn.to_string());
    put("CurrConns", conns.to_string());
    put("CumConns", p.counts.sum(|s| &s.cum_conns).to_string());
    put("CumReq", p.counts.sum(|s| &s.cum_req).to_string());
    for k in ["MaxSslConns", "CurrSslConns", "CumSslConns"] {
        put(k, zero.clone());
    }
    let (pipes_used, pipes_free, spliced_out) = crate::wire::splice::usage();
    put(
        "Maxpipes",
        snap.global.splice.maxpipes.unwrap_or(0).to_string(),
    );
    put("PipesUsed", pipes_used.to_string());
    put("PipesFree", pipes_free.to_string());
    put("ConnRate", p.counts.conn_rate().rate().to_string());
    put(
        "ConnRateLimit",
        snap.global.maxconnrate.unwrap_or(0).to_string(),
    );
    put("MaxConnRate", p.counts.conn_rate().max().to_string());
    put("SessRate", p.counts.sess_rate().rate().to_string());
    put(
        "SessRateLimit",
        snap.global.maxsessrate.unwrap_or(0).to_string(),
    );
    put("MaxSessRate", p.counts.sess_rate().max().to_string());
    for k in [
        "SslRate",
        "SslRateLimit",
        "MaxSslRate",
        "SslFrontendKeyRate",
        "SslFrontendMaxKeyRate",
        "SslFrontendSessionReuse_pct",
        "SslBackendKeyRate",
        "SslBackendMaxKeyRate",
        "SslCacheLookups",
        "SslCacheMisses",
        "CompressBpsIn",
        "CompressBpsOut",
        "CompressBpsRateLim",
    ] {
        put(k, zero.clone());
    }
    put("Tasks", tasks.to_string());
    put("Run_queue", run_queue.to_string());
    put("Idle_pct", idle_pct(uptime, rt.nbthread).to_string());
    put("node", node);
    // HAProxy omits empty fields; `description` is the only one that can be.
    if let Some(d) = &snap.global.description {
        put("description", d.replace(['\n', '\r'], " "));
    }
    put("Stopping", zero.clone());
    // HAProxy's jobs: connections plus listeners (and a few internal ones).
    put("Jobs", (conns + listeners as u64).to_string());
    put("Unstoppable Jobs", zero.clone());
    put("Listeners", listeners.to_string());
    for k in ["ActivePeers", "ConnectedPeers"] {
        put(k, zero.clone());
    }
    put("DroppedLogs", crate::observe::log::dropped().to_string());
    for k in ["BusyPolling", "FailedResolutions"] {
        put(k, zero.clone());
    }
    put("TotalBytesOut", p.counts.sum(|s| &s.bytes_out).to_string());
    // Upstream's typo, kept: scripts match the key as HAProxy spells it.
    put("TotalSplicdedBytesOut", spliced_out.to_string());
    put("BytesOutRate", zero.clone());
    put("DebugCommandsIssued", zero.clone());
    put("CumRecvLogs", zero.clone());
    put("Build info", VERSION.into());
    for k in ["Memmax_bytes", "PoolAlloc_bytes", "PoolUsed_bytes"] {
        put(k, zero.clone());
    }
    put("Start_time_sec", p.start_unix.to_string());
    put("Tainted", zero);
    // sluice's own keys, after all of HAProxy's: the configuration
    // generation and the last reload (time and outcome).
    put("Generation", snap.generation.to_string());
    let last = p.last_reload();
    put(
        "Last_reload_sec",
        last.map_or(String::from("0"), |(when, _)| when.to_string()),
    );
    put(
        "Last_reload_status",
        match last {
            None => String::from("none"),
            Some((_, true)) => String::from("success"),
            Some((_, false)) => String::from("failed"),
        },
    );
    v
}

/// Position and `tags:type` of each key in `show info typed` (HAProxy
/// 2.6.12, observed). Positions 45/46 (zlib memory, not built) and an
/// empty `description` (51) are skipped, as there.
const INFO_META: &[(&str, usize, &str)] = &[
    ("Name", 0, "POS:str"),
    ("Version", 1, "POS:str"),
    ("Release_date", 2, "POS:str"),
    ("Nbthread", 3, "CGS:u32"),
    ("Nbproc", 4, "CGS:u32"),
    ("Process_num", 5, "KGP:u32"),
    ("Pid", 6, "SGP:u32"),
    ("Uptime", 7, "MDP:str"),
    ("Uptime_sec", 8, "MDP:u32"),
    ("Memmax_MB", 9, "CLP:u32"),
    ("PoolAlloc_MB", 10, "MGP:u32"),
    ("PoolUsed_MB", 11, "MGP:u32"),
    ("PoolFailed", 12, "MCP:u32"),
    ("Ulimit-n", 13, "CLP:u32"),
    ("Maxsock", 14, "CLP:u32"),
    ("Maxconn", 15, "CLP:u32"),
    ("Hard_maxconn", 16, "CLP:u32"),
    ("CurrConns", 17, "MGP:u32"),
    ("CumConns", 18, "MCP:u32"),
    ("CumReq", 19, "MCP:u32"),
    ("MaxSslConns", 20, "MMP:u32"),
    ("CurrSslConns", 21, "MGP:u32"),
    ("CumSslConns", 22, "MCP:u32"),
    ("Maxpipes", 23, "CLP:u32"),
    ("PipesUsed", 24, "MGP:u32"),
    ("PipesFree", 25, "MGP:u32"),
    ("ConnRate", 26, "MRP:u32"),
    ("ConnRateLimit", 27, "CLP:u32"),
    ("MaxConnRate", 28, "MMP:u32"),
    ("SessRate", 29, "MRP:u32"),
    ("SessRateLimit", 30, "CLP:u32"),
    ("MaxSessRate", 31, "MRP:u32"),
    ("SslRate", 32, "MRP:u32"),
    ("SslRateLimit", 33, "CLP:u32"),
    ("MaxSslRate", 34, "MMP:u32"),
    ("SslFrontendKeyRate", 35, "MGP:u32"),
    ("SslFrontendMaxKeyRate", 36, "MMP:u32"),
    ("SslFrontendSessionReuse_pct", 37, "MGP:u32"),
    ("SslBackendKeyRate", 38, "MRP:u32"),
    ("SslBackendMaxKeyRate", 39, "MMP:u32"),
    ("SslCacheLookups", 40, "MCP:u32"),
    ("SslCacheMisses", 41, "MCP:u32"),
    ("CompressBpsIn", 42, "MRP:u32"),
    ("CompressBpsOut", 43, "MRP:u32"),
    ("CompressBpsRateLim", 44, "CLP:u32"),
    ("Tasks", 47, "MGP:u32"),
    ("Run_queue", 48, "MGP:u32"),
    ("Idle_pct", 49, "MaP:u32"),
    ("node", 50, "COS:str"),
    ("description", 51, "COS:str"),
    ("Stopping", 52, "MGP:u32"),
    ("Jobs", 53, "MGP:u32"),
    ("Unstoppable Jobs", 54, "MGP:u32"),
    ("Listeners", 55, "MGP:u32"),
    ("ActivePeers", 56, "MGP:u32"),
    ("ConnectedPeers", 57, "MGP:u32"),
    ("DroppedLogs", 58, "MGP:u32"),
    ("BusyPolling", 59, "MGP:u32"),
    ("FailedResolutions", 60, "MGP:u32"),
    ("TotalBytesOut", 61, "MGP:u64"),
    ("TotalSplicdedBytesOut", 62, "MGP:u64"),
    ("BytesOutRate", 63, "MRP:u64"),
    ("DebugCommandsIssued", 64, "MGP:u32"),
    ("CumRecvLogs", 65, "MCP:u32"),
    ("Build info", 66, "POS:str"),
    ("Memmax_bytes", 67, "CLP:u32"),
    ("PoolAlloc_bytes", 68, "MGP:u64"),
    ("PoolUsed_bytes", 69, "MGP:u64"),
    ("Start_time_sec", 70, "MDP:u32"),
    ("Tainted", 71, "SGP:str"),
    ("Generation", 72, "MGP:u64"),
    ("Last_reload_sec", 73, "MDP:u64"),
    ("Last_reload_status", 74, "SGP:str"),
];

/// `show info typed`: `<pos>.<name>.1:<tags>:<type>:<value>` per key.
pub(crate) fn render_info_typed(rt: &Runtime, snap: &Snapshot) -> String {
    let mut out = String::new();
    for (k, v) in info_fields(rt, snap) {
        let (pos, tags, ty) = info_meta(k);
        let _ = writeln!(out, "{pos}.{k}.1:{tags}:{ty}:{v}");
    }
    out
}

/// `show info json`: one flat array of field objects on one line.
pub(crate) fn render_info_json(rt: &Runtime, snap: &Snapshot) -> String {
    let mut out = String::from("[");
    for (n, (k, v)) in info_fields(rt, snap).into_iter().enumerate() {
        let (pos, tags, ty) = info_meta(k);
        if n > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"field\":{{\"pos\":{pos},\"name\":\"{k}\"}},\"processNum\":1,\"tags\":{},\"value\":{}}}",
            csv::json_tags(tags),
            csv::json_value(ty, &v)
        );
    }
    out.push_str("]\n");
    out
}

fn info_meta(key: &str) -> (usize, &'static str, &'static str) {
    INFO_META
        .iter()
        .find(|(k, _, _)| *k == key)
        .and_then(|(_, pos, t)| t.split_once(':').map(|(tags, ty)| (*pos, tags, ty)))
        .unwrap_or((0, "MGP", "u32"))
}

/// The `show info` text, one `Key: value` line each.
pub(crate) fn render_info(rt: &Runtime, snap: &Snapshot) -> String {
    let mut out = String::new();
    for (k, v) in info_fields(rt, snap) {
        let _ = writeln!(out, "{k}: {v}");
    }
    out
}

fn nofile_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct we pass.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    // rlim_t is u64 on Linux but not everywhere.
    #[allow(clippy::unnecessary_cast)]
    let cur = lim.rlim_cur as u64;
    if rc == 0 { cur } else { 0 }
}

/// Tokio's live task count and global queue depth stand in for HAProxy's
/// `Tasks` and `Run_queue` (0 outside a runtime, e.g. in unit tests).
fn tokio_load() -> (usize, usize) {
    let sum = |hs: &mut dyn Iterator<Item = &tokio::runtime::Handle>| {
        hs.map(|h| h.metrics()).fold((0, 0), |(t, q), m| {
            (t + m.num_alive_tasks(), q + m.global_queue_depth())
        })
    };
    match tokio::runtime::Handle::try_current() {
        // All runtimes (one per thread, see `workers`) when started.
        Ok(_) if !crate::sys::workers::workers().is_empty() => sum(&mut crate::sys::workers::all()),
        Ok(h) => sum(&mut std::iter::once(&h)),
        Err(_) => (0, 0),
    }
}

/// Share of thread time not spent on CPU, averaged since start (HAProxy
/// measures it over the last second; a lifetime average is the honest
/// figure available without a sampler).
fn idle_pct(uptime: u64, nbthread: u32) -> u64 {
    // SAFETY: getrusage only writes the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 || uptime == 0 {
        return 100;
    }
    let cpu_us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    let busy = cpu_us(ru.ru_utime) + cpu_us(ru.ru_stime);
    let avail = uptime * 1_000_000 * u64::from(nbthread.max(1));
    100u64.saturating_sub(busy * 100 / avail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_format() {
        assert_eq!(format_uptime(8), "0d 0h00m08s");
        assert_eq!(format_uptime(90061), "1d 1h01m01s");
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::observe::stats::fixture;

    /// Keys of the real 2.6.12 `show info` (reference §1.4), in order.
    const KEYS: &[&str] = &[
        "Name",
        "Version",
        "Release_date",
        "Nbthread",
        "Nbproc",
        "Process_num",
        "Pid",
        "Uptime",
        "Uptime_sec",
        "Memmax_MB",
        "PoolAlloc_MB",
        "PoolUsed_MB",
        "PoolFailed",
        "Ulimit-n",
        "Maxsock",
        "Maxconn",
        "Hard_maxconn",
        "CurrConns",
        "CumConns",
        "CumReq",
        "MaxSslConns",
        "CurrSslConns",
        "CumSslConns",
        "Maxpipes",
        "PipesUsed",
        "PipesFree",
        "ConnRate",
        "ConnRateLimit",
        "MaxConnRate",
        "SessRate",
        "SessRateLimit",
        "MaxSessRate",
        "SslRate",
        "SslRateLimit",
        "MaxSslRate",
        "SslFrontendKeyRate",
        "SslFrontendMaxKeyRate",
        "SslFrontendSessionReuse_pct",
        "SslBackendKeyRate",
        "SslBackendMaxKeyRate",
        "SslCacheLookups",
        "SslCacheMisses",
        "CompressBpsIn",
        "CompressBpsOut",
        "CompressBpsRateLim",
        "Tasks",
        "Run_queue",
        "Idle_pct",
        "node",
        "Stopping",
        "Jobs",
        "Unstoppable Jobs",
        "Listeners",
        "ActivePeers",
        "ConnectedPeers",
        "DroppedLogs",
        "BusyPolling",
        "FailedResolutions",
        "TotalBytesOut",
        "TotalSplicdedBytesOut",
        "BytesOutRate",
        "DebugCommandsIssued",
        "CumRecvLogs",
        "Build info",
        "Memmax_bytes",
        "PoolAlloc_bytes",
        "PoolUsed_bytes",
        "Start_time_sec",
        "Tainted",
    ];

    #[test]
    fn keys_in_haproxy_order() {
        let rt = fixture::runtime();
        let text = render_info(&rt, &rt.snapshot());
        let keys: Vec<&str> = text
            .lines()
            .map(|l| l.split_once(": ").unwrap().0)
            .collect();
        // HAProxy's keys in its order, then sluice's own.
        assert_eq!(&keys[..KEYS.len()], KEYS);
        assert_eq!(
            &keys[KEYS.len()..],
            ["Generation", "Last_reload_sec", "Last_reload_status"]
        );
        assert!(text.contains("\nNbproc: 1\nProcess_num: 1\n"));
        assert!(text.contains("\nMaxconn: 4096\nHard_maxconn: 4096\n"));
        assert!(text.contains("\nNbthread: 2\n"));
        assert!(text.contains("\nUptime: 0d 0h00m0"));
        assert!(!text.contains("\n\n"));
    }
}
