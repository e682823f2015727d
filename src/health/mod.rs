//! Active health checks: a TCP connect every `inter`, through HAProxy's
//! rise/fall state machine (see `backend::health`). Checks of different
//! servers start at spread-out offsets so they do not all fire at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

use crate::backend::ServerState;
use crate::backend::health::{CheckStatus, Transition};
use crate::config::model::CheckParams;
use std::sync::atomic::Ordering::Relaxed;

use crate::runtime::Runtime;

/// Starts a checker task for every server of the current snapshot that has
/// `check` and no checker yet. A checker follows its server across reloads
/// (new `inter`, `rise`, `fall` apply at its next tick) and ends when the
/// server is removed or loses `check`.
pub fn spawn_checks(rt: &Arc<Runtime>) {
    let snap = rt.snapshot();
    let servers: Vec<(Arc<ServerState>, Duration)> = snap
        .backends()
        .flat_map(|be| {
            be.servers
                .iter()
                .filter_map(|s| Some((s.state.clone(), s.check?.inter)))
        })
        .filter(|(s, _)| !s.checker.swap(true, Relaxed))
        .collect();
    let n = servers.len().max(1) as u32;
    for (i, (state, inter)) in servers.into_iter().enumerate() {
        // Spread the first checks over one interval.
        let offset = inter * i as u32 / n;
        tokio::spawn(check_loop(rt.clone(), state, offset));
    }
}

/// The check parameters of `server` in the current snapshot, with the
/// connect timeout: min(timeout connect, inter), or `timeout check`.
fn params_now(rt: &Runtime, server: &Arc<ServerState>) -> Option<(CheckParams, Duration)> {
    rt.with_snapshot(|snap| {
        let be = snap.backend(&server.backend)?;
        let s = be.servers.iter().find(|s| Arc::ptr_eq(&s.state, server))?;
        let params = s.check?;
        let timeout = be
            .timeouts
            .check
            .or(be.timeouts.connect)
            .map_or(params.inter, |t| t.min(params.inter));
        Some((params, timeout))
    })
}

async fn check_loop(rt: Arc<Runtime>, server: Arc<ServerState>, offset: Duration) {
    tokio::time::sleep(offset).await;
    let mut last_inter = None;
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    loop {
        let Some((params, timeout)) = params_now(&rt, &server) else {
            server.checker.store(false, Relaxed);
            return;
        };
        if last_inter != Some(params.inter) {
            ticker = tokio::time::interval(params.inter);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            last_inter = Some(params.inter);
        }
        ticker.tick().await;
        if !server.health.checks_active() {
            // Maintenance or `disable health`: no probe at all.
            continue;
        }
        let (status, detail, ms) = tcp_check(&server, timeout).await;
        match server.health.record(status, None, ms, detail.clone()) {
            Some(Transition::WentDown) => report_down(&server, status, &detail, ms),
            Some(Transition::WentUp) => report_up(&server, status, ms),
            None => {}
        }
    }
}

async fn tcp_check(server: &ServerState, timeout: Duration) -> (CheckStatus, String, u64) {
    let start = Instant::now();
    let addr = server.addr();
    let result = tokio::time::timeout(timeout, TcpStream::connect(addr)).await;
    let ms = start.elapsed().as_millis() as u64;
    match result {
        Ok(Ok(_)) => (CheckStatus::L4Ok, String::new(), ms),
        Ok(Err(e)) => {
            let detail = match e.kind() {
                std::io::ErrorKind::ConnectionRefused => "Connection refused".to_string(),
                _ => e.to_string(),
            };
            (CheckStatus::L4Con, detail, ms)
        }
        Err(_) => (CheckStatus::L4Tout, String::new(), ms),
    }
}

fn report_down(server: &ServerState, status: CheckStatus, detail: &str, ms: u64) {
    let info = if detail.is_empty() {
        String::new()
    } else {
        format!(", info: \"{detail}\"")
    };
    tracing::warn!(
        "Server {}/{} is DOWN, reason: {}{}, check duration: {}ms.",
        server.backend,
        server.name,
        status.desc(),
        info,
        ms
    );
}

fn report_up(server: &ServerState, status: CheckStatus, ms: u64) {
    tracing::info!(
        "Server {}/{} is UP, reason: {}, check duration: {}ms.",
        server.backend,
        server.name,
        status.desc(),
        ms
    );
}
