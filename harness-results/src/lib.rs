//! harness-results: the result-folder contract between `harness run` (and `harness merge`) and
//! everything that reads a run afterwards.
//!
//! It owns what a result folder's files mean, as pure data: the column lists of `summary.csv`
//! and `timeseries.csv` ([`columns`]), how a cell is written (fixed decimals, names from serde
//! fields: [`cells`]), the busy classes behind the `busy_<class>` columns ([`BusyClass`]), the
//! atomic write every rewritten file goes through ([`write_atomic`]), and the reader the
//! offline analysis loads a run with ([`read`]).
//!
//! It must never import tokio, `remoting`, `rmq-client` or `harness`: it sits below the
//! analysis (`harness-analysis`), which builds and tests without a runtime or the wire format.
//! The runner-side row structs that are filled from live figures stay in `harness::report`.

mod atomic;
mod busy;
pub mod cells;
pub mod columns;
pub mod read;

pub use atomic::write_atomic;
pub use busy::BusyClass;
