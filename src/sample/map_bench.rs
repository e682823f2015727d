//! The cost of large maps (`bench/maps.sh` runs it in a release build):
//! a 1,000,000-entry map file loaded for each indexed matcher (`str`,
//! `beg`, `ip`, `dom`) and for `end` (still a scan, for comparison), then
//! looked up. It prints figures and asserts nothing about time: the
//! numbers go to docs/benchmarks.md.

use std::time::Instant;

use super::pattern::{Entry, Map, MatchKind};
use super::value::{Sample, SmpType};

const ENTRIES: usize = 1_000_000;

/// How many edits of each kind are timed (`SLUICE_MAP_EDITS`, 20 by
/// default: an edit that copies the map takes a good part of a second).
static EDITS_VAR: std::sync::LazyLock<usize> = std::sync::LazyLock::new(|| {
    std::env::var("SLUICE_MAP_EDITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
});

/// Whether matcher `label` is measured (`SLUICE_MAP_ONLY`, a list of
/// labels such as `beg,ip`: all of them by default).
fn wanted(label: &str) -> bool {
    std::env::var("SLUICE_MAP_ONLY").map_or(true, |v| v.split(',').any(|l| l == label))
}

/// A map file of `ENTRIES` lines made by `line`, in a fresh directory.
fn write_map(name: &str, line: impl Fn(usize) -> String) -> std::path::PathBuf {
    let dir = bench_dir();
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    let mut text = String::with_capacity(ENTRIES * 32);
    for i in 0..ENTRIES {
        text.push_str(&line(i));
        text.push('\n');
    }
    std::fs::write(&path, text).expect("write map");
    path
}

fn bench_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("sluice-map-bench-{}", std::process::id()))
}

fn ip_of(i: usize) -> String {
    format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255)
}

