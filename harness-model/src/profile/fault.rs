//! The `[fault]` table: when, inside the measured window, the broker is killed (`kill`), started
//! again on the same store (`restart`) or stopped and continued (`pause`), once or `every` so
//! often. Kept as a TOML table like `[workload]` so that a matrix axis (`"fault.kill"`) or a
//! `--set fault.kill=4s` can replace one key and the whole plan is checked again.

use std::time::Duration;

use super::diagnostics::did_you_mean;
use super::fault_error::{FaultError, FAULT_KEYS};
use super::secs::parse_secs;
use super::workload::{Model, Workload};

/// Which member of a replicating pair (`[cluster] slaves = 1`) the fault hits: broker 0's
/// master or its slave (`fault.role`). Without it the fault hits the job's one broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultRole {
    Master,
    Slave,
}

impl FaultRole {
    pub fn name(self) -> &'static str {
        match self {
            FaultRole::Master => "master",
            FaultRole::Slave => "slave",
        }
    }
}

/// What the harness does with the stores after a job with a fault (`fault.read_back`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadBack {
    /// Read every queue back (from the job's broker where it runs when it is up at the end,
    /// else from its store opened by a fresh broker): the `acked_lost`, `phantom`, ... columns
    /// (`read_back = true`, the default).
    #[default]
    Stores,
    /// Leave the stores unread and those columns empty (`read_back = false`): for a question
    /// about the answers, not durability, on a kind whose brokers are slow to start (an Apache
    /// pair's read-back starts four more JVMs).
    Skip,
}

/// A SIGSTOP at `at` (from the start of the measured window) and a SIGCONT `length` later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pause {
    pub at: Duration,
    pub length: Duration,
}

/// The validated `[fault]` table. Offsets count from the start of the measured window (after
/// the warm-up), so the same plan means the same thing whatever the warm-up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FaultPlan {
    /// SIGKILL the broker this far into the measured window. Default: none.
    pub kill: Option<Duration>,
    /// After a kill, start the broker again on the same store and port. Default: false.
    pub restart: bool,
    /// How long the broker stays dead before the restart (`kill = "10s"`, `restart_after =
    /// "10s"`: back at 20 s). Default: 0s (at once).
    pub restart_after: Duration,
    /// SIGSTOP, then SIGCONT. Written `"3s for 1500ms"`. Default: none.
    pub pause: Option<Pause>,
    /// Repeat the kill (with restart) and the pause at this period. Default: once.
    pub every: Option<Duration>,
    /// Which broker of a cluster the faults hit: its 0-based index in the route's order
    /// (`broker-K` of `[cluster]`; with `--namesrv`, the K-th brokerName in sorted order).
    /// Default: 0.
    pub broker: usize,
    /// `"master"` or `"slave"`: the member of broker 0's pair (`[cluster] slaves = 1`) the
    /// fault hits. Default: none (the job's one broker).
    pub role: Option<FaultRole>,
    /// Whether the stores are read back after the job. Default: `Stores`.
    pub read_back: ReadBack,
}

fn duration_of(key: &'static str, v: &toml::Value) -> Result<Duration, FaultError> {
    let secs = match v {
        toml::Value::Integer(i) if *i >= 0 => Some(*i as f64),
        toml::Value::Float(f) if f.is_finite() && *f >= 0.0 => Some(*f),
        toml::Value::String(s) => parse_secs(s),
        _ => None,
    };
    secs.map(Duration::from_secs_f64)
        .ok_or_else(|| FaultError::NotADuration {
            key,
            got: v.clone(),
        })
}

/// Parses `"3s for 1500ms"`.
pub fn parse_pause(text: &str) -> Result<Pause, FaultError> {
    let bad = || FaultError::PauseShape(text.to_owned());
    let (at, length) = text.split_once(" for ").ok_or_else(bad)?;
    let at = parse_secs(at).ok_or_else(bad)?;
    let length = parse_secs(length).ok_or_else(bad)?;
    if length <= 0.0 {
        return Err(FaultError::PauseLength);
    }
    Ok(Pause {
        at: Duration::from_secs_f64(at),
        length: Duration::from_secs_f64(length),
    })
}

