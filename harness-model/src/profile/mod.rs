//! A benchmark profile: a typed, validated TOML document.
//!
//! Parsing happens in two passes so that errors can point at a line: a strict serde pass over
//! the source text (unknown keys, wrong types — `toml` reports the span), then domain checks
//! (`Workload::validate`, matrix axes) that report the span of the offending value. `--set`
//! overrides are applied after the strict pass and reported against the command line.
//!
//! * ab.rs          — the `[ab]` table of `harness ab`
//! * auth.rs        — the `[auth]` table: ACL credentials (the environment wins)
//! * broker_choice.rs — `[broker] kind` / `version`: which broker a cell runs on
//! * store_tmpfs.rs — `[broker] store_tmpfs`: the store on a small tmpfs; the harness's own keys
//! * document.rs    — `Profile`: the two passes, matrix axes, `--set`
//! * workload.rs    — the `[workload]` table and its domain checks
//! * consumer.rs    — the `[consumer]` table (push consumers) and its domain checks
//! * fault.rs       — the `[fault]` table: kill, restart, pause, every
//! * fault_error.rs — why a `[fault]` table or plan is refused, and which key it names
//! * cluster.rs     — the `[cluster]` table and per-broker keys `broker.<i>.<key>`
//! * settings.rs    — run order, `[validity]`, key metrics
//! * knee.rs, slo.rs — `[knee]` and `[slo]` of `model = "knee"`
//! * secs.rs        — durations written as seconds or with a unit
//! * value.rs       — scalar values as written into broker.conf and `param_` columns
//! * version_table.rs — `[broker."<version>"]`: keys for one release's cells
//! * diagnostics.rs — located errors and "did you mean"

mod ab;
mod auth;
mod broker_choice;
mod cluster;
mod consumer;
mod diagnostics;
mod document;
mod failure;
mod fault;
mod fault_error;
mod knee;
mod secs;
mod set;
mod settings;
mod slo;
mod store_tmpfs;
mod value;
mod version_table;
mod workload;

pub use ab::{ab_settings_of, AbError, AbSettings, FailWhen, AB_METRICS};
pub use auth::{AuthSection, Secret, AUTH_KEYS};
pub use broker_choice::{
    in_tree_version_profile, BrokerChoice, BrokerChoiceError, APACHE_VERSIONS, IN_TREE_PROFILE_KEY,
    KIND_KEY, VERSION_KEY,
};
pub use cluster::{
    bare_key, check_brokers_axis, per_broker_key, BrokersAxisError, ClusterSpec,
    CLUSTER_BROKERS_AXIS, MAX_BROKERS,
};
pub use consumer::{
    consumer_with, ClientVersion, ConsumeFrom, ConsumeMode, Consumer, PercentilePoint, Processing,
    CONSUMER_KEYS,
};
pub use diagnostics::{
    did_you_mean, line_col, PerBrokerKeyError, ProfileError, SectionError, TableError,
};
pub use document::{Axis, Profile};
pub use fault::{fault_plan, fault_with, parse_pause, FaultPlan, FaultRole, Pause, ReadBack};
pub use fault_error::{FaultError, FAULT_KEYS};
pub use knee::{Knee, WARM_UP_JIT_QUIET, WARM_UP_NOISE_Z, WARM_UP_STEADY, WARM_UP_WINDOW};
pub use secs::{parse_secs, Secs};
pub use settings::{higher_is_better, Order, Validity, KEY_METRICS};
pub use slo::{Slo, SloTerm, SloTermError};
pub use store_tmpfs::{
    is_harness_key, parse_store_tmpfs, StoreTmpfsError, HARNESS_BROKER_KEYS, MIN_STORE_TMPFS,
    STORE_TMPFS_KEY,
};
pub use value::{parse_set_value, value_string};
pub use version_table::VersionTableError;
pub use workload::{
    workload_with, HeaderKind, Model, RetryPolicy, SendCode, SendOrdering, Step, Workload,
    WORKLOAD_KEYS,
};
