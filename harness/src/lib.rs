//! harness: `profile → matrix → runner → recorder → report → compare/gate`.
//!
//! The top crate: it owns running (the runner, its job parts, the kinds of broker it starts),
//! recording, writing results, `harness merge`, and the command line over the analysis: compare,
//! gate, drift and the HTML report are `harness-analysis` (re-exported as [`compare`], [`drift`],
//! [`html`]); this crate prints them and maps them to exit codes. It builds on `harness-model`
//! (what a run is), `harness-results` (the result-folder contract), `harness-analysis` and
//! `rmq-client` (the wire client); nothing in the workspace imports it. It must never import
//! `broker-under-test`: it starts that broker as a process, as it starts Apache's, so a change to
//! the model does not rebuild the runner and the runner cannot reach around the wire.
//!
//! `main.rs` parses the command line and calls [`run_cli`]; everything else lives here so
//! integration tests can call it in-process.

pub mod ab;
pub mod auth;
pub mod broker_keys;
pub mod cluster;
pub mod compare;
pub mod consumer;
pub mod drift;
pub mod exit;
pub mod fault;
pub mod fidelity;

pub mod ha;
pub mod html;
pub mod interrupt;
pub mod kind;

pub mod merge;
pub mod order;
pub mod part;
pub mod proc;

pub mod provenance;
pub mod recipe;
pub mod reconcile;
pub mod recorder;
pub mod report;
pub mod runner;
pub mod send_order;
pub mod send_spec;
pub mod serve;
#[doc(hidden)]
pub mod testkit;
pub mod tmpfs;
pub mod write_blocks;

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
    /// Produce one flow-control answer on a fresh broker-under-test and check it (`--list`).
    Recipe(RecipeArgs),
    /// Compare the first and the last minute of a long run: ok rate, p99, broker and harness RSS.
    Drift(drift::DriftArgs),
    /// Merge the folders of `run --shard I/N` into one result folder (exact histogram sums).
    Merge(merge::MergeArgs),
    /// Write one self-contained HTML report (charts and tables) of one run, or two side by side.
    Report(html::ReportArgs),
    /// Paired A/B runs of two broker builds (binaries or git revisions), ABBA order, with a
    /// paired-statistics gate (exit 0 pass, 1 regression, 2 inconclusive, 3 invalid input).
    Ab(ab::AbArgs),
    /// The processing-time model's consume rate: N threads at a constant T against N/T.
    ProcessingBench(consumer::ProcessingBenchArgs),
    /// A name server and one broker (broker-under-test or Apache RocketMQ) for other clients:
    /// prints `namesrv listening on`, `broker listening on`, `broker pid`, `ready`; stops on
    /// Ctrl-C, SIGTERM or the end of a piped stdin.
    Serve(serve::ServeArgs),
    /// broker-under-test against Apache RocketMQ: each row of profiles/fidelity/rows.toml run on
    /// both, judged agree / differ, written as a table (`make fidelity`).
    Fidelity(fidelity::FidelityArgs),
}

