//! `option external-check`: the check runs `external-check command` with
//! HAProxy 2.6's arguments (`<proxy_address> <proxy_port> <server_address>
//! <server_port>`) and only its environment (the `HAPROXY_*` variables and
//! `PATH` from `external-check path`), and takes its status from the exit
//! code: 0 passes (`PROCOK`), anything else fails with that code
//! (`PROCERR`), and a program still running after `inter` is killed
//! (`PROCTOUT`).

use std::process::Stdio;
use std::time::Duration;

use crate::config::external_check::ExternalCheck;
use crate::state::ServerState;
use crate::state::health::CheckStatus;

/// What the environment tells of the proxy and the server beyond their
/// addresses.
pub(super) struct Identity {
    /// `HAPROXY_PROXY_ID`, the proxy's `iid`.
    pub(super) proxy_id: u32,
    /// `HAPROXY_SERVER_ID`, the server's `sid`.
    pub(super) server_id: u32,
    /// `HAPROXY_SERVER_SSL`.
    pub(super) ssl: bool,
    /// `HAPROXY_SERVER_PROTO`: `h2`, `h1` (mode http) or `tcp`.
    pub(super) proto: &'static str,
}

/// The exit status a program that could not be started reports, as
/// HAProxy's child that fails to exec exits with -1.
const EXEC_FAILED: u16 = 255;

pub(super) async fn run(
    server: &ServerState,
    ext: &ExternalCheck,
    id: &Identity,
    timeout: Duration,
) -> (CheckStatus, Option<u16>, String) {
    use std::sync::atomic::Ordering::Relaxed;
    let addr = server.addr();
    let (ip, port) = (addr.ip().to_string(), addr.port().to_string());
    let mut cmd = tokio::process::Command::new(&ext.command);
    cmd.args([&ext.args.0, &ext.args.1, &ip, &port])
        .env_clear()
        .env("PATH", &ext.path)
        .env("HAPROXY_PROXY_ADDR", &ext.env.0)
        .env("HAPROXY_PROXY_PORT", &ext.env.1)
        .env("HAPROXY_PROXY_ID", id.proxy_id.to_string())
        .env("HAPROXY_PROXY_NAME", &server.backend)
        .env("HAPROXY_SERVER_ADDR", &ip)
        .env("HAPROXY_SERVER_PORT", &port)
        .env("HAPROXY_SERVER_NAME", &server.name)
        .env("HAPROXY_SERVER_ID", id.server_id.to_string())
        .env("HAPROXY_SERVER_CURCONN", server.inflight().to_string())
        .env(
            "HAPROXY_SERVER_MAXCONN",
            server.maxconn.load(Relaxed).to_string(),
        )
        .env("HAPROXY_SERVER_SSL", if id.ssl { "1" } else { "0" })
        .env("HAPROXY_SERVER_PROTO", id.proto)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let Ok(mut child) = cmd.spawn() else {
        return (CheckStatus::ProcErr, Some(EXEC_FAILED), String::new());
    };
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(st)) if st.success() => (CheckStatus::ProcOk, Some(0), String::new()),
        Ok(Ok(st)) => {
            // Killed by a signal: no exit code, HAProxy's -1 status.
            let code = st.code().map_or(EXEC_FAILED, |c| (c & 0xff) as u16);
            (CheckStatus::ProcErr, Some(code), String::new())
        }
        Ok(Err(_)) => (CheckStatus::ProcErr, Some(EXEC_FAILED), String::new()),
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            (CheckStatus::ProcTout, Some(0), String::new())
        }
    }
}
