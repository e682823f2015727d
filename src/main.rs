fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let debug = args.iter().any(|a| a == "-d" || a == "-db");
    // -q: as HAProxy's, nothing on the terminal once started (its notices,
    // warnings and the "Proxy stopped" lines); SLUICE_LOG still wins.
    // -V (verbose) cancels it, as in HAProxy.
    let quiet = args.iter().any(|a| a == "-q") && !args.iter().any(|a| a == "-V");
    let filter = match (quiet, debug) {
        (true, _) => "off",
        (false, true) => "debug",
        (false, false) => "info",
    };
    use tracing_subscriber::prelude::*;
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false)
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter)),
        );
    // State changes also go to the configured syslog targets, whatever
    // SLUICE_LOG filters out of stderr. That layer looks at INFO and up
    // only, and says so: a layer without a filter would make every
    // callsite live, and the h2 crate's trace spans cost a third of the
    // CPU of an HTTP/2 request when they are built for nothing.
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(
            sluice::observe::log::event::EventLayer
                .with_filter(tracing_subscriber::filter::LevelFilter::INFO),
        )
        .try_init();
    let code = sluice::control::startup::main_with_args(&args);
    #[cfg(feature = "alloc-count")]
    alloc_count::report();
    std::process::exit(code);
}

/// A benchmark build's allocation counter (`cargo build --release
/// --features alloc-count`): every allocation and reallocation of the
/// process is counted, and the totals are printed on stderr at exit, so
/// `bench/accounting.sh` can tell allocations per request from two runs
/// of different lengths. Relaxed atomics: a count, not an ordering.
#[cfg(feature = "alloc-count")]
mod alloc_count {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    static CALLS: AtomicU64 = AtomicU64::new(0);
    static BYTES: AtomicU64 = AtomicU64::new(0);

    struct Counting;

    // SAFETY: every call is forwarded to the system allocator unchanged.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            CALLS.fetch_add(1, Relaxed);
            BYTES.fetch_add(layout.size() as u64, Relaxed);
            // SAFETY: the caller's contract is the system allocator's.
            unsafe { System.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            CALLS.fetch_add(1, Relaxed);
            BYTES.fetch_add(layout.size() as u64, Relaxed);
            // SAFETY: as above.
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
            CALLS.fetch_add(1, Relaxed);
            BYTES.fetch_add(new as u64, Relaxed);
            // SAFETY: as above.
            unsafe { System.realloc(ptr, layout, new) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: as above.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    pub(crate) fn report() {
        eprintln!(
            "alloc-count: {} allocations, {} bytes",
            CALLS.load(Relaxed),
            BYTES.load(Relaxed)
        );
    }
}
