//! Health of one server as HAProxy's check state machine defines it
//! (reference §2.10): `health` in `0..rise+fall`, UP iff `health >= rise`.
//! The checker task is the only writer; the data plane reads one atomic.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering::Relaxed};

use crate::state::counters::now_secs;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    crate::state::lock(m)
}

/// Check result codes (`check_status`) with HAProxy's descriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CheckStatus {
    Ini,
    L4Ok,
    L4Tout,
    L4Con,
    L7Ok,
    L7Tout,
    L7Rsp,
    L7Sts,
    Hana,
    L6Ok,
    L6Tout,
    L6Rsp,
    L7OkC,
    /// The connection could not even be attempted (a UNIX server's
    /// socket file missing).
    SockErr,
    /// An agent's reply that says nothing of the health (`drain`, `50%`).
    Checked,
    /// `option external-check`: the program exited 0, exited otherwise
    /// (the code is its status), or ran out of time.
    ProcOk,
    ProcErr,
    ProcTout,
}

impl CheckStatus {
    pub(crate) fn code(self) -> &'static str {
        match self {
            CheckStatus::Ini => "INI",
            CheckStatus::L4Ok => "L4OK",
            CheckStatus::L4Tout => "L4TOUT",
            CheckStatus::L4Con => "L4CON",
            CheckStatus::L7Ok => "L7OK",
            CheckStatus::L7Tout => "L7TOUT",
            CheckStatus::L7Rsp => "L7RSP",
            CheckStatus::L7Sts => "L7STS",
            CheckStatus::Hana => "HANA",
            CheckStatus::L6Ok => "L6OK",
            CheckStatus::L6Tout => "L6TOUT",
            CheckStatus::L6Rsp => "L6RSP",
            CheckStatus::L7OkC => "L7OKC",
            CheckStatus::SockErr => "SOCKERR",
            CheckStatus::Checked => "CHECKED",
            CheckStatus::ProcOk => "PROCOK",
            CheckStatus::ProcErr => "PROCERR",
            CheckStatus::ProcTout => "PROCTOUT",
        }
    }

    pub(crate) fn desc(self) -> &'static str {
        match self {
            CheckStatus::Ini => "Initializing",
            CheckStatus::L4Ok => "Layer4 check passed",
            CheckStatus::L4Tout => "Layer4 timeout",
            CheckStatus::L4Con => "Layer4 connection problem",
            CheckStatus::L7Ok => "Layer7 check passed",
            CheckStatus::L7Tout => "Layer7 timeout",
            CheckStatus::L7Rsp => "Layer7 invalid response",
            CheckStatus::L7Sts => "Layer7 wrong status",
            CheckStatus::Hana => "Health analyze",
            CheckStatus::L6Ok => "Layer6 check passed",
            CheckStatus::L6Tout => "Layer6 timeout",
            CheckStatus::L6Rsp => "Layer6 invalid response",
            CheckStatus::L7OkC => "Layer7 check conditionally passed",
            CheckStatus::SockErr => "Socket error",
            CheckStatus::Checked => "No status change",
            CheckStatus::ProcOk => "External check passed",
            CheckStatus::ProcErr => "External check error",
            CheckStatus::ProcTout => "External check timeout",
        }
    }

    pub(crate) fn is_ok(self) -> bool {
        matches!(
            self,
            CheckStatus::L4Ok
                | CheckStatus::L6Ok
                | CheckStatus::L7Ok
                | CheckStatus::L7OkC
                | CheckStatus::ProcOk
        )
    }

    /// Numeric value used by `show servers state`.
    pub(crate) fn number(self) -> u32 {
        match self {
            CheckStatus::Ini => 1,
            CheckStatus::L4Ok => 6,
            CheckStatus::L4Tout => 7,
            CheckStatus::L4Con => 8,
            CheckStatus::L7Tout => 12,
            CheckStatus::L7Rsp => 13,
            CheckStatus::L7Ok => 15,
            CheckStatus::L7Sts => 17,
            CheckStatus::Hana => 4,
            CheckStatus::L6Ok => 9,
            CheckStatus::L6Tout => 10,
            CheckStatus::L6Rsp => 11,
            CheckStatus::L7OkC => 16,
            CheckStatus::SockErr => 5,
            CheckStatus::Checked => 3,
            CheckStatus::ProcErr => 18,
            CheckStatus::ProcTout => 19,
            CheckStatus::ProcOk => 20,
        }
    }
}

