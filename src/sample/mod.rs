//! HAProxy's sample language: a fetch (where a value comes from), a chain
//! of converters (what it becomes), typed as HAProxy types samples.
//!
//! One registry serves every place that takes a sample: [`fetch::FETCHES`]
//! and [`conv::CONVERTERS`] declare each keyword once (arguments, types,
//! what it needs), [`Expr::parse`] compiles an expression from the
//! configuration with HAProxy's messages, and [`Expr::eval`] runs it
//! against a request's [`Ctx`]. This module sits below `acl` and `config`
//! and above `wire`: it reads requests, never proxies or runtime state.

pub(crate) mod aead;
pub(crate) mod arg;
pub(crate) mod auth;
pub(crate) mod conn;
pub(crate) mod conv;
pub(crate) mod expr;
pub(crate) mod fetch;
pub(crate) mod hash;
pub(crate) mod hello;
pub(crate) mod json;
pub(crate) mod jwt;
pub(crate) mod patref;
pub(crate) mod pattern;
pub(crate) mod random;
pub(crate) mod script;
pub(crate) mod srvconn;
pub(crate) mod stage;
pub(crate) mod stick;
pub(crate) mod tune;
pub(crate) mod value;
pub(crate) mod vars;
pub(crate) mod x509;

pub(crate) use expr::{Expr, ExprError};
pub(crate) use fetch::{Count, Ctx, Proxies};
pub(crate) use stage::Stage;

#[cfg(test)]
mod alloc_check;
#[cfg(test)]
pub(crate) mod docs;
#[cfg(test)]
mod map_bench;
#[cfg(test)]
mod tests;
