//! SPOE engines as a snapshot runs them (`filter spoe`): the engine's
//! configuration with its messages' conditions compiled, and the
//! connections to its agents kept between exchanges
//! (`upstream/spoe.rs` makes the exchanges).

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use tokio::net::TcpStream;

use crate::acl::eval::{AclSet, CompiledCond};
use crate::config::spoe::{SpoeEngine, SpoeEvent};

/// An engine as a snapshot runs it: its messages' conditions compiled,
/// and the connections to its agents kept between messages.
#[derive(Debug)]
pub(crate) struct SpoeRt {
    pub(crate) conf: SpoeEngine,
    /// Each message's ACLs and event condition.
    pub(crate) conds: Vec<(AclSet, Option<CompiledCond>)>,
    pub(crate) idle: Mutex<Vec<TcpStream>>,
    pub(crate) next_id: AtomicU64,
}

impl SpoeRt {
    pub(crate) fn new(conf: SpoeEngine) -> SpoeRt {
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
            idle: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
        }
    }

    /// The messages `event` sends whose condition holds.
    pub(crate) fn for_event(&self, event: SpoeEvent, cx: &crate::sample::Ctx<'_>) -> Vec<usize> {
        self.conf
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.event.as_ref().is_some_and(|(e, _)| *e == event))
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
