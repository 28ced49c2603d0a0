//! Delay levels and the schedule service (retention-retry reference B4): messages with a `DELAY`
//! level are rewritten at put time to `SCHEDULE_TOPIC_XXXX`, queue level − 1, and a named
//! thread moves each one back to its `REAL_TOPIC` / `REAL_QID` once its level's delay has
//! passed. The per-level offsets survive a restart in `config/delayOffset.json`.
//!
//! A façade: every child is a leaf that does not know the [`Broker`](crate::broker::Broker).
//!
//! * levels.rs   — `messageDelayLevel`, parsed as RocketMQ parses it
//! * redirect.rs — the put-time rewrite (5.x's put hook; 4.x does the same inside CommitLog)
//! * offsets.rs  — `delayOffset.json` in fastjson's dialect
//! * service.rs  — ScheduleMessageService: delivery rounds, persistence, runtime info
//! * stats.rs    — send-back and schedule counters

pub mod levels;
pub mod offsets;
pub mod redirect;
pub mod service;
pub mod stats;

pub use levels::{DelayLevels, DEFAULT_MESSAGE_DELAY_LEVEL, SCHEDULE_TOPIC};
pub use redirect::redirect_delayed;
pub use service::ScheduleService;
pub use stats::RetryStats;
