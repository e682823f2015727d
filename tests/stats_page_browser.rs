//! The stats page as a browser renders it: Debian's headless Chromium
//! loads it (`--dump-dom`: the DOM after parsing and scripts) and takes a
//! laptop-sized and a phone-sized screenshot. One server is DOWN (its
//! backend is dead), one DRAIN and one MAINT (set through the CLI), one UP.
//!
//! Chromium is installed by `.ci/run`; without it the test is skipped with
//! a message, unless `CI` is set, where it fails.
//!
//! `SLUICE_UPDATE_SCREENSHOTS=1 cargo test --test stats_page_browser`
//! refreshes `docs/stats-page.png` and `docs/stats-page-phone.png`.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use support::*;

/// The browser binary, or `None` (after the CI check) to skip.
fn chromium() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is required in CI (.ci/run installs it)"
        );
        eprintln!("chromium not installed: skipping the browser test (apt-get install chromium)");
    }
    found
}

/// Runs headless Chromium with `args` then `url`; returns its stdout.
/// Blocking: call through `spawn_blocking`.
fn run_chromium(bin: &str, profile: &Path, args: &[String], url: &str) -> String {
    let out = Command::new(bin)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(b.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let be = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    (be(16), be(20))
}

/// The `<td>` after the server's name cell: its class and text.
fn status_cell<'a>(dom: &'a str, server: &str) -> (&'a str, &'a str) {
    let name = format!("<td class=\"name\">{server}</td><td class=\"");
    let at = dom
        .find(&name)
        .unwrap_or_else(|| panic!("no row for {server}"))
        + name.len();
    let rest = &dom[at..];
    let (class, rest) = rest.split_once("\">").expect("class");
    let (text, _) = rest.split_once("</td>").expect("text");
    (class, text)
}

/// The `background` a `td.<class>` rule of the page's style sets.
fn background<'a>(dom: &'a str, class: &str) -> &'a str {
    let rule = format!("td.{class}{{background:");
    let at = dom.find(&rule).unwrap_or_else(|| panic!("no rule {rule}")) + rule.len();
    dom[at..].split(['}', ';']).next().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_renders_the_page() {
    let Some(bin) = chromium() else { return };
    let (up, drain, maint) = (
        Backend::start("up").await,
        Backend::start("drain").await,
        Backend::start("maint").await,
    );
    let (_hold, ports) = hold_ports::<3>();
    let (dead, web, port) = (ports[0], ports[1], ports[2]);
    let cfg = format!(
        "global
    stats socket @DIR@/admin.sock mode 600 level admin

defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s

frontend web_fe
    bind 127.0.0.1:{web}
    default_backend web_be

backend web_be
    default-server check inter 100ms fall 1 rise 1
    server s_up {up}
    server s_drain {drain}
    server s_maint {maint}
    server s_down 127.0.0.1:{dead}

listen stats
    bind 127.0.0.1:{port}
    stats uri /stats
    stats admin if {{ src 127.0.0.1 }}
",
        up = up.hostport(),
        drain = drain.hostport(),
        maint = maint.hostport(),
    );
    let sl = Sluice::start(&cfg);
    let sock = sl.path("admin.sock");
    cli(&sock, "set server web_be/s_drain state drain").await;
    cli(&sock, "set server web_be/s_maint state maint").await;
    wait_until(Duration::from_secs(5), "s_down DOWN, s_up UP", || {
        let sock = sock.clone();
        async move {
            server_status(&sock, "web_be", "s_down")
                .await
                .starts_with("DOWN")
                && server_status(&sock, "web_be", "s_up").await == "UP"
        }
    })
    .await;

    let url = format!("http://127.0.0.1:{port}/stats");
    let profile = sl.path("chromium-profile");
    let dom = {
        let (url, profile) = (url.clone(), profile.clone());
        tokio::task::spawn_blocking(move || {
            run_chromium(bin, &profile, &["--dump-dom".to_string()], &url)
        })
        .await
        .expect("chromium task")
    };

    // A table per proxy: web_fe, web_be, stats.
    assert_eq!(dom.matches("<table class=\"px\">").count(), 3, "{dom}");
    for px in ["web_fe", "web_be", "stats"] {
        assert!(dom.contains(&format!("<h2>{px}</h2>")), "{px}");
    }
    // Each server's status text and its class, and the class's colour.
    let mut colours = Vec::new();
    for (server, class, text) in [
        ("s_up", "up", "UP"),
        ("s_drain", "drain", "DRAIN"),
        ("s_maint", "maint", "MAINT"),
        ("s_down", "down", "DOWN"),
    ] {
        let (c, t) = status_cell(&dom, server);
        assert_eq!(c, class, "{server}");
        assert!(t.starts_with(text), "{server}: {t}");
        colours.push(background(&dom, class));
    }
    colours.sort_unstable();
    colours.dedup();
    assert_eq!(colours.len(), 4, "four distinct colours: {colours:?}");
    // Admin allowed from 127.0.0.1: a checkbox per server, one form.
    for s in ["s_up", "s_drain", "s_maint", "s_down"] {
        assert!(
            dom.contains(&format!(
                "<input class=\"web_be-checkbox\" type=\"checkbox\" name=\"s\" value=\"{s}\">"
            )),
            "{s}"
        );
    }
    assert_eq!(dom.matches("<form method=\"post\">").count(), 1);
    assert!(dom.contains("<select name=\"action\">"));
    // Readable on a phone: the viewport is the device's, the wide tables
    // scroll inside their own box.
    assert!(
        dom.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
    );
    assert!(dom.contains(".wrap{overflow-x:auto}"));

    // Screenshots at laptop and phone sizes.
    let shots = [
        ("stats-page.png", (1280, 900)),
        ("stats-page-phone.png", (390, 844)),
    ];
    for (name, (w, h)) in shots {
        let file: PathBuf = sl.path(name);
        let args = vec![
            format!("--screenshot={}", file.display()),
            format!("--window-size={w},{h}"),
        ];
        let (url, profile) = (url.clone(), profile.clone());
        tokio::task::spawn_blocking(move || run_chromium(bin, &profile, &args, &url))
            .await
            .expect("chromium task");
        assert_eq!(png_size(&file), (w, h), "{name}");
        if std::env::var_os("SLUICE_UPDATE_SCREENSHOTS").is_some() {
            let docs = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("docs")
                .join(name);
            std::fs::copy(&file, &docs).expect("copy screenshot to docs/");
        }
    }
}
