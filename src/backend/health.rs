//! Health of one server as HAProxy's check state machine defines it
//! (reference §2.10): `health` in `0..rise+fall`, UP iff `health >= rise`.
//! The checker task is the only writer; the data plane reads one atomic.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use super::counters::now_secs;

/// Check result codes (`check_status`) with HAProxy's descriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckStatus {
    Unk,
    Ini,
    SockErr,
    L4Ok,
    L4Tout,
    L4Con,
    L7Ok,
    L7Tout,
    L7Rsp,
    L7Sts,
}

impl CheckStatus {
    pub fn code(self) -> &'static str {
        match self {
            CheckStatus::Unk => "UNK",
            CheckStatus::Ini => "INI",
            CheckStatus::SockErr => "SOCKERR",
            CheckStatus::L4Ok => "L4OK",
            CheckStatus::L4Tout => "L4TOUT",
            CheckStatus::L4Con => "L4CON",
            CheckStatus::L7Ok => "L7OK",
            CheckStatus::L7Tout => "L7TOUT",
            CheckStatus::L7Rsp => "L7RSP",
            CheckStatus::L7Sts => "L7STS",
        }
    }

    pub fn desc(self) -> &'static str {
        match self {
            CheckStatus::Unk => "Unknown",
            CheckStatus::Ini => "Initializing",
            CheckStatus::SockErr => "Socket error",
            CheckStatus::L4Ok => "Layer4 check passed",
            CheckStatus::L4Tout => "Layer4 timeout",
            CheckStatus::L4Con => "Layer4 connection problem",
            CheckStatus::L7Ok => "Layer7 check passed",
            CheckStatus::L7Tout => "Layer7 timeout",
            CheckStatus::L7Rsp => "Layer7 invalid response",
            CheckStatus::L7Sts => "Layer7 wrong status",
        }
    }

    pub fn is_ok(self) -> bool {
        matches!(self, CheckStatus::L4Ok | CheckStatus::L7Ok)
    }

    /// Numeric value used by `show servers state`.
    pub fn number(self) -> u32 {
        match self {
            CheckStatus::Unk => 0,
            CheckStatus::Ini => 1,
            CheckStatus::SockErr => 5,
            CheckStatus::L4Ok => 6,
            CheckStatus::L4Tout => 7,
            CheckStatus::L4Con => 8,
            CheckStatus::L7Tout => 12,
            CheckStatus::L7Rsp => 13,
            CheckStatus::L7Ok => 15,
            CheckStatus::L7Sts => 17,
        }
    }
}

/// The last check's outcome and the state machine's position.
#[derive(Debug, Clone)]
pub struct CheckInfo {
    pub status: CheckStatus,
    /// L7 status code, if any.
    pub code: Option<u16>,
    /// Milliseconds the last check took (None before the first).
    pub duration_ms: Option<u64>,
    /// Detail of the last check (`Connection refused`).
    pub detail: String,
    pub health: u32,
    pub rise: u32,
    pub fall: u32,
}

/// A state change the checker should report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    WentDown,
    WentUp,
}

#[derive(Debug)]
pub struct Health {
    up: AtomicBool,
    /// Whether checks run at all (`check` on the server line).
    checked: bool,
    info: Mutex<CheckInfo>,
    /// Unix time of the last UP/DOWN change (process start initially).
    last_change: AtomicU64,
    /// Seconds spent DOWN, summed over finished down periods.
    downtime: AtomicU64,
    pub chkfail: AtomicU64,
    pub chkdown: AtomicU64,
}

impl Health {
    pub fn new(checked: bool, rise: u32, fall: u32) -> Self {
        let rise = rise.max(1);
        let fall = fall.max(1);
        Health {
            up: AtomicBool::new(true),
            checked,
            info: Mutex::new(CheckInfo {
                status: CheckStatus::Ini,
                code: None,
                duration_ms: None,
                detail: String::new(),
                // A new server starts UP "going down": the first failure
                // marks it DOWN (HAProxy does the same).
                health: rise,
                rise,
                fall,
            }),
            last_change: AtomicU64::new(now_secs()),
            downtime: AtomicU64::new(0),
            chkfail: AtomicU64::new(0),
            chkdown: AtomicU64::new(0),
        }
    }

    /// Read on every request: one relaxed load.
    #[inline]
    pub fn is_up(&self) -> bool {
        self.up.load(Relaxed)
    }

    pub fn is_checked(&self) -> bool {
        self.checked
    }

