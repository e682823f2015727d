//! The peers protocol: this process as a peer of the others of its
//! `peers` sections, HAProxy's peers protocol 2.1 over TCP or TLS. It
//! pushes the updates of the tables synchronised with a section to every
//! peer and takes theirs, resynchronises a table from a peer when it
//! starts, and teaches a peer that asks. Network code over the table
//! store (`state/table/`): it reads the updates the store numbers and
//! writes the entries peers send.

pub(crate) mod codec;