#[derive(clap::Args, Debug, Clone)]
pub struct RecipeArgs {
    /// A recipe name, or `all`. Without one (or with --list), lists the recipes.
    pub name: Option<String>,
    /// List the recipes: name, promised answer, broker keys and steps.
    #[arg(long)]
    pub list: bool,
    /// The broker-under-test binary (default: as for `run`).
    #[arg(long)]
    pub broker_bin: Option<PathBuf>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// The profile TOML file.
    pub profile: PathBuf,
    /// Drive an existing broker at HOST:PORT instead of starting broker-under-test (a host
    /// name, such as a Kubernetes Service, is resolved once at start).
    #[arg(long, value_parser = parse_target, conflicts_with = "namesrv")]
    pub target: Option<SocketAddr>,
    /// Drive an existing cluster through its name server at HOST:PORT: routes are discovered
    /// (and refreshed every 30 s), sends spread over its brokers as the Java producer does.
    #[arg(long)]
    pub namesrv: Option<SocketAddr>,
    /// Result folder. Default: results/<profile name>-<UTC timestamp>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override a profile key: `workload.rate=5000`, `broker.sendMessageThreadPoolNums=4`
    /// (also `consumer.`, `fault.`, `knee.`, `slo.`, `ab.` keys). On a matrix axis key the axis
    /// collapses to that single value. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The broker every cell runs on: `in-tree` (broker-under-test, the default) or
    /// `apache-<version>` (Apache RocketMQ's released JVMs: apache-5.3.3, apache-4.9.7; the
    /// jars are fetched into target/apache on first use). The same as `--set broker.kind=...
    /// --set broker.version=...`; an explicit `--set` wins.
    #[arg(long, value_name = "KIND", value_parser = harness_model::profile::BrokerChoice::parse_flag)]
    pub broker: Option<harness_model::profile::BrokerChoice>,
    /// PID of the broker at --target, for CPU/RSS sampling and `fault.pause`; or, with
    /// --namesrv, NAME=PID of a broker of the route (its brokerName), for `[fault]` pause and
    /// kill. Repeatable (one NAME=PID per broker).
    #[arg(long, value_name = "PID|NAME=PID")]
    pub broker_pid: Vec<String>,
    /// The broker-under-test binary. Default: $BROKER_UNDER_TEST_BIN, next to this binary,
    /// or target/{release,debug} of the workspace.
    #[arg(long)]
    pub broker_bin: Option<PathBuf>,
    /// Send shard I of N of the schedule (0-based I): sends I, I+N, I+2N, … at their intended
    /// times. Merge the shards' folders with `harness merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Start the schedule at this UTC instant (RFC 3339, e.g. 2026-11-30T14:00:00Z); give
    /// every shard the same value.
    #[arg(long, value_name = "UTC")]
    pub start_at: Option<String>,
    /// How late (after --start-at) a shard may still start; later, it refuses (exit 4).
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub start_skew: humantime::Duration,
}

/// `HOST:PORT` → the first address the name resolves to.
fn parse_target(text: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    text.to_socket_addrs()
        .map_err(|e| format!("{e} (write HOST:PORT, e.g. 127.0.0.1:10911)"))?
        .next()
        .ok_or_else(|| "the name resolves to no address".to_owned())
}

/// Runs a parsed command line.
pub fn run_cli(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run_command(&args),
        // Every way compare fails is about its input: a missing folder, a bad CSV.
        Command::Compare(a) => compare::run_compare(&a).map_err(exit::invalid),
        Command::Gate(a) => compare::run_gate(&a),
        Command::Recipe(a) => run_recipes(&a),
        Command::Drift(a) => drift::run_drift(&a),
        Command::Merge(a) => merge::run_merge(&a),
        // Every way a report fails is about its input folder.
        Command::Report(a) => html::run_report(&a).map_err(exit::invalid),
        Command::Ab(a) => ab::run_ab(&a),
        Command::Serve(a) => serve::run_serve(&a),
        Command::Fidelity(a) => fidelity::run_fidelity(&a),
        Command::ProcessingBench(a) => {
            print!(
                "{}",
                consumer::run_bench(&a).map_err(|e| exit::invalid(anyhow::anyhow!(e)))?
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Parses `args` (with the program name first), runs the command, and maps every outcome to its
/// exit code (see [`exit`]). Errors go to stderr as `Error: ...`.
pub fn main_with_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::SUCCESS
            });
        }
    };
    match run_cli(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::from(exit::code_for(&e))
        }
    }
}