/// The plan of a `[fault]` table; `Ok(None)` for an empty table. Errors name the key and the fix.
pub fn fault_plan(table: &toml::Table) -> Result<Option<FaultPlan>, FaultError> {
    if table.is_empty() {
        return Ok(None);
    }
    let mut plan = FaultPlan::default();
    for (k, v) in table {
        match k.as_str() {
            "kill" => plan.kill = Some(duration_of("kill", v)?),
            "restart" => {
                plan.restart = v.as_bool().ok_or_else(|| FaultError::NotBool {
                    key: "restart",
                    got: v.clone(),
                })?
            }
            "pause" => {
                let text = v
                    .as_str()
                    .ok_or_else(|| FaultError::PauseNotString(v.clone()))?;
                plan.pause = Some(parse_pause(text)?);
            }
            "every" => plan.every = Some(duration_of("every", v)?),
            "restart_after" => plan.restart_after = duration_of("restart_after", v)?,
            "broker" => {
                plan.broker = v
                    .as_integer()
                    .and_then(|i| usize::try_from(i).ok())
                    .ok_or_else(|| FaultError::BrokerIndex(v.clone()))?
            }
            "read_back" => {
                plan.read_back = match v.as_bool() {
                    Some(true) => ReadBack::Stores,
                    Some(false) => ReadBack::Skip,
                    None => {
                        return Err(FaultError::NotBool {
                            key: "read_back",
                            got: v.clone(),
                        })
                    }
                }
            }
            "role" => {
                plan.role = Some(match v.as_str() {
                    Some("master") => FaultRole::Master,
                    Some("slave") => FaultRole::Slave,
                    _ => return Err(FaultError::Role(v.clone())),
                })
            }
            other => {
                return Err(FaultError::UnknownKey {
                    key: other.to_owned(),
                    suggestion: did_you_mean(other, FAULT_KEYS),
                })
            }
        }
    }
    plan.validate()?;
    Ok(Some(plan))
}

/// `table` with `key` set to `value`, as a checked plan (matrix axes and `--set`).
pub fn fault_with(
    table: &toml::Table,
    key: &str,
    value: &toml::Value,
) -> Result<Option<FaultPlan>, FaultError> {
    let mut t = table.clone();
    t.insert(key.to_owned(), value.clone());
    fault_plan(&t)
}

impl FaultPlan {
    fn validate(&self) -> Result<(), FaultError> {
        if self.restart && self.kill.is_none() {
            return Err(FaultError::RestartWithoutKill);
        }
        if !self.restart_after.is_zero() && !self.restart {
            return Err(FaultError::RestartAfterWithoutRestart);
        }
        if self.role.is_some() && self.restart {
            return Err(FaultError::RoleWithRestart);
        }
        if self.kill.is_none() && self.pause.is_none() {
            return Err(FaultError::Nothing);
        }
        if let Some(every) = self.every {
            if self.kill.is_some() && !self.restart {
                return Err(FaultError::EveryKillWithoutRestart);
            }
            if let Some(p) = self.pause {
                if p.length >= every {
                    return Err(FaultError::PauseLongerThanEvery {
                        length: p.length,
                        every,
                    });
                }
            }
            if self.kill.is_some() && self.restart_after >= every {
                return Err(FaultError::RestartAfterNotShorter {
                    restart_after: self.restart_after,
                    every,
                });
            }
            if every < Duration::from_millis(100) {
                return Err(FaultError::EveryTooShort);
            }
        }
        Ok(())
    }

    /// Checks `broker` against the brokers a profile starts (`[cluster] brokers`, 1 without
    /// it); with `--namesrv` the route decides, at the start of each job.
    pub fn check_brokers(&self, brokers: usize) -> Result<(), FaultError> {
        if self.broker >= brokers {
            return Err(FaultError::BrokerOutOfRange {
                broker: self.broker,
                brokers,
            });
        }
        Ok(())
    }

    /// Why `role` cannot be used with `slaves` slaves per broker: (message, fix), or None.
    pub fn role_problem(&self, slaves: u32) -> Option<(String, String)> {
        let role = self.role?;
        (slaves == 0).then(|| {
            (
                format!(
                    "`fault.role = \"{}\"` hits a member of a replicating pair, and the profile starts none",
                    role.name()
                ),
                "add [cluster] brokers = 1 and slaves = 1".into(),
            )
        })
    }

