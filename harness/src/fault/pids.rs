//! `--broker-pid`: the process ids of brokers the harness did not start. With `--target` one
//! bare `PID` (CPU/RSS sampling and `fault.pause`); with `--namesrv` one `NAME=PID` per broker,
//! NAME being the `brokerName` of the topic's route, so that `[fault]` can stop or kill the
//! broker it names. Parsed once from the command line into a checked value.

use std::collections::BTreeMap;

/// The `--broker-pid` values of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerPids {
    /// A bare `PID` (the broker at `--target`).
    pub single: Option<u32>,
    /// `NAME=PID`, by brokerName.
    pub named: BTreeMap<String, u32>,
}

/// Why `--broker-pid` was refused, or a faulted broker's pid is not known. The texts are the
/// ones users saw when these were strings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PidError {
    #[error("--broker-pid {arg}: `{text}` is not a process id (a number above 1)")]
    NotAPid { arg: String, text: String },
    #[error("--broker-pid {arg}: the broker name before `=` is empty (write brokerName=PID, e.g. broker-a=4242)")]
    EmptyName { arg: String },
    #[error("--broker-pid names `{name}` twice")]
    NamedTwice { name: String },
    #[error("--broker-pid PID was given twice; with --namesrv write one NAME=PID per broker")]
    SingleTwice,
    /// `known`: the names given, or that none was.
    #[error("[fault] hits broker `{name}` of the --namesrv cluster, and its pid is not known ({known}): add --broker-pid {name}=PID")]
    Unknown { name: String, known: String },
}

fn pid_of(text: &str, arg: &str) -> Result<u32, PidError> {
    match text.trim().parse::<u32>() {
        Ok(p) if p > 1 => Ok(p),
        _ => Err(PidError::NotAPid {
            arg: arg.to_owned(),
            text: text.to_owned(),
        }),
    }
}

impl BrokerPids {
    /// Every `--broker-pid` argument, in order: `PID` at most once, `NAME=PID` once per name.
    pub fn parse(args: &[String]) -> Result<BrokerPids, PidError> {
        let mut pids = BrokerPids::default();
        for arg in args {
            match arg.split_once('=') {
                Some((name, pid)) => {
                    let name = name.trim();
                    if name.is_empty() {
                        return Err(PidError::EmptyName { arg: arg.clone() });
                    }
                    let pid = pid_of(pid, arg)?;
                    if pids.named.insert(name.to_owned(), pid).is_some() {
                        return Err(PidError::NamedTwice {
                            name: name.to_owned(),
                        });
                    }
                }
                None => {
                    let pid = pid_of(arg, arg)?;
                    if pids.single.replace(pid).is_some() {
                        return Err(PidError::SingleTwice);
                    }
                }
            }
        }
        Ok(pids)
    }

    /// The pid of broker `name` of a cluster the harness did not start, or the refusal that
    /// says what to pass.
    pub fn of(&self, name: &str) -> Result<u32, PidError> {
        self.named.get(name).copied().ok_or_else(|| {
            let known = if self.named.is_empty() {
                "no NAME=PID was given".to_owned()
            } else {
                format!(
                    "given: {}",
                    self.named.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            };
            PidError::Unknown {
                name: name.to_owned(),
                known,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn bare_and_named_pids_parse() {
        let p = BrokerPids::parse(&args(&["broker-a=4242", "broker-b = 77", "900"])).unwrap();
        assert_eq!(p.single, Some(900));
        assert_eq!(p.named.len(), 2);
        assert_eq!(p.of("broker-a"), Ok(4242));
        assert_eq!(p.of("broker-b"), Ok(77));
        assert_eq!(BrokerPids::parse(&[]).unwrap(), BrokerPids::default());
    }

    #[test]
    fn bad_values_are_refused_with_the_fix() {
        for (a, needle) in [
            (vec!["=12"], "name before `=` is empty"),
            (vec!["b=x"], "`x` is not a process id"),
            (vec!["b=1"], "not a process id"),
            (vec!["b=12", "b=13"], "names `b` twice"),
            (vec!["12", "13"], "given twice"),
            (vec!["-5"], "not a process id"),
        ] {
            let e = BrokerPids::parse(&args(&a)).unwrap_err().to_string();
            assert!(e.contains(needle), "{a:?}: {e}");
        }
    }

    #[test]
    fn a_missing_name_says_which_flag_to_add() {
        let p = BrokerPids::parse(&args(&["broker-a=4242"])).unwrap();
        let e = p.of("broker-b").unwrap_err().to_string();
        assert!(e.contains("--broker-pid broker-b=PID"), "{e}");
        assert!(e.contains("given: broker-a"), "{e}");
        let e = BrokerPids::default().of("x").unwrap_err().to_string();
        assert!(e.contains("no NAME=PID"), "{e}");
    }
}