    pub fn info(&self) -> CheckInfo {
        match self.info.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Keep rise/fall in step with a reloaded config, without touching the
    /// state itself.
    pub fn set_rise_fall(&self, rise: u32, fall: u32) {
        let mut g = match self.info.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        g.rise = rise.max(1);
        g.fall = fall.max(1);
        let max = g.rise + g.fall - 1;
        g.health = g.health.min(max);
    }

    /// Apply one check result; returns the transition it caused, if any.
    pub fn record(
        &self,
        status: CheckStatus,
        code: Option<u16>,
        duration_ms: u64,
        detail: String,
    ) -> Option<Transition> {
        let mut g = match self.info.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        g.status = status;
        g.code = code;
        g.duration_ms = Some(duration_ms);
        g.detail = detail;
        let (rise, fall) = (g.rise, g.fall);
        let was_up = self.is_up();
        let mut transition = None;
        if status.is_ok() {
            if g.health < rise + fall - 1 {
                g.health += 1;
            }
            if g.health >= rise {
                g.health = rise + fall - 1;
                if !was_up {
                    transition = Some(Transition::WentUp);
                }
            }
        } else if g.health > 0 {
            if was_up {
                self.chkfail.fetch_add(1, Relaxed);
            }
            g.health -= 1;
            if g.health < rise {
                g.health = 0;
                if was_up {
                    transition = Some(Transition::WentDown);
                }
            }
        }
        match transition {
            Some(Transition::WentDown) => {
                self.up.store(false, Relaxed);
                self.chkdown.fetch_add(1, Relaxed);
                self.last_change.store(now_secs(), Relaxed);
            }
            Some(Transition::WentUp) => {
                let now = now_secs();
                let since = self.last_change.swap(now, Relaxed);
                self.downtime.fetch_add(now.saturating_sub(since), Relaxed);
                self.up.store(true, Relaxed);
            }
            None => {}
        }
        transition
    }

    /// Seconds since the last state change.
    pub fn lastchg(&self) -> u64 {
        now_secs().saturating_sub(self.last_change.load(Relaxed))
    }

    /// Total seconds down, including the current down period.
    pub fn downtime(&self) -> u64 {
        let past = self.downtime.load(Relaxed);
        if self.is_up() {
            past
        } else {
            past + self.lastchg()
        }
    }

    /// The `status` column: `UP`, `UP 1/3`, `DOWN`, `DOWN 1/2`, `no check`.
    pub fn status_text(&self) -> String {
        if !self.checked {
            return "no check".to_string();
        }
        let i = self.info();
        let max = i.rise + i.fall - 1;
        if self.is_up() {
            if i.health >= max {
                "UP".to_string()
            } else {
                format!("UP {}/{}", i.health + 1 - i.rise, i.fall)
            }
        } else if i.health == 0 {
            "DOWN".to_string()
        } else {
            format!("DOWN {}/{}", i.health, i.rise)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fail(h: &Health) -> Option<Transition> {
        h.record(CheckStatus::L4Con, None, 0, "Connection refused".into())
    }
    fn ok(h: &Health) -> Option<Transition> {
        h.record(CheckStatus::L4Ok, None, 0, String::new())
    }

    #[test]
    fn starts_up_going_down_and_first_failure_marks_down() {
        let h = Health::new(true, 2, 3);
        assert_eq!(h.status_text(), "UP 1/3");
        assert_eq!(fail(&h), Some(Transition::WentDown));
        assert_eq!(h.status_text(), "DOWN");
        assert!(!h.is_up());
    }

    #[test]
    fn reference_sequence() {
        // UP (4) -> UP 2/3 -> UP 1/3 -> DOWN -> DOWN 1/2 -> UP
        let h = Health::new(true, 2, 3);
        ok(&h);
        assert_eq!(h.status_text(), "UP");
        fail(&h);
        assert_eq!(h.status_text(), "UP 2/3");
        fail(&h);
        assert_eq!(h.status_text(), "UP 1/3");
        assert_eq!(fail(&h), Some(Transition::WentDown));
        assert_eq!(h.status_text(), "DOWN");
        assert_eq!(ok(&h), None);
        assert_eq!(h.status_text(), "DOWN 1/2");
        assert_eq!(ok(&h), Some(Transition::WentUp));
        assert_eq!(h.status_text(), "UP");
        assert_eq!(h.chkfail.load(Relaxed), 3);
        assert_eq!(h.chkdown.load(Relaxed), 1);
    }
}
