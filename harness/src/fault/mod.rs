//! Fault experiments: the broker killed (`kill -9`), restarted on the same store, or paused
//! (SIGSTOP / SIGCONT) at planned points of the measured window, and what each send's answer
//! was, for the reconciliation with the store afterwards ([`crate::reconcile`]).
//!
//! * outcomes.rs — every send's final outcome by send number, and the recovery time
//! * injector.rs — the schedule of signals and restarts, driven from the job's sampling loop
//! * inject_error.rs — why a due signal or restart failed (typed; its text is the rows' reason)
//! * job.rs      — the job's hooks: an injector before the load, the reconciliation after it
//! * job_part.rs — the job part (`crate::part`) that drives the injector and the reconciliation
//! * cluster.rs  — the same for one broker of a cluster (`[fault] broker = K`), every broker
//!   read back
//! * pids.rs     — `--broker-pid PID` / `NAME=PID`: brokers the harness did not start
//! * port_hold.rs — a killed broker's port kept from other processes until its restart
//!
//! The plan itself is the profile's `[fault]` table ([`harness_model::profile::FaultPlan`]).

pub mod cluster;
mod error;
mod inject_error;
mod injector;
pub mod job;
pub mod job_part;
mod outcomes;
mod pids;
mod port_hold;

pub use error::FaultError;
pub use inject_error::InjectError;
pub use injector::{Injector, Restarter};
pub use pids::{BrokerPids, PidError};

pub use outcomes::{OutcomeLog, Recovery, SendState};