/// The last check's outcome and the state machine's position.
#[derive(Debug, Clone)]
pub(crate) struct CheckInfo {
    pub(crate) status: CheckStatus,
    /// L7 status code, if any.
    pub(crate) code: Option<u16>,
    /// Milliseconds the last check took (None before the first).
    pub(crate) duration_ms: Option<u64>,
    /// Detail of the last check (`Connection refused`).
    pub(crate) detail: String,
    pub(crate) health: u32,
    pub(crate) rise: u32,
    pub(crate) fall: u32,
}

/// `srv_op_state` of `show servers state`: the operational state.
pub(crate) const OP_STOPPED: u8 = 0;
pub(crate) const OP_RUNNING: u8 = 2;
pub(crate) const OP_STOPPING: u8 = 3;

/// The operational state a passing check leaves a server in: NOLB after
/// a conditional pass, else UP.
fn op_after(conditional: bool) -> u8 {
    if conditional { OP_STOPPING } else { OP_RUNNING }
}

/// `set server <b>/<s> health up|stopping|down`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Forced {
    Up,
    Stopping,
    Down,
}

/// A state change the checker should report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transition {
    WentDown,
    WentUp,
    /// UP to NOLB: a check passed only conditionally (`L7OKC`, from
    /// `http-check disable-on-404`).
    WentStopping,
    /// NOLB back to UP after a check that passed outright.
    Resumed,
}

#[derive(Debug)]
pub(crate) struct Health {
    /// Operational state: [`OP_STOPPED`] (DOWN), [`OP_RUNNING`] (UP) or
    /// [`OP_STOPPING`] (NOLB: up but no new traffic).
    op: AtomicU8,
    /// Whether checks are configured (`check` on the server line); a
    /// reload may turn them on or off.
    checked: AtomicBool,
    /// `enable health` / `disable health` (checks configured but ignored).
    enabled: AtomicBool,
    /// Checks paused while the server is in maintenance.
    paused: AtomicBool,
    info: Mutex<CheckInfo>,
    /// Unix time of the last UP/DOWN change (process start initially).
    last_change: AtomicU64,
    /// Seconds spent DOWN, summed over finished down periods.
    downtime: AtomicU64,
    pub(crate) chkfail: AtomicU64,
    pub(crate) chkdown: AtomicU64,
    /// Unix time the server last came back UP (0: never since start), for
    /// `slowstart`.
    came_up: AtomicU64,
    /// The agent check's state (`agent-check`): None when not configured.
    agent: Mutex<Option<CheckInfo>>,
    /// `enable agent` / `disable agent` (and a dynamic server's start).
    agent_enabled: AtomicBool,
}

/// What an agent's reply says of the health: HAProxy's `up`, or `down`,
/// `stopped`, `fail`; None for a reply without health word.
pub(crate) type AgentWord = Option<bool>;

impl Health {
    pub(crate) fn new(checked: bool, rise: u32, fall: u32) -> Self {
        let rise = rise.max(1);
        let fall = fall.max(1);
        Health {
            op: AtomicU8::new(OP_RUNNING),
            checked: AtomicBool::new(checked),
            enabled: AtomicBool::new(true),
            paused: AtomicBool::new(false),
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
            came_up: AtomicU64::new(0),
            agent: Mutex::new(None),
            agent_enabled: AtomicBool::new(false),
        }
    }

    /// Configures (or removes) the agent check. Its rise and fall are 1,
    /// as HAProxy's; a new agent starts at full health.
    pub(crate) fn set_agent(&self, configured: bool, enabled: bool) {
        let mut a = lock(&self.agent);
        match (configured, a.is_some()) {
            (true, false) => {
                *a = Some(CheckInfo {
                    status: CheckStatus::Ini,
                    code: None,
                    duration_ms: None,
                    detail: String::new(),
                    health: 1,
                    rise: 1,
                    fall: 1,
                });
                self.agent_enabled.store(enabled, Relaxed);
            }
            (false, true) => {
                *a = None;
                self.agent_enabled.store(false, Relaxed);
            }
            _ => {}
        }
    }

