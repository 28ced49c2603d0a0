//! One processor per file; each turns a [`RequestTask`](crate::task::RequestTask) into an answer
//! on the task's connection. A façade: dispatch by processor kind is in `run.rs`, the shared
//! header-error answer in `header.rs`.

pub mod admin;
pub mod consumer;
pub mod end_transaction;
mod header;
pub mod heartbeat;
pub mod lock;
pub mod pull;
mod pull_read;
mod run;
pub mod send;
pub mod send_back;

pub use header::header_error;
pub use run::process;
