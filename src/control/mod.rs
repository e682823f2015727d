//! The control plane, on top of everything: the command line and start-up
//! (`startup`), reloads (`reload`), socket hand-over to a new binary
//! (`takeover`), master-worker mode and the master CLI (`master`), the stats socket's command interpreter and server (`cli`),
//! the servers' saved state read at start-up (`server_state`) and the man
//! pages (`manpage`).

pub mod cli;
pub mod manpage;
pub(crate) mod master;
pub(crate) mod reload;
pub(crate) mod server_state;
pub mod startup;
pub(crate) mod takeover;
