//! Why a `[fault]` table, or a fault plan with the workload or the brokers it runs against, is
//! refused. Each message names the key and the fix; [`FaultError::key`] says which key of
//! `[fault]` the profile loader points at. A leaf: fault.rs imports it, never the reverse.

use std::time::Duration;

/// Every key accepted in `[fault]` (here rather than in fault.rs: the errors name them, and
/// fault.rs imports the errors).
pub const FAULT_KEYS: &[&str] = &[
    "kill",
    "restart",
    "restart_after",
    "pause",
    "every",
    "broker",
    "role",
    "read_back",
];

/// A `[fault]` problem. Values are carried as written in TOML (`(got "no")`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultError {
    #[error("`fault.{key}` must be a duration such as \"6s\" or \"500ms\" (got {got})")]
    NotADuration { key: &'static str, got: toml::Value },
    #[error("`fault.{key}` must be true or false (got {got})")]
    NotBool { key: &'static str, got: toml::Value },
    #[error("`fault.pause` must be a string like \"3s for 1500ms\" (got {0})")]
    PauseNotString(toml::Value),
    #[error(
        "`fault.pause` must read \"<when> for <how long>\", e.g. \"3s for 1500ms\" (got \"{0}\")"
    )]
    PauseShape(String),
    #[error("`fault.pause` needs a length above 0")]
    PauseLength,
    #[error("`fault.broker` must be a broker index from 0 (got {0})")]
    BrokerIndex(toml::Value),
    #[error("`fault.role` must be \"master\" or \"slave\" (got {0})")]
    Role(toml::Value),
    #[error("unknown fault key `{key}`{}; valid: {}", suggestion.map_or(String::new(), |b| format!(" (did you mean `{b}`?)")), FAULT_KEYS.join(", "))]
    UnknownKey {
        key: String,
        suggestion: Option<&'static str>,
    },
    #[error("`fault.restart = true` needs a `kill`")]
    RestartWithoutKill,
    #[error("`fault.restart_after` needs `restart = true`")]
    RestartAfterWithoutRestart,
    #[error("`fault.role` with `restart = true` is not supported: the harness does not start a member of a pair again; remove `restart`")]
    RoleWithRestart,
    #[error("[fault] needs `kill = \"6s\"` or `pause = \"3s for 1500ms\"`")]
    Nothing,
    #[error(
        "`fault.every` with `kill` needs `restart = true` (a dead broker cannot be killed again)"
    )]
    EveryKillWithoutRestart,
    #[error("`fault.pause` lasts {length:?}, longer than `fault.every` ({every:?}); the broker would never run")]
    PauseLongerThanEvery { length: Duration, every: Duration },
    #[error("`fault.restart_after` ({restart_after:?}) must be shorter than `fault.every` ({every:?}): the next kill would find the broker dead")]
    RestartAfterNotShorter {
        restart_after: Duration,
        every: Duration,
    },
    #[error("`fault.every` must be at least 100ms")]
    EveryTooShort,
    #[error("`fault.broker` = {broker} names broker {broker}, but the profile starts {brokers} broker{} (brokers count from 0: use 0..{}, or add [cluster] brokers = {})", if *brokers == 1 { "" } else { "s" }, brokers.saturating_sub(1), broker + 1)]
    BrokerOutOfRange { broker: usize, brokers: usize },
    #[error("[fault] needs a fixed schedule: use model = \"open\" or \"steps\"")]
    ClosedModel,
    #[error("[fault] compares answers with the store; oneway sends have no answer")]
    Oneway,
    #[error("[fault] keeps one outcome per message; use batch = 1")]
    Batch,
    #[error("`fault.kill` at {kill:?} is not inside the measured window ({measured:?})")]
    KillOutside { kill: Duration, measured: Duration },
    #[error("`fault.restart_after`: the restart at {restart:?} is not inside the measured window ({measured:?})")]
    RestartOutside {
        restart: Duration,
        measured: Duration,
    },
    #[error("`fault.pause` ends at {end:?}, not inside the measured window ({measured:?})")]
    PauseOutside { end: Duration, measured: Duration },
}

impl FaultError {
    /// The key of `[fault]` the problem is about, for the line a message points at; None when
    /// it is about the table as a whole, an unknown key or the workload.
    pub fn key(&self) -> Option<&'static str> {
        use FaultError::*;
        Some(match self {
            NotADuration { key, .. } | NotBool { key, .. } => key,
            PauseNotString(_) | PauseShape(_) | PauseLength | PauseLongerThanEvery { .. } => {
                "pause"
            }
            PauseOutside { .. } => "pause",
            BrokerIndex(_) | BrokerOutOfRange { .. } => "broker",
            Role(_) | RoleWithRestart => "role",
            RestartWithoutKill => "restart",
            RestartAfterWithoutRestart | RestartAfterNotShorter { .. } | RestartOutside { .. } => {
                "restart_after"
            }
            EveryKillWithoutRestart | EveryTooShort => "every",
            KillOutside { .. } => "kill",
            UnknownKey { .. } | Nothing | ClosedModel | Oneway | Batch => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::profile::Profile;

    fn error_line(fault: &str) -> String {
        let text = format!("name = \"p\"\n[workload]\nduration = \"10s\"\n[fault]\n{fault}");
        Profile::parse(&text, "p.toml", std::path::Path::new("p.toml"), &[])
            .unwrap_err()
            .to_string()
    }

    /// A `restart_after` problem points at `restart_after`'s line, not at `restart`'s (the old
    /// loader searched the text for `fault.restart`, a prefix of `fault.restart_after`).
    #[test]
    fn a_restart_after_problem_points_at_its_own_line() {
        for (fault, message) in [
            (
                "kill = \"2s\"\nrestart = true\nrestart_after = true\n",
                "must be a duration",
            ),
            (
                "kill = \"2s\"\nrestart_after = \"1s\"\n",
                "needs `restart = true`",
            ),
            (
                "kill = \"2s\"\nrestart = true\nrestart_after = \"9s\"\n",
                "measured window",
            ),
        ] {
            let e = error_line(fault);
            let line = 5 + fault
                .lines()
                .position(|l| l.starts_with("restart_after"))
                .unwrap();
            assert!(
                e.starts_with(&format!("p.toml:{line}:1: `fault.restart_after`")),
                "{e}"
            );
            assert!(e.contains(message), "{e}");
        }
        let e = error_line("restart = true\n");
        assert!(
            e.starts_with("p.toml:5:1: `fault.restart = true` needs a `kill`"),
            "{e}"
        );
    }
}