    /// The agent check is configured (`CHK_ST_CONFIGURED`).
    pub(crate) fn agent_configured(&self) -> bool {
        lock(&self.agent).is_some()
    }

    /// The agent check runs (`CHK_ST_ENABLED`).
    pub(crate) fn agent_enabled(&self) -> bool {
        self.agent_enabled.load(Relaxed) && self.agent_configured()
    }

    /// `enable agent` / `disable agent`; false when no agent is configured
    /// (enabling is refused then).
    pub(crate) fn set_agent_enabled(&self, on: bool) -> bool {
        if on && !self.agent_configured() {
            return false;
        }
        self.agent_enabled.store(on, Relaxed);
        true
    }

    pub(crate) fn agent_info(&self) -> Option<CheckInfo> {
        lock(&self.agent).clone()
    }

    /// The agent does not hold the server down: not enabled, or at or
    /// above its rise.
    fn agent_ok(&self) -> bool {
        if !self.agent_enabled.load(Relaxed) {
            return true;
        }
        lock(&self.agent)
            .as_ref()
            .is_none_or(|a| a.health >= a.rise)
    }

    /// One agent check's outcome (HAProxy's `tcpcheck_agent_expect_reply`
    /// and `set_server_check_status` for an agent): `word` sets the agent's
    /// health, a failure to connect leaves it alone (an agent that cannot
    /// be reached takes no server down), a broken reply counts as a failed
    /// check. The server goes DOWN when the agent says so, and UP when the
    /// agent and the health checks agree, outside maintenance (`maint`).
    pub(crate) fn record_agent(
        &self,
        status: CheckStatus,
        word: AgentWord,
        duration_ms: u64,
        desc: String,
        maint: bool,
    ) -> Option<Transition> {
        let g = self.lock();
        let mut a = lock(&self.agent);
        let agent = a.as_mut()?;
        if !self.agent_enabled.load(Relaxed) {
            return None;
        }
        let max = agent.rise + agent.fall - 1;
        match word {
            Some(true) => agent.health = max,
            Some(false) => agent.health = 0,
            None => {}
        }
        agent.status = status;
        agent.code = matches!(status, CheckStatus::L7Ok | CheckStatus::L7Sts).then_some(0);
        agent.duration_ms = Some(duration_ms);
        agent.detail = desc;
        let l57 = matches!(
            status,
            CheckStatus::L7Ok | CheckStatus::L7OkC | CheckStatus::L7Sts
        );
        if status == CheckStatus::Checked {
            return None;
        }
        if status.is_ok() {
            if agent.health < max {
                agent.health += 1;
            }
        } else if l57 && agent.health > 0 {
            agent.health -= 1;
            if agent.health < agent.rise {
                agent.health = 0;
            }
        }
        let agent_up = agent.health >= agent.rise;
        drop(a);
        if maint {
            return None;
        }
        let was_up = self.is_up();
        if status.is_ok() {
            let check_ok = !self.check_enabled() || g.health >= g.rise;
            if !was_up && check_ok && agent_up {
                self.go_up(OP_RUNNING);
                return Some(Transition::WentUp);
            }
        } else if status == CheckStatus::L7Sts && !agent_up && was_up {
            self.go_down();
            return Some(Transition::WentDown);
        }
        None
    }

    /// `set server .. agent up|down`: the agent's health to its maximum or
    /// 0, and the server UP (when the checks agree) or DOWN with it.
    pub(crate) fn force_agent(&self, up: bool) -> Option<Transition> {
        let g = self.lock();
        let mut a = lock(&self.agent);
        let agent = a.as_mut()?;
        agent.health = if up { agent.rise + agent.fall - 1 } else { 0 };
        drop(a);
        if self.is_paused() {
            return None;
        }
        let was_up = self.is_up();
        if up && !was_up && (!self.check_enabled() || g.health >= g.rise) {
            self.go_up(OP_RUNNING);
            return Some(Transition::WentUp);
        }
        if !up && was_up {
            self.go_down();
            return Some(Transition::WentDown);
        }
        None
    }

    /// Not DOWN (UP or NOLB): what `show stat up` keeps and what counts
    /// as a down period.
    #[inline]
    pub(crate) fn is_up(&self) -> bool {
        self.op.load(Relaxed) != OP_STOPPED
    }

