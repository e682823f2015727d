//! SPOE engines as a snapshot runs them (`filter spoe`): the engine's
//! configuration with its messages' conditions compiled, and the
//! connections to its agents with the frames waiting for their ACK
//! (`upstream/spoe.rs` makes the exchanges).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};

use tokio::net::tcp::OwnedWriteHalf;

use crate::acl::eval::{AclSet, CompiledCond};
use crate::config::spoe::{SpoeEngine, SpoeEvent};

/// An engine as a snapshot runs it: its messages' conditions compiled,
/// and the connections to its agents.
#[derive(Debug)]
pub(crate) struct SpoeRt {
    pub(crate) conf: SpoeEngine,
    /// Each message's ACLs and event condition.
    pub(crate) conds: Vec<(AclSet, Option<CompiledCond>)>,
    /// The engine's proxy is a `listen` section: its backend events go
    /// with the frontend's (HAProxy puts their messages in one frame).
    pub(crate) listen: bool,
    pub(crate) agents: Arc<AgentPool>,
    /// Where the agent's processing is logged (its `log` lines).
    pub(crate) log: Option<crate::snapshot::log_setup::LogSetup>,
    /// The events and groups processed, and those that failed (the last
    /// two figures of its log lines).
    pub(crate) processed: AtomicU64,
    pub(crate) errors: AtomicU64,
    /// The engine's id in its HELLO frames: a UUID drawn when the engine
    /// is compiled, as HAProxy draws one per engine (agents tell engines
    /// apart by it).
    pub(crate) engine_id: String,
}

/// The connections to an engine's agents, and the frames sent on them
/// still waiting for their ACK, by (stream id, frame id): an agent that
/// answers asynchronously may ACK on any of them.
#[derive(Debug, Default)]
pub(crate) struct AgentPool {
    pub(crate) links: Mutex<Vec<Arc<AgentLink>>>,
    pub(crate) waiting: Mutex<HashMap<(u64, u64), Waiter>>,
}

/// A frame waiting for its ACK: where the ACK's payload goes (or the
/// error code of the exchange, `option set-on-error`'s value), and the
/// connection it was sent on.
#[derive(Debug)]
pub(crate) struct Waiter {
    pub(crate) tx: tokio::sync::oneshot::Sender<Result<Vec<u8>, u16>>,
    pub(crate) link: Arc<AgentLink>,
}

/// One connection to an agent, its HELLO done: what was agreed and how
/// many frames wait on it.
#[derive(Debug)]
pub(crate) struct AgentLink {
    pub(crate) write: tokio::sync::Mutex<OwnedWriteHalf>,
    /// Frames sent (or about to be) whose ACK has not come.
    pub(crate) waiting: AtomicUsize,
    /// How many may wait at once: `max-waiting-frames` when both sides
    /// pipeline, else one.
    pub(crate) room: usize,
    /// The frame size the agent accepts (at most the engine's).
    pub(crate) frame_max: usize,
    /// The agent takes fragmented frames (its `fragmentation`).
    pub(crate) fragmentation: bool,
    /// Closed by the agent, or failed: not used again.
    pub(crate) dead: AtomicBool,
}

impl SpoeRt {
    pub(crate) fn new(
        conf: SpoeEngine,
        listen: bool,
        log: Option<crate::snapshot::log_setup::LogSetup>,
    ) -> SpoeRt {
        let conds = conf
            .messages
            .iter()
            .map(|m| {
                let acls = AclSet::new(&m.acls);
                let cond = m
                    .event
                    .as_ref()
                    .and_then(|(_, c)| c.as_ref())
                    .map(|c| acls.compile(c));
                (acls, cond)
            })
            .collect();
        SpoeRt {
            conf,
            conds,
            listen,
            agents: Arc::default(),
            log,
            processed: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            engine_id: crate::sample::random::uuid4(),
        }
    }

    /// Whether the engine sends anything on `event` (checked before a
    /// context is built for it).
    pub(crate) fn sends_on(&self, event: SpoeEvent) -> bool {
        self.conf.messages.iter().any(|m| {
            m.event.as_ref().is_some_and(|(e, _)| {
                *e == event || (self.listen && event.backend_twin() == Some(*e))
            })
        })
    }

    /// The messages `event` sends whose condition holds. An engine of a
    /// `listen` section sends its backend events' messages with the
    /// frontend's, and not again.
    pub(crate) fn for_event(&self, event: SpoeEvent, cx: &crate::sample::Ctx<'_>) -> Vec<usize> {
        let twin = if self.listen {
            if matches!(
                event,
                SpoeEvent::BackendTcpRequest | SpoeEvent::BackendHttpRequest
            ) {
                return Vec::new();
            }
            event.backend_twin()
        } else {
            None
        };
        self.conf
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                m.event
                    .as_ref()
                    .is_some_and(|(e, _)| *e == event || Some(*e) == twin)
            })
            .filter(|(i, _)| {
                let (acls, cond) = &self.conds[*i];
                cond.as_ref().is_none_or(|c| acls.eval(c, cx))
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The messages of group `name`, if the engine has it.
    pub(crate) fn group(&self, name: &str) -> Option<&[usize]> {
        self.conf
            .groups
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, m)| &m[..])
    }
}
