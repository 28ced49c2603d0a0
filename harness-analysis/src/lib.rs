//! harness-analysis: everything that reads result folders after a run — `harness compare` and
//! `harness gate` ([`compare`]), `harness drift` ([`drift`]), the HTML report ([`html`]), the reading side of
//! `harness merge` ([`merge`]) and the fidelity table ([`fidelity`]).
//!
//! It owns the statistics, the comparison model, the gate's evaluation, the renderings and
//! the report's charts; it reads runs through `harness-results` and takes profiles and rules
//! from `harness-model`. It must never import tokio, `remoting`, `rmq-client` or `harness`
//! (nor anything that runs a broker or opens a socket): it builds and tests on its own, so the
//! analysis can change without rebuilding the runner. Printing results and mapping them to
//! exit codes is `harness`'s job, except `drift`, which prints its table.

pub mod compare;
pub mod drift;
pub mod fidelity;
pub mod html;
pub mod merge;
