//! Request code → (processor, executor), admission, and the rules for writing answers
//! (reference §1.5, §4.2).
//!
//! A façade: the shared task types live in [`crate::task`], the executor queues and threads in
//! [`crate::executor`], the answer rules in `answer.rs`, the routing table in `route.rs`,
//! admission in `admit.rs`, the ACL gate in front of the processors in `access.rs`.

pub mod access;
mod admit;
mod answer;
pub mod fast_failure;
mod route;

pub use crate::task::{AnswerSource, ExecutorKind, ProcessorKind, RequestTask, Responder};
pub use admit::admit;
pub use answer::{answer, response};
pub use route::route;
