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
    std::process::exit(sluice::control::startup::main_with_args(&args));
}
