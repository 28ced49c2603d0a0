//! Why the injector could not do what was due: a signal that failed, a fault that needs a pid
//! or a broker the harness started, a restart that did not come up. The text is the rows'
//! `invalid_reason` (through `PartError::Inject`), as it was when these were strings.

use crate::kind::StartError;

#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    /// kill(2) to a pid the harness did not start (or a stop/continue of any broker).
    #[error("fault: {signal} to {pid}: {error}")]
    Signal {
        signal: &'static str,
        pid: u32,
        error: std::io::Error,
    },
    /// SIGKILL to a broker the harness started.
    #[error("fault: SIGKILL: {0}")]
    Kill(std::io::Error),
    #[error("fault: pause needs the broker's pid: pass --broker-pid PID with --target, or --broker-pid NAME=PID with --namesrv")]
    PauseNeedsPid,
    #[error("fault: kill needs a broker the harness started, or its pid (--broker-pid NAME=PID with --namesrv)")]
    KillNeedsPid,
    /// A broker the harness did not start: its command line is not known.
    #[error("fault: restart needs a broker the harness started (its command line is not known)")]
    RestartByPid,
    #[error("fault: restart needs a broker the harness started")]
    NoRestarter,
    /// The restart's thread could not be started.
    #[error("fault: starting the restart's thread: {0}")]
    RestartThread(std::io::Error),
    /// The restart's thread panicked.
    #[error("fault: the restart's thread panicked")]
    RestartPanicked,
    /// Three starts failed; the last one's error.
    #[error("fault: restarting the broker on port {port} failed: {last}; see {stem}.log")]
    Restart {
        port: u16,
        last: StartError,
        stem: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts of the strings these replaced, word for word (they are rows' reasons).
    #[test]
    fn reasons_read_as_before() {
        let io = || std::io::Error::from_raw_os_error(libc::ESRCH);
        let e = InjectError::Signal {
            signal: "SIGSTOP",
            pid: 42,
            error: io(),
        };
        assert_eq!(e.to_string(), format!("fault: SIGSTOP to 42: {}", io()));
        assert_eq!(
            InjectError::Kill(io()).to_string(),
            format!("fault: SIGKILL: {}", io())
        );
        assert_eq!(
            InjectError::Restart {
                port: 10911,
                last: StartError::Unsupported("no".into()),
                stem: "broker-restart-1".into(),
            }
            .to_string(),
            "fault: restarting the broker on port 10911 failed: no; see broker-restart-1.log"
        );
        assert_eq!(
            crate::part::PartError::from(InjectError::NoRestarter).to_string(),
            "fault: restart needs a broker the harness started"
        );
    }
}