    /// UP and taking new traffic (not NOLB). Read on every request: one
    /// relaxed load.
    #[inline]
    pub(crate) fn is_running(&self) -> bool {
        self.op.load(Relaxed) == OP_RUNNING
    }

    /// `srv_op_state`: 0 stopped, 2 running, 3 stopping.
    pub(crate) fn op_state(&self) -> u8 {
        self.op.load(Relaxed)
    }

    /// Checks are configured (`check` on the server line).
    pub(crate) fn is_checked(&self) -> bool {
        self.checked.load(Relaxed)
    }

    /// A reload configured checks on (or off). Turned off, the server is
    /// taken as UP again, as on a fresh start without `check`.
    pub(crate) fn set_checked(&self, on: bool) {
        if self.checked.swap(on, Relaxed) == on || on {
            return;
        }
        if !self.is_up() {
            let now = now_secs();
            let since = self.last_change.swap(now, Relaxed);
            self.downtime.fetch_add(now.saturating_sub(since), Relaxed);
        }
        self.op.store(OP_RUNNING, Relaxed);
    }

    /// Checks configured and not disabled by `disable health`
    /// (HAProxy's `CHK_ST_ENABLED`).
    pub(crate) fn check_enabled(&self) -> bool {
        self.is_checked() && self.enabled.load(Relaxed)
    }

    /// Checks paused by maintenance (`CHK_ST_PAUSED`).
    pub(crate) fn is_paused(&self) -> bool {
        self.paused.load(Relaxed)
    }

    /// Check results count: enabled and not paused.
    pub(crate) fn checks_active(&self) -> bool {
        self.check_enabled() && !self.is_paused()
    }

