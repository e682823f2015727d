//! Sending log lines: one logger thread fed by a bounded channel. The data
//! plane only formats and `try_send`s; when the channel is full, or the
//! target refuses a datagram, the line is dropped and counted
//! (`DroppedLogs` in `show info`). Nothing here can block a request.

use std::collections::HashMap;
use std::io::Write as _;
use std::net::UdpSocket;
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, OnceLock};

use crate::config::log::{Format, LogTarget, Sink};
use crate::observe::log::time::{Date, iso_date, syslog_date};

/// Lines queued for the logger thread at most.
const QUEUE: usize = 8192;

static DROPPED: AtomicU64 = AtomicU64::new(0);
static SENDER: OnceLock<SyncSender<Msg>> = OnceLock::new();

/// Log lines dropped so far (`DroppedLogs`).
pub(crate) fn dropped() -> u64 {
    DROPPED.load(Relaxed)
}

struct Msg {
    sink: Arc<Sink>,
    data: Vec<u8>,
}

/// Queues one datagram for `sink`; never waits.
pub(crate) fn send(sink: &Arc<Sink>, data: Vec<u8>) {
    let tx = SENDER.get_or_init(start);
    match tx.try_send(Msg {
        sink: sink.clone(),
        data,
    }) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
            DROPPED.fetch_add(1, Relaxed);
        }
    }
}

fn start() -> SyncSender<Msg> {
    let (tx, rx) = sync_channel(QUEUE);
    let spawned = std::thread::Builder::new()
        .name("sluice-log".into())
        .spawn(move || run(rx));
    if spawned.is_err() {
        // No thread: the receiver is gone, every send counts as dropped.
        let (dead, _) = sync_channel(0);
        return dead;
    }
    tx
}

#[derive(Default)]
struct Sockets {
    udp4: Option<UdpSocket>,
    udp6: Option<UdpSocket>,
    unix: Option<UnixDatagram>,
}

fn run(rx: Receiver<Msg>) {
    let mut socks = Sockets::default();
    // Remember UNIX targets that failed, to retry them at most every second
    // rather than on every line.
    let mut unix_dead: HashMap<std::path::PathBuf, std::time::Instant> = HashMap::new();
    while let Ok(m) = rx.recv() {
        let ok = match &*m.sink {
            Sink::Udp(addr) => {
                let slot = if addr.is_ipv4() {
                    &mut socks.udp4
                } else {
                    &mut socks.udp6
                };
                if slot.is_none() {
                    let bind = if addr.is_ipv4() {
                        "0.0.0.0:0"
                    } else {
                        "[::]:0"
                    };
                    *slot = UdpSocket::bind(bind).ok();
                    if let Some(s) = slot.as_ref() {
                        let _ = s.set_nonblocking(true);
                    }
                }
                slot.as_ref()
                    .is_some_and(|s| s.send_to(&m.data, addr).is_ok())
            }
            Sink::Unix(path) => {
                if unix_dead
                    .get(path)
                    .is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(1))
                {
                    false
                } else {
                    if socks.unix.is_none() {
                        socks.unix = UnixDatagram::unbound().ok();
                        if let Some(s) = socks.unix.as_ref() {
                            let _ = s.set_nonblocking(true);
                        }
                    }
                    let ok = socks
                        .unix
                        .as_ref()
                        .is_some_and(|s| s.send_to(&m.data, path).is_ok());
                    if ok {
                        unix_dead.remove(path);
                    } else {
                        unix_dead.insert(path.clone(), std::time::Instant::now());
                    }
                    ok
                }
            }
            Sink::Stdout => std::io::stdout().lock().write_all(&m.data).is_ok(),
            Sink::Stderr => std::io::stderr().lock().write_all(&m.data).is_ok(),
            // A ring keeps the line without its line feed.
            Sink::Ring(name) => match crate::state::ring::get(name) {
                Some(ring) => {
                    ring.write(m.data.strip_suffix(b"\n").unwrap_or(&m.data));
                    true
                }
                None => false,
            },
        };
        if !ok {
            DROPPED.fetch_add(1, Relaxed);
        }
    }
}