fn run_recipes(args: &RecipeArgs) -> anyhow::Result<ExitCode> {
    let chosen: Vec<&recipe::Recipe> = match args.name.as_deref() {
        None => {
            print!("{}", recipe::listing());
            return Ok(ExitCode::SUCCESS);
        }
        Some(_) if args.list => {
            print!("{}", recipe::listing());
            return Ok(ExitCode::SUCCESS);
        }
        Some("all") => recipe::RECIPES.iter().collect(),
        Some(name) => vec![recipe::find(name)
            .ok_or_else(|| exit::invalid(anyhow::anyhow!("{}", recipe::unknown(name))))?],
    };
    let mut broken = 0;
    for r in chosen {
        println!("recipe {}: {}", r.name, r.promise);
        let check = recipe::run(r, args.broker_bin.as_deref())
            .with_context(|| format!("recipe {}", r.name))?;
        const SHOWN: usize = 12;
        for (label, code, remark) in check.answers.iter().take(SHOWN) {
            println!("  {label:<10} code {code:<3} {remark}");
        }
        if check.answers.len() > SHOWN {
            println!("  ... {} more answers", check.answers.len() - SHOWN);
        }
        if check.kept {
            println!("  KEPT: {}", check.detail);
        } else {
            broken += 1;
            println!("  BROKEN: {}", check.detail);
        }
    }
    Ok(ExitCode::from(if broken == 0 {
        exit::SUCCESS
    } else {
        exit::VERDICT_NO
    }))
}

fn run_command(args: &RunArgs) -> anyhow::Result<ExitCode> {
    if !args.profile.is_file() {
        return Err(exit::invalid(anyhow::anyhow!(
            "no profile {}{}",
            args.profile.display(),
            harness_model::locate::closest_profile(&args.profile).map_or(
                String::new(),
                |p| format!("; did you mean {}?", p.display())
            )
        )));
    }
    let profile = harness_model::profile::Profile::load(&args.profile, &run_sets(args))
        .map_err(exit::invalid)?;
    let spread = runner::shard::spread_from_cli(
        args.shard.as_deref(),
        args.start_at.as_deref(),
        args.start_skew.into(),
    )
    .map_err(exit::invalid)?;
    let cancel = CancellationToken::new();
    let done = CancellationToken::new();
    // Ctrl-C stops the load; everything measured so far is still written.
    let signal_thread = interrupt::watch_ctrl_c("harness-signal", &cancel, &done)?;
    let pids = fault::BrokerPids::parse(&args.broker_pid)
        .map_err(|e| exit::invalid(anyhow::Error::new(e)))?;
    let opts = runner::RunOptions {
        target: args.target,
        namesrv: args.namesrv,
        out: args.out.clone(),
        broker_pid: pids.single,
        broker_pids: pids.named,
        broker_bin: args.broker_bin.clone(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        cancel: cancel.clone(),
        stop_after_jobs: None,
        quiet: false,
        spread,
        kinds: None,
    };
    let result = runner::run_profile(&profile, &opts);
    done.cancel();
    let _ = signal_thread.join();
    let outcome = result.with_context(|| format!("running profile {}", args.profile.display()))?;
    println!("\n{}", outcome.table);
    println!("results: {}", outcome.out_dir.display());
    if outcome.interrupted {
        eprintln!("interrupted: finished cells were kept");
        return Ok(ExitCode::from(exit::INTERRUPTED));
    }
    // Some invalid rows are a result; a run in which no job could send or consume anything is a
    // failure.
    if runner::nothing_ran(&outcome.rows) {
        eprintln!(
            "Error: no job sent or consumed anything (first reason: {}); the rows are kept in {}",
            outcome.rows[0].invalid_reason,
            outcome.out_dir.display()
        );
        return Ok(ExitCode::from(exit::RUN_FAILED));
    }
    if let Some(why) = auth::all_refused(&outcome.rows) {
        eprintln!(
            "Error: {why}; the rows are kept in {}",
            outcome.out_dir.display()
        );
        return Ok(ExitCode::from(exit::RUN_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--broker` as the `--set` lines it stands for, before the explicit ones (which win).
fn run_sets(args: &RunArgs) -> Vec<String> {
    let mut sets = args
        .broker
        .as_ref()
        .map(|b| b.as_sets())
        .unwrap_or_default();
    sets.extend(args.set.iter().cloned());
    sets
}