    /// `enable health` / `disable health`. Returns false when checks are not
    /// configured on the server (enabling is refused then).
    pub(crate) fn set_check_enabled(&self, on: bool) -> bool {
        if on && !self.is_checked() {
            return false;
        }
        self.enabled.store(on, Relaxed);
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CheckInfo> {
        match self.info.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn go_down(&self) {
        self.op.store(OP_STOPPED, Relaxed);
        self.chkdown.fetch_add(1, Relaxed);
        self.last_change.store(now_secs(), Relaxed);
    }

    fn go_up(&self, op: u8) {
        let now = now_secs();
        self.came_up.store(now, Relaxed);
        let since = self.last_change.swap(now, Relaxed);
        self.downtime.fetch_add(now.saturating_sub(since), Relaxed);
        self.op.store(op, Relaxed);
    }

    /// Between UP and NOLB: no down period ends, but it is a state change
    /// (`lastchg` restarts, HAProxy's `last_change`) and coming back to UP
    /// restarts `slowstart`, as HAProxy's `srv_set_running` does.
    fn change_up_state(&self, op: u8) {
        let now = now_secs();
        if op == OP_RUNNING {
            self.came_up.store(now, Relaxed);
        }
        self.last_change.store(now, Relaxed);
        self.op.store(op, Relaxed);
    }

    /// `set server .. health up|stopping|down`: moves the state machine as
    /// HAProxy does (`up`/`stopping`: health to its maximum; `down`: 0). The
    /// check status is kept. In maintenance only the health value changes.
    pub(crate) fn force(&self, to: Forced) {
        let mut g = self.lock();
        let max = g.rise + g.fall - 1;
        g.health = if to == Forced::Down { 0 } else { max };
        if self.is_paused() {
            return;
        }
        let was_up = self.is_up();
        match to {
            Forced::Down if was_up => self.go_down(),
            Forced::Down => {}
            Forced::Up | Forced::Stopping => {
                let op = if to == Forced::Up {
                    OP_RUNNING
                } else {
                    OP_STOPPING
                };
                if was_up {
                    self.op.store(op, Relaxed);
                } else {
                    self.go_up(op);
                }
            }
        }
    }

    /// A server that starts in maintenance: DOWN at health 0 from the
    /// start, its checks `paused` or not; no down period is counted.
    pub(crate) fn start_stopped(&self, paused: bool) {
        let mut g = self.lock();
        g.health = 0;
        self.op.store(OP_STOPPED, Relaxed);
        self.paused.store(paused, Relaxed);
        self.last_change.store(now_secs(), Relaxed);
    }

    /// Entering maintenance: checks paused, health 0, DOWN (counted in
    /// `chkdown` as HAProxy does).
    pub(crate) fn enter_maint(&self) {
        let mut g = self.lock();
        // Only checks that exist are paused (HAProxy shows no paused
        // check on a server without `check`).
        self.paused.store(self.is_checked(), Relaxed);
        g.health = 0;
        if self.is_up() {
            self.go_down();
        }
    }

    /// Leaving maintenance: UP at health `rise` ("start OK but check
    /// immediately", so one failed check takes it down again). A server
    /// without checks keeps health 0, as HAProxy shows it in `show servers
    /// state`.
    pub(crate) fn leave_maint(&self, keep_paused: bool) {
        let checked = self.is_checked();
        let mut g = self.lock();
        if checked {
            g.health = g.rise;
        }
        if !self.is_up() {
            self.go_up(OP_RUNNING);
        } else {
            self.op.store(OP_RUNNING, Relaxed);
        }
        self.paused.store(keep_paused, Relaxed);
    }

    pub(crate) fn info(&self) -> CheckInfo {
        match self.info.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Keep rise/fall in step with a reloaded config, without touching the
    /// state itself.
    pub(crate) fn set_rise_fall(&self, rise: u32, fall: u32) {
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
    /// Ignored while checks are disabled or paused (maintenance).
    pub(crate) fn record(
        &self,
        status: CheckStatus,
        code: Option<u16>,
        duration_ms: u64,
        detail: String,
    ) -> Option<Transition> {
        let mut g = self.lock();
        if !self.checks_active() {
            return None;
        }
        g.status = status;
        g.code = code;
        g.duration_ms = Some(duration_ms);
        g.detail = detail;
        let (rise, fall) = (g.rise, g.fall);
        let was_up = self.is_up();
        let conditional = status == CheckStatus::L7OkC;
        let mut transition = None;
        if status.is_ok() {
            // A conditional pass cannot make the first step up from 0
            // (HAProxy's CHK_RES_CONDPASS).
            if g.health < rise + fall - 1 && (!conditional || g.health > 0) {
                g.health += 1;
            }
            if g.health >= rise {
                g.health = rise + fall - 1;
                let op = self.op.load(Relaxed);
                transition = if !was_up && !self.agent_ok() {
                    // The agent holds it DOWN (HAProxy's check_notify_success).
                    None
                } else if !was_up {
                    Some(Transition::WentUp)
                } else if conditional && op == OP_RUNNING {
                    Some(Transition::WentStopping)
                } else if !conditional && op == OP_STOPPING {
                    // A check that passes outright ends NOLB.
                    Some(Transition::Resumed)
                } else {
                    None
                };
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
            Some(Transition::WentDown) => self.go_down(),
            Some(Transition::WentUp) => self.go_up(op_after(conditional)),
            Some(Transition::WentStopping) => self.change_up_state(OP_STOPPING),
            Some(Transition::Resumed) => self.change_up_state(OP_RUNNING),
            None => {}
        }
        transition
    }

    /// `slowstart` ramp, in sixteenths of the full weight (HAProxy's
    /// `BE_WEIGHT_SCALE` steps): 16 unless the server came back UP less
    /// than `slowstart` seconds ago. Never at process start.
    #[inline]
    pub(crate) fn ramp16(&self, slowstart_secs: u32) -> u32 {
        if slowstart_secs == 0 {
            return 16;
        }
        let up = self.came_up.load(Relaxed);
        if up == 0 {
            return 16;
        }
        let elapsed = now_secs().saturating_sub(up);
        if elapsed >= u64::from(slowstart_secs) {
            return 16;
        }
        ((16 * elapsed + u64::from(slowstart_secs)) / u64::from(slowstart_secs)) as u32
    }

    /// Percentage of `maxconn` allowed during slowstart (HAProxy's
    /// `srv_dynamic_maxconn`): 100 outside the ramp.
    pub(crate) fn ramp_percent(&self, slowstart_secs: u32) -> u32 {
        let up = self.came_up.load(Relaxed);
        if slowstart_secs == 0 || up == 0 {
            return 100;
        }
        let elapsed = now_secs().saturating_sub(up);
        if elapsed >= u64::from(slowstart_secs) {
            return 100;
        }
        (100 * elapsed / u64::from(slowstart_secs)) as u32
    }

    /// `error-limit` consecutive live-traffic errors (`observe`), as
    /// HAProxy's `__health_adjust`: `fail-check` counts one failed check,
    /// `sudden-death` first leaves a single check before DOWN, `mark-down`
    /// takes the server DOWN now. The status becomes HANA.
    pub(crate) fn passive_failure(
        &self,
        sudden_death: bool,
        mark_down: bool,
        detail: String,
    ) -> Option<Transition> {
        let mut g = self.lock();
        if !self.checks_active() {
            return None;
        }
        if mark_down {
            g.health = g.rise;
        } else if sudden_death && g.health > g.rise {
            g.health = g.rise + 1;
        }
        g.status = CheckStatus::Hana;
        g.code = None;
        g.detail = detail;
        let was_up = self.is_up();
        if g.health > 0 {
            if was_up {
                self.chkfail.fetch_add(1, Relaxed);
            }
            g.health -= 1;
            if g.health < g.rise {
                g.health = 0;
                if was_up {
                    self.go_down();
                    return Some(Transition::WentDown);
                }
            }
        }
        None
    }

    /// A state change that is not a move between UP and DOWN (drain):
    /// `lastchg` restarts, as HAProxy's `last_change`; a down period
    /// running is not counted in `downtime`, as HAProxy counts it.
    pub(crate) fn touch(&self) {
        self.last_change.store(now_secs(), Relaxed);
    }

    /// Seconds since the last state change.
    pub(crate) fn lastchg(&self) -> u64 {
        now_secs().saturating_sub(self.last_change.load(Relaxed))
    }

    /// Total seconds down, including the current down period.
    pub(crate) fn downtime(&self) -> u64 {
        let past = self.downtime.load(Relaxed);
        if self.is_up() {
            past
        } else {
            past + self.lastchg()
        }
    }

    /// The `status` column outside maintenance (HAProxy's `srv_hlt_st`):
    /// `UP`, `UP 1/3`, `DOWN`, `DOWN 1/2`, `NOLB`, `NOLB 2/3`, `DRAIN`,
    /// `DRAIN 2/3`, `no check`. `drain`: the server is in DRAIN admin state.
    pub(crate) fn status_text_admin(&self, drain: bool) -> String {
        let i = self.info();
        let max = i.rise + i.fall - 1;
        let checks = self.check_enabled();
        let going_down = || format!("{}/{}", (i.health + 1).saturating_sub(i.rise), i.fall);
        let agent = self.agent_enabled().then(|| self.agent_info()).flatten();
        match self.op_state() {
            OP_STOPPED => {
                if agent.as_ref().is_some_and(|a| a.health == 0) {
                    "DOWN (agent)".to_string()
                } else if checks && i.health == 0 {
                    "DOWN".to_string()
                } else if checks || agent.is_some() {
                    format!("DOWN {}/{}", i.health, i.rise)
                } else {
                    "DOWN".to_string()
                }
            }
            OP_STOPPING => {
                if !checks || i.health >= max {
                    "NOLB".to_string()
                } else {
                    format!("NOLB {}", going_down())
                }
            }
            _ => {
                let gd = checks && i.health < max;
                match (drain, gd) {
                    (true, _) if agent.is_some() => "DRAIN (agent)".to_string(),
                    (true, true) => format!("DRAIN {}", going_down()),
                    (true, false) => "DRAIN".to_string(),
                    (false, true) => format!("UP {}", going_down()),
                    (false, false) if !checks => "no check".to_string(),
                    (false, false) => "UP".to_string(),
                }
            }
        }
    }

    #[cfg(test)]
    /// [`Health::status_text_admin`] for a server in no admin state.
    pub(crate) fn status_text(&self) -> String {
        self.status_text_admin(false)
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

    #[test]
    fn a_conditional_pass_puts_an_up_server_in_nolb_and_a_pass_ends_it() {
        let okc = |h: &Health| h.record(CheckStatus::L7OkC, Some(404), 0, String::new());
        let h = Health::new(true, 2, 3);
        let changed = h.last_change.load(Relaxed);
        assert_eq!(okc(&h), Some(Transition::WentStopping));
        assert_eq!(h.status_text(), "NOLB");
        assert!(h.is_up() && !h.is_running());
        assert!(h.last_change.load(Relaxed) >= changed);
        assert_eq!(okc(&h), None, "already NOLB");
        fail(&h);
        assert_eq!(h.status_text(), "NOLB 2/3");
        assert_eq!(okc(&h), None, "back to full health, still NOLB");
        assert_eq!(h.status_text(), "NOLB");
        assert_eq!(ok(&h), Some(Transition::Resumed));
        assert_eq!(h.status_text(), "UP");
        assert_eq!((h.downtime(), h.chkdown.load(Relaxed)), (0, 0));
        // From DOWN, a conditional pass cannot make the first step.
        fail(&h);
        fail(&h);
        assert_eq!(fail(&h), Some(Transition::WentDown));
        assert_eq!(okc(&h), None);
        assert_eq!(h.status_text(), "DOWN");
    }

    #[test]
    fn an_agent_and_the_checks_must_agree_for_up() {
        let h = Health::new(true, 2, 3);
        h.set_agent(true, true);
        ok(&h);
        assert_eq!(h.status_text(), "UP");
        let down = |h: &Health| {
            h.record_agent(
                CheckStatus::L7Sts,
                Some(false),
                0,
                "via agent : down".into(),
                false,
            )
        };
        let up = |h: &Health| {
            h.record_agent(
                CheckStatus::L7Ok,
                Some(true),
                0,
                "via agent : up".into(),
                false,
            )
        };
        assert_eq!(down(&h), Some(Transition::WentDown));
        assert_eq!(h.status_text(), "DOWN (agent)");
        // Passing checks do not bring it back while the agent says down.
        assert_eq!(ok(&h), None);
        assert_eq!(h.status_text(), "DOWN (agent)");
        assert_eq!(up(&h), Some(Transition::WentUp));
        assert_eq!(h.status_text(), "UP");
        // An agent that cannot be reached changes nothing.
        assert_eq!(
            h.record_agent(
                CheckStatus::L4Con,
                None,
                0,
                "Connection refused".into(),
                false
            ),
            None
        );
        assert!(h.is_up());
        // Failing checks take it down whatever the agent says; the agent
        // alone cannot bring it back.
        fail(&h);
        fail(&h);
        assert_eq!(fail(&h), Some(Transition::WentDown));
        assert_eq!(up(&h), None);
        assert_eq!(h.status_text(), "DOWN");
        ok(&h);
        assert_eq!(ok(&h), Some(Transition::WentUp));
        // In maintenance, the agent moves nothing.
        assert_eq!(
            h.record_agent(CheckStatus::L7Sts, Some(false), 0, String::new(), true),
            None
        );
        assert!(h.is_up());
        assert!(h.set_agent_enabled(false));
        assert!(!Health::new(false, 2, 3).set_agent_enabled(true));
    }

    #[test]
    fn forced_health_and_maintenance() {
        let h = Health::new(true, 2, 3);
        ok(&h);
        h.force(Forced::Stopping);
        assert_eq!(h.status_text(), "NOLB");
        assert!(h.is_up() && !h.is_running());
        fail(&h);
        assert_eq!(h.status_text(), "NOLB 2/3");
        ok(&h);
        assert_eq!(
            h.status_text(),
            "UP",
            "a passing check at full health ends NOLB"
        );
        h.force(Forced::Down);
        assert_eq!(h.status_text(), "DOWN");
        assert_eq!(h.chkdown.load(Relaxed), 1);
        ok(&h);
        assert_eq!(h.status_text(), "DOWN 1/2");
        h.force(Forced::Up);
        assert_eq!(h.status_text(), "UP");
        assert_eq!(h.status_text_admin(true), "DRAIN");
        h.enter_maint();
        assert!(!h.is_up());
        assert_eq!(h.chkdown.load(Relaxed), 2);
        assert_eq!(ok(&h), None, "checks are paused in maintenance");
        assert_eq!(h.info().health, 0);
        h.leave_maint(false);
        assert_eq!(h.status_text(), "UP 1/3");
        assert!(h.set_check_enabled(false));
        assert_eq!(h.status_text(), "no check");
        assert_eq!(fail(&h), None);
        assert!(!Health::new(false, 2, 3).set_check_enabled(true));
        assert_eq!(Health::new(false, 2, 3).status_text(), "no check");
    }
}
