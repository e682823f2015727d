//! Active health checks: a TCP connect every `inter`, through HAProxy's
//! rise/fall state machine (see `backend::health`). Checks of different
//! servers start at spread-out offsets so they do not all fire at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

use crate::backend::ServerState;
use crate::backend::health::{CheckStatus, Transition};
use crate::config::model::CheckParams;
use crate::routing::Snapshot;

/// Starts one checker task per server that has `check`.
pub fn spawn_checks(snap: &Snapshot) {
    let servers: Vec<_> = snap
        .backends()
        .flat_map(|be| {
            be.servers.iter().filter_map(move |s| {
                let params = s.check?;
                // Connect timeout: min(timeout connect, inter), or the
                // `timeout check` when set.
                let timeout = be
                    .timeouts
                    .check
                    .or(be.timeouts.connect)
                    .map_or(params.inter, |t| t.min(params.inter));
                Some((s.state.clone(), params, timeout))
            })
        })
        .collect();
    let n = servers.len().max(1) as u32;
    for (i, (state, params, timeout)) in servers.into_iter().enumerate() {
        let offset = params.inter * i as u32 / n;
        tokio::spawn(check_loop(state, params, timeout, offset));
    }
}

async fn check_loop(
    server: Arc<ServerState>,
    params: CheckParams,
    timeout: Duration,
    offset: Duration,
) {
    tokio::time::sleep(offset).await;
    let mut ticker = tokio::time::interval(params.inter);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        if !server.health.checks_active() {
            // Maintenance or `disable health`: no probe at all.
            continue;
        }
        let (status, detail, ms) = tcp_check(&server, timeout).await;
        let was_up = server.health.is_up();
        match server.health.record(status, None, ms, detail.clone()) {
            Some(Transition::WentDown) => report_down(&server, status, &detail, ms),
            Some(Transition::WentUp) => report_up(&server, status, ms),
            None => {
                let _ = was_up;
            }
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
