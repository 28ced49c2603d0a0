//! The consumers' figures as the reports take them: one second, and a whole job. The types are
//! the result-folder contract's (`harness_results::consumer`); what is computed from the
//! consumers' own state is here.

use crate::consumer::failure::Failures;
pub use harness_results::consumer::{BrokerCounts, ConsumerFigures, ConsumerSecond, RetryFigures};

/// The retry figures of the consumers' failures, with the broker's own counters.
pub fn retry_figures(f: &Failures, broker: Option<[u64; 4]>) -> RetryFigures {
    RetryFigures {
        failures: Failures::count(&f.failures),
        retries: Failures::count(&f.retries),
        dlq: Failures::count(&f.dlq),
        pending: f.pending(),
        send_backs: Failures::count(&f.send_backs),
        send_back_failed: Failures::count(&f.send_back_failed),
        send_back_fallback: Failures::count(&f.send_back_fallback),
        suspends: Failures::count(&f.suspends),
        delay_us: f.delay_quantiles(),
        broker,
    }
}
