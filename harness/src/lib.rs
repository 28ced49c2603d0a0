//! harness: `profile → matrix → runner → recorder → report → compare/gate`.
//!
//! `main.rs` parses the command line and calls [`run_cli`]; everything else lives here so
//! integration tests can call it in-process.

pub mod broker;
pub mod compare;
pub mod fnv;
pub mod matrix;
pub mod profile;
pub mod provenance;
pub mod recorder;
pub mod report;
pub mod runner;
#[doc(hidden)]
pub mod testkit;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

/// Open-loop load generator and configuration-matrix runner for RocketMQ's send path.
#[derive(Parser, Debug)]
#[command(name = "harness", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a profile (every matrix cell and repetition) and write a result folder.
    Run(RunArgs),
    /// Compare two result folders.
    Compare(compare::CompareArgs),
    /// Pass/fail a candidate result against a baseline.
    Gate(compare::GateArgs),
}

#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// The profile TOML file.
    pub profile: PathBuf,
    /// Drive an existing broker at HOST:PORT instead of starting broker-under-test.
    #[arg(long)]
    pub target: Option<SocketAddr>,
    /// Result folder. Default: results/<profile name>-<UTC timestamp>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override a profile key: `workload.rate=5000`, `broker.sendMessageThreadPoolNums=4`.
    /// On a matrix axis key the axis collapses to that single value. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// PID of the broker at --target, for CPU/RSS sampling.
    #[arg(long)]
    pub broker_pid: Option<u32>,
    /// The broker-under-test binary. Default: $BROKER_UNDER_TEST_BIN, next to this binary,
    /// or target/{release,debug} of the workspace.
    #[arg(long)]
    pub broker_bin: Option<PathBuf>,
}

/// Exit code after Ctrl-C: 128 + SIGINT.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Runs a parsed command line.
pub fn run_cli(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run_command(&args),
        Command::Compare(a) => compare::run_compare(&a),
        Command::Gate(a) => compare::run_gate(&a),
    }
}

fn run_command(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let profile = profile::Profile::load(&args.profile, &args.set)?;
    let cancel = CancellationToken::new();
    let done = CancellationToken::new();
    // Ctrl-C stops the load; everything measured so far is still written.
    let signal_thread = {
        let (cancel, done) = (cancel.clone(), done.clone());
        std::thread::Builder::new()
            .name("harness-signal".into())
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                rt.block_on(async {
                    tokio::select! {
                        r = tokio::signal::ctrl_c() => if r.is_ok() { cancel.cancel() },
                        _ = done.cancelled() => {}
                    }
                });
            })?
    };
    let opts = runner::RunOptions {
        target: args.target,
        out: args.out.clone(),
        broker_pid: args.broker_pid,
        broker_bin: args.broker_bin.clone(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        cancel: cancel.clone(),
        stop_after_jobs: None,
        quiet: false,
    };
    let result = runner::run_profile(&profile, &opts);
    done.cancel();
    let _ = signal_thread.join();
    let outcome = result.with_context(|| format!("running profile {}", args.profile.display()))?;
    println!("\n{}", outcome.table);
    println!("results: {}", outcome.out_dir.display());
    if outcome.interrupted {
        eprintln!("interrupted: finished cells were kept");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}
