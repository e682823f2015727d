//! A real DNS server for the `resolvers` tests: dnsmasq in the foreground
//! on a loopback address of its own (127.77.x.y, so that tests running at
//! once never share one), answering from a hosts file the test rewrites
//! (SIGHUP reads it again), plus the records given on its command line
//! (`--srv-host`, `--host-record`). Names under `.test` it does not know
//! get NXDOMAIN. Killed when dropped.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use super::TempDir;

pub const DNSMASQ: &str = "/usr/sbin/dnsmasq";

/// Whether dnsmasq can be run here (required under CI, which installs it).
pub fn available() -> bool {
    if std::path::Path::new(DNSMASQ).exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{DNSMASQ} is needed on CI"
    );
    eprintln!("skipped: {DNSMASQ} is not installed");
    false
}

/// A loopback address no other test of this process uses: 127.<a>.<b>.<n>
/// from the pid and a counter.
pub fn unique_loopback(a: u8) -> Ipv4Addr {
    static NEXT: AtomicU8 = AtomicU8::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    Ipv4Addr::new(127, a, (std::process::id() % 250) as u8 + 1, n)
}

pub struct Dnsmasq {
    child: Child,
    dir: TempDir,
    pub addr: SocketAddr,
    hosts: PathBuf,
}

impl Dnsmasq {
    /// Starts dnsmasq with `hosts` (a hosts file's text) and `extra`
    /// options, and waits until it answers over TCP.
    pub fn start(hosts: &str, extra: &[&str]) -> Dnsmasq {
        let addr = SocketAddr::new(IpAddr::V4(unique_loopback(77)), 5353);
        Self::start_at(addr, hosts, extra)
    }

    /// [`start`](Self::start) on `addr` (another dnsmasq's, once it is
    /// gone: records given on the command line change by a restart).
    pub fn start_at(addr: SocketAddr, hosts: &str, extra: &[&str]) -> Dnsmasq {
        let dir = TempDir::new("dnsmasq");
        let hosts_path = dir.write("hosts", hosts);
        let ip = addr.ip();
        let child = Command::new(DNSMASQ)
            .arg("--no-daemon")
            .arg("--conf-file=/dev/null")
            .arg("--user=root")
            .arg("--pid-file=")
            .arg(format!("--listen-address={ip}"))
            .arg("--bind-interfaces")
            .arg(format!("--port={}", addr.port()))
            .arg("--no-resolv")
            .arg("--no-hosts")
            .arg(format!("--addn-hosts={}", hosts_path.display()))
            .arg("--local=/test/")
            .arg("--log-facility=-")
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("dnsmasq.log")).expect("log file"))
            .spawn()
            .expect("spawn dnsmasq");
        let mut d = Dnsmasq {
            child,
            dir,
            addr,
            hosts: hosts_path,
        };
        let end = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if let Ok(Some(st)) = d.child.try_wait() {
                panic!("dnsmasq exited ({st}): {}", d.log());
            }
            assert!(Instant::now() < end, "dnsmasq not answering: {}", d.log());
            std::thread::sleep(Duration::from_millis(10));
        }
        d
    }

    /// Replaces the hosts file and has dnsmasq read it again. Returns once
    /// dnsmasq has said so in its log.
    pub fn set_hosts(&self, text: &str) {
        let before = self.log().matches("read ").count();
        std::fs::write(&self.hosts, text).expect("write hosts");
        self.signal(libc::SIGHUP);
        let end = Instant::now() + Duration::from_secs(10);
        while self.log().matches("read ").count() == before {
            assert!(Instant::now() < end, "dnsmasq did not reload its hosts");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops answering (SIGSTOP: queries wait unanswered, as with a dead
    /// server behind a firewall), or answers again (SIGCONT).
    pub fn pause(&self, on: bool) {
        self.signal(if on { libc::SIGSTOP } else { libc::SIGCONT });
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("dnsmasq.log")).unwrap_or_default()
    }
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        self.signal(libc::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
