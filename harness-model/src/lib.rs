//! harness-model: what a benchmark run is, as pure data. A profile (its TOML, `--set`
//! overrides, validation with file, line and fix), the matrix of cells it expands to, each
//! cell's schedule of phases, how a run is spread over shards, and the gate's rule language.
//!
//! The bottom of the harness's crates: it imports no other crate of the workspace, never tokio,
//! never the wire protocol (`remoting`), and nothing that measures, writes results or talks to
//! a broker. Everything above (results, analysis, the runner) reads these types.

pub mod fnv;
pub mod locate;
pub mod matrix;
pub mod profile;
pub mod rules;
pub mod schedule;
pub mod shard;