/// Loads the map, then looks each of `keys` up `rounds` times; prints the
/// load time and the cost of a lookup.
fn measure(
    label: &str,
    path: &std::path::Path,
    kind: MatchKind,
    keys: &[Sample<'_>],
    rounds: usize,
) -> Map {
    let (t, cpu) = (Instant::now(), thread_cpu());
    let map =
        Map::load(path.to_str().expect("utf-8 path"), kind, SmpType::Str, None).expect("map loads");
    let (load, load_cpu) = (t.elapsed(), thread_cpu() - cpu);
    let (t, cpu) = (Instant::now(), thread_cpu());
    let mut hits = 0usize;
    for _ in 0..rounds {
        for k in keys {
            hits += usize::from(map.lookup(k.clone()).is_some());
        }
    }
    let n = (rounds * keys.len()) as f64;
    let per = t.elapsed().as_nanos() as f64 / n;
    let per_cpu = (thread_cpu() - cpu) * 1e9 / n;
    println!(
        "{label:<5} {} entries: load {:>7.1} ms ({:>7.1} ms CPU), lookup {:>10.0} ns ({:>10.0} ns CPU; {hits} hits of {})",
        map.len(),
        load.as_secs_f64() * 1000.0,
        load_cpu * 1000.0,
        per,
        per_cpu,
        rounds * keys.len()
    );
    map
}

/// The cost of the CLI's edits on a loaded map: `n` each of `add map`
/// (new keys), `set map` (existing keys) and `del map` (existing keys),
/// as the CLI and the `set-map`/`del-map` actions make them.
fn measure_edits(label: &str, map: &Map, key: impl Fn(usize) -> String, n: usize) {
    // The first edit of a map also makes its second copy (see `Map`):
    // timed apart.
    let (t, cpu) = (Instant::now(), thread_cpu());
    assert!(map.add(&key(20 * ENTRIES), "first").is_ok());
    let mut line = format!(
        "{label:<5} edits of a {}-entry map: first {:.1} ms ({:.1} ms CPU);",
        map.len(),
        t.elapsed().as_secs_f64() * 1e3,
        (thread_cpu() - cpu) * 1e3
    );
    for (what, base) in [("add", 10 * ENTRIES), ("set", 0), ("del", 0)] {
        let (t, cpu) = (Instant::now(), thread_cpu());
        for i in 0..n {
            let k = key(base + i * 7919 % ENTRIES);
            let done = match what {
                "add" => map.add(&k, "new").is_ok(),
                "set" => map.set(Entry::Key(&k), "changed").is_ok(),
                _ => map.delete(Entry::Key(&k)).is_ok(),
            };
            assert!(done, "{what} {k}");
        }
        line.push_str(&format!(
            " {what} {:.1} µs ({:.1} µs CPU);",
            t.elapsed().as_secs_f64() * 1e6 / n as f64,
            (thread_cpu() - cpu) * 1e6 / n as f64
        ));
    }
    println!("{line} each, {n} of each");
}

/// The CPU time of this thread, in seconds (the box may be shared: wall
/// time alone says little).
fn thread_cpu() -> f64 {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

#[test]
#[ignore = "a benchmark: bench/maps.sh runs it with --release"]
fn million_entry_maps() {
    let str_keys: Vec<String> = (0..1000)
        .map(|i| format!("h{}.example.com", i * 2003 % (2 * ENTRIES)))
        .collect();
    // Borrowed, as a fetch gives a slice of the request.
    fn samples(v: &[String]) -> Vec<Sample<'_>> {
        v.iter()
            .map(|k| Sample::Str(std::borrow::Cow::Borrowed(k.as_bytes())))
            .collect()
    }
    if wanted("str") {
        let path = write_map("str.map", |i| format!("h{i}.example.com be{}", i % 10));
        let map = measure("str", &path, MatchKind::Str, &samples(&str_keys), 1000);
        measure_edits("str", &map, |i| format!("h{i}.example.com"), *EDITS_VAR);
        drop(map);
    }

    if wanted("beg") {
        let beg_keys: Vec<String> = (0..1000)
            .map(|i| format!("/api/v{}/users/42", i * 2003 % (2 * ENTRIES)))
            .collect();
        let path = write_map("beg.map", |i| format!("/api/v{i}/ be{}", i % 10));
        let map = measure("beg", &path, MatchKind::Beg, &samples(&beg_keys), 1000);
        measure_edits("beg", &map, |i| format!("/api/v{i}/"), *EDITS_VAR);
        drop(map);
    }

    // Networks of several lengths: /32 hosts, with a /24 and a /16 every
    // so often, as address lists have them.
    if wanted("ip") {
        let ip_keys: Vec<Sample<'static>> = (0..1000)
            .map(|i| Sample::Ipv4(ip_of(i * 2003 % (2 * ENTRIES)).parse().expect("ip")))
            .collect();
        let path = write_map("ip.map", |i| match i % 100 {
            0 => format!("{}/24 net24", ip_of(i)),
            1 => format!("{}/16 net16", ip_of(i)),
            _ => format!("{} host", ip_of(i)),
        });
        let map = measure("ip", &path, MatchKind::Ip, &ip_keys, 1000);
        let ip_key = |i: usize| match i % 100 {
            0 => format!("{}/24", ip_of(i)),
            1 => format!("{}/16", ip_of(i)),
            _ => ip_of(i),
        };
        measure_edits("ip", &map, ip_key, *EDITS_VAR);
        drop(map);
    }

    if wanted("dom") {
        let dom_keys: Vec<String> = (0..1000)
            .map(|i| format!("www.d{}.example.com", i * 2003 % (2 * ENTRIES)))
            .collect();
        let path = write_map("dom.map", |i| format!("d{i}.example.com be{}", i % 10));
        let map = measure("dom", &path, MatchKind::Dom, &samples(&dom_keys), 1000);
        measure_edits("dom", &map, |i| format!("d{i}.example.com"), *EDITS_VAR);
        drop(map);
    }

    // A matcher that still scans its list, for comparison (few lookups).
    if wanted("end") {
        let path = write_map("end.map", |i| format!("h{i}.example.com be{}", i % 10));
        measure("end", &path, MatchKind::End, &samples(&str_keys[..20]), 1);
    }

    let _ = std::fs::remove_dir_all(bench_dir());
}
