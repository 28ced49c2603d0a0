//! Exit codes: one per outcome, the same across subcommands, so a script can tell "the gate
//! said no" from "the input was wrong" from "the machine failed". The book's exit-code table
//! lists these constants; a test runs the binary into each of them.

use std::fmt;

/// `run` finished, `compare` printed, `gate` passed, `recipe` got the promised answer.
pub const SUCCESS: u8 = 0;
/// `gate`: a rule failed. `recipe`: the promised answer did not come.
pub const VERDICT_NO: u8 = 1;
/// `gate`: too noisy or too few repetitions to decide.
pub const INCONCLUSIVE: u8 = 2;
/// A profile, `--set`, broker key or value, CSV, rules file or result folder is wrong; the
/// message names the file, the line and the fix. Nothing was run. From `gate` also: a candidate
/// row is invalid (`valid = false`) and the rules' `allow_invalid` does not cover it, so the
/// input the gate was given cannot be judged (that run did run).
pub const INVALID_INPUT: u8 = 3;
/// Something failed while running: the broker could not be started or found, a connection or
/// a write failed.
pub const RUN_FAILED: u8 = 4;
/// The command line itself: an unknown flag, a missing argument (sysexits' EX_USAGE).
pub const USAGE: u8 = 64;
/// Ctrl-C during `run`: 128 + SIGINT; every finished cell was kept.
pub const INTERRUPTED: u8 = 130;

/// What each code means, as every exit-code table in the docs must say it: the code, the name
/// its row starts with, and the cases the row must name (`harness/tests/docs.rs` checks
/// README.md's table and the book's against this, so a meaning changed here and not there, or
/// there and not here, fails).
pub const MEANINGS: [(u8, &str, &[&str]); 7] = [
    (
        SUCCESS,
        "success",
        &[
            "the run finished",
            "the gate passed",
            "the recipe gave its promised answer",
        ],
    ),
    (
        VERDICT_NO,
        "the verdict is no",
        &["a gate rule", "a recipe did not give its", "`drift`"],
    ),
    (
        INCONCLUSIVE,
        "inconclusive",
        &[
            "too noisy or too few repetitions to decide",
            "an absolute gate rule met an empty column",
        ],
    ),
    (
        INVALID_INPUT,
        "invalid input",
        &[
            "nothing was run",
            "from `gate` also: a candidate row is invalid",
            "`allow_invalid`",
        ],
    ),
    (
        RUN_FAILED,
        "the run failed",
        &[
            "the broker could not be",
            "a connection or a write failed",
            "every send was refused with code 1",
        ],
    ),
    (USAGE, "usage", &["an unknown flag, a missing argument"]),
    (INTERRUPTED, "interrupted", &["Ctrl-C or SIGTERM"]),
];

/// An error caused by the user's input (exit [`INVALID_INPUT`]), as opposed to a failure while
/// running (exit [`RUN_FAILED`]). Its text is the whole message: file, line and fix.
#[derive(Debug, Clone)]
pub struct InvalidInput(pub String);

impl fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidInput {}

/// `error`, with its causes, as an invalid-input error.
pub fn invalid(error: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(InvalidInput(format!("{:#}", error.into())))
}

/// The exit code for an error that ended a command.
pub fn code_for(error: &anyhow::Error) -> u8 {
    if error.downcast_ref::<InvalidInput>().is_some() {
        INVALID_INPUT
    } else {
        RUN_FAILED
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn invalid_input_is_found_under_any_context() {
        let e: anyhow::Result<()> = Err(invalid(anyhow::anyhow!("line 3: bad")));
        let e = e.context("loading p.toml").unwrap_err();
        assert_eq!(code_for(&e), INVALID_INPUT);
        assert_eq!(format!("{e:#}"), "loading p.toml: line 3: bad");
        assert_eq!(code_for(&anyhow::anyhow!("broker died")), RUN_FAILED);
    }

    #[test]
    fn codes_are_distinct() {
        let all = [
            SUCCESS,
            VERDICT_NO,
            INCONCLUSIVE,
            INVALID_INPUT,
            RUN_FAILED,
            USAGE,
            INTERRUPTED,
        ];
        let set: std::collections::BTreeSet<u8> = all.into_iter().collect();
        assert_eq!(set.len(), all.len());
    }
}