/// Who a line comes from, as its syslog header says.
pub(crate) struct Sender<'a> {
    /// The program (`log-tag`).
    pub(crate) tag: &'a str,
    pub(crate) pid: u32,
    /// `log-send-hostname`: the host, where the format has a place for it.
    pub(crate) host: Option<&'a str>,
    /// `log-format-sd`: RFC 5424's structured data (`-` without).
    pub(crate) sd: Option<&'a str>,
}

/// Builds the datagram for `target`: the header its `format` asks for, the
/// message, cut to `len` bytes, and a line feed.
pub(crate) fn frame(
    target: &LogTarget,
    severity: u8,
    who: &Sender<'_>,
    date: &Date,
    msg: &str,
) -> Vec<u8> {
    let Sender { tag, pid, host, sd } = *who;
    let pri = target.facility as u32 * 8 + severity as u32;
    let mut h = String::with_capacity(64 + msg.len());
    match target.format {
        // HAProxy's default names the host only when told to.
        Format::Default if host.is_some() => {
            h.push_str(&format!("<{pri}>"));
            syslog_date(date, &mut h);
            h.push_str(&format!(" {} {tag}[{pid}]: ", host.unwrap_or("")));
        }
        Format::Default | Format::Local => {
            h.push_str(&format!("<{pri}>"));
            syslog_date(date, &mut h);
            h.push_str(&format!(" {tag}[{pid}]: "));
        }
        Format::Rfc3164 => {
            h.push_str(&format!("<{pri}>"));
            syslog_date(date, &mut h);
            h.push_str(&format!(" {} {tag}[{pid}]: ", host.unwrap_or("localhost")));
        }
        Format::Rfc5424 => {
            h.push_str(&format!("<{pri}>1 "));
            iso_date(date, &mut h);
            h.push_str(&format!(
                " {} {tag} {pid} - {} ",
                host.unwrap_or("-"),
                sd.unwrap_or("-")
            ));
        }
        Format::Priority => h.push_str(&format!("<{pri}>")),
        Format::Short => h.push_str(&format!("<{severity}>")),
        Format::Timed => {
            h.push_str(&format!("<{severity}>"));
            iso_date(date, &mut h);
            h.push(' ');
        }
        Format::Iso => {
            iso_date(date, &mut h);
            h.push(' ');
        }
        Format::Raw => {}
    }
    h.push_str(msg);
    let mut v = h.into_bytes();
    v.truncate(target.len);
    v.push(b'\n');
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn target(format: Format, len: usize) -> LogTarget {
        LogTarget {
            sink: Sink::Stdout,
            len,
            format,
            facility: 16,
            level: 7,
            minlevel: 0,
        }
    }

    #[test]
    fn headers() {
        let d = Date::from(UNIX_EPOCH + Duration::from_millis(1_796_010_455_273));
        let f = |fmt, len| {
            let who = Sender {
                tag: "sluice",
                pid: 42,
                host: None,
                sd: None,
            };
            String::from_utf8(frame(&target(fmt, len), 6, &who, &d, "hello")).unwrap()
        };
        let local = f(Format::Local, 1024);
        assert!(local.starts_with("<134>Nov 30 "), "{local}");
        assert!(local.ends_with(" sluice[42]: hello\n"), "{local}");
        assert_eq!(f(Format::Raw, 1024), "hello\n");
        assert_eq!(f(Format::Priority, 1024), "<134>hello\n");
        assert_eq!(f(Format::Short, 1024), "<6>hello\n");
        let r = f(Format::Rfc5424, 1024);
        assert!(r.starts_with("<134>1 2026-11-30T"), "{r}");
        assert!(r.ends_with(" - sluice 42 - - hello\n"), "{r}");
        // len counts the line without its line feed (as HAProxy 2.6 does).
        assert_eq!(f(Format::Raw, 80).len(), 6);
        let long = "x".repeat(200);
        let who = Sender {
            tag: "s",
            pid: 1,
            host: None,
            sd: None,
        };
        let cut = frame(&target(Format::Raw, 100), 6, &who, &d, &long);
        assert_eq!(cut.len(), 101);
    }
}