    /// Checks the plan against the workload it runs with: the outcome of every send is kept
    /// by send number, which needs a fixed schedule (open or steps), one message per request and
    /// an answer per send; and every fault must fall inside the measured window.
    pub fn check_workload(&self, w: &Workload) -> Result<(), FaultError> {
        if w.model == Model::Closed {
            return Err(FaultError::ClosedModel);
        }
        if w.oneway {
            return Err(FaultError::Oneway);
        }
        if w.batch > 1 {
            return Err(FaultError::Batch);
        }
        let measured: Duration = match w.model {
            Model::Steps => w.steps.iter().map(|s| s.duration.duration()).sum(),
            _ => w.duration.duration(),
        };
        if let Some(k) = self.kill {
            if k >= measured {
                return Err(FaultError::KillOutside { kill: k, measured });
            }
            if k + self.restart_after >= measured {
                return Err(FaultError::RestartOutside {
                    restart: k + self.restart_after,
                    measured,
                });
            }
        }
        if let Some(p) = self.pause {
            if p.at + p.length >= measured {
                return Err(FaultError::PauseOutside {
                    end: p.at + p.length,
                    measured,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn kill_restart_pause_every_parse() {
        let p = fault_plan(&table(
            "kill = \"6s\"\nrestart = true\npause = \"3s for 1500ms\"\nevery = 10",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(p.kill, Some(Duration::from_secs(6)));
        assert!(p.restart);
        assert_eq!(
            p.pause,
            Some(Pause {
                at: Duration::from_secs(3),
                length: Duration::from_millis(1500)
            })
        );
        assert_eq!(p.every, Some(Duration::from_secs(10)));
        assert_eq!(p.read_back, ReadBack::Stores);
        assert_eq!(fault_plan(&toml::Table::new()).unwrap(), None);
    }

    #[test]
    fn read_back_false_skips_the_stores() {
        let p = fault_plan(&table("pause = \"3s for 1s\"\nread_back = false"))
            .unwrap()
            .unwrap();
        assert_eq!(p.read_back, ReadBack::Skip);
        let e = fault_plan(&table("pause = \"3s for 1s\"\nread_back = \"no\"")).unwrap_err();
        assert!(e.to_string().contains("must be true or false"), "{e}");
    }

    #[test]
    fn contradictions_are_refused_with_the_fix() {
        for (text, needle) in [
            ("restart = true", "needs a `kill`"),
            ("kill = \"2s\"\nevery = \"5s\"", "needs `restart = true`"),
            ("pause = \"3s\"", "\"3s for 1500ms\""),
            ("pause = \"1s for 2s\"\nevery = \"1s\"", "longer than"),
            ("kil = \"2s\"", "did you mean `kill`"),
            ("kill = true", "must be a duration"),
            ("every = \"5s\"", "needs `kill"),
            ("kill = \"2s\"\nbroker = -1", "broker index"),
            (
                "kill = \"2s\"\nrestart_after = \"1s\"",
                "needs `restart = true`",
            ),
            (
                "kill = \"2s\"\nrestart = true\nrestart_after = \"3s\"\nevery = \"3s\"",
                "shorter than `fault.every`",
            ),
            (
                "role = \"leader\"\nkill = \"2s\"",
                "\"master\" or \"slave\"",
            ),
            (
                "role = \"slave\"\nkill = \"2s\"\nrestart = true",
                "remove `restart`",
            ),
        ] {
            let e = fault_plan(&table(text)).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn the_broker_must_be_one_the_profile_starts() {
        let plan = fault_plan(&table("kill = \"2s\"\nbroker = 2"))
            .unwrap()
            .unwrap();
        assert_eq!(plan.broker, 2);
        assert!(plan.check_brokers(3).is_ok());
        let e = plan.check_brokers(2).unwrap_err().to_string();
        assert!(
            e.contains("starts 2 brokers") && e.contains("brokers = 3"),
            "{e}"
        );
        let e = plan.check_brokers(1).unwrap_err().to_string();
        assert!(e.contains("starts 1 broker "), "{e}");
        let plan = fault_plan(&table("kill = \"2s\"")).unwrap().unwrap();
        assert_eq!(plan.broker, 0);
        assert!(plan.check_brokers(1).is_ok());
    }

    #[test]
    fn fault_keys_are_matrix_axes_and_set_overrides() {
        let text = "name = \"f\"\n[workload]\nduration = \"10s\"\n[fault]\nrestart = true\nkill = \"2s\"\n\
[matrix]\n\"fault.every\" = [\"3s\", \"4s\"]\n";
        let p = crate::profile::Profile::parse(text, "f.toml", std::path::Path::new("f.toml"), &[])
            .unwrap();
        let cells = crate::matrix::expand(&p).unwrap();
        let every: Vec<_> = cells
            .iter()
            .map(|c| c.fault.as_ref().unwrap().every.unwrap().as_secs())
            .collect();
        assert_eq!(every, [3, 4]);
        assert_eq!(cells[0].label, "every=3s");
        let set = crate::profile::Profile::parse(
            text,
            "f.toml",
            std::path::Path::new("f.toml"),
            &["fault.kill=5s".into()],
        )
        .unwrap();
        assert_eq!(set.fault.unwrap().kill, Some(Duration::from_secs(5)));
        // A kill outside the measured window is refused where it is written.
        let e = crate::profile::Profile::parse(
            text,
            "f.toml",
            std::path::Path::new("f.toml"),
            &["fault.kill=12s".into()],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("measured window"), "{e}");
    }

    #[test]
    fn the_workload_must_have_a_fixed_schedule_and_room_for_the_fault() {
        let plan = fault_plan(&table("kill = \"6s\"")).unwrap().unwrap();
        let mut w = Workload {
            duration: crate::profile::Secs(10.0),
            ..Workload::default()
        };
        assert!(plan.check_workload(&w).is_ok());
        w.duration = crate::profile::Secs(5.0);
        assert!(plan
            .check_workload(&w)
            .unwrap_err()
            .to_string()
            .contains("measured window"));
        w.duration = crate::profile::Secs(10.0);
        w.model = Model::Closed;
        assert!(plan
            .check_workload(&w)
            .unwrap_err()
            .to_string()
            .contains("open"));
    }
}
