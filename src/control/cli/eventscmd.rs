//! `show events [<sink>] [-w] [-n]`: the event sinks (HAProxy's `stdout`
//! and `stderr`, then the rings), or a ring's lines; `-n` skips the lines
//! already there, `-w` follows the new ones until the client sends
//! anything (the session does the following: `Effect::Follow`).

use super::*;

const LISTING: &str =
    "Supported events sinks are listed below. Add -w(wait), -n(new). Any key to stop\n";

fn bare(s: &str) -> Output {
    Output {
        text: s.to_string(),
        effect: Effect::Bare,
    }
}

pub(super) fn cmd_show_events(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let Some(name) = args.first().filter(|a| !a.is_empty()) else {
        let mut out = String::from(LISTING);
        // HAProxy 2.6 says "standard output" of both.
        for fd in [("stdout", 1), ("stderr", 2)] {
            let _ = writeln!(
                out,
                "    {:<10} : type=fd, 0 dropped, standard output (fd#{})",
                fd.0, fd.1
            );
        }
        for ring in crate::state::ring::all() {
            let settings = ring.settings();
            let _ = writeln!(
                out,
                "    {:<10} : type=buffer, {} dropped, {}",
                ring.name,
                ring.dropped(),
                settings.description()
            );
        }
        return text(out);
    };
    if name == "stdout" || name == "stderr" {
        return bare("Nothing to report for this sink\n");
    }
    let Some(ring) = crate::state::ring::get(name) else {
        return bare("No such event sink\n");
    };
    let (mut wait, mut new) = (false, false);
    for a in &args[1..] {
        match a.as_str() {
            "-w" => wait = true,
            "-n" => new = true,
            "-nw" | "-wn" => (wait, new) = (true, true),
            _ => return bare("unknown option\n"),
        }
    }
    let from = if new { ring.end() } else { 0 };
    let (lines, end) = ring.read_from(from);
    let mut out = String::new();
    for l in lines {
        out.push_str(&String::from_utf8_lossy(&l));
        out.push('\n');
    }
    if wait {
        return Output {
            text: out,
            effect: Effect::Follow {
                ring: name.clone(),
                from: end,
            },
        };
    }
    // A ring's line may be empty: no sanitizing of this output.
    bare(&(out + "\n"))
}
