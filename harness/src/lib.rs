//! harness: `profile → matrix → runner → recorder → report → compare/gate`.

pub mod compare;
