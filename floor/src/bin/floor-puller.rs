//! `floor-puller --target ADDR`: the minimal puller. Prints one line,
//! `rate=<messages per second> messages=<n> pulls=<n> seconds=<s> drained=<bool>
//! total=<messages, warm-up included>`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Parser;
use floor::puller::{run, PullerConfig};

#[derive(Parser)]
#[command(about = "Minimal RocketMQ puller: the floor a consumer is measured against")]
struct Cli {
    /// The broker or null responder (loopback only).
    #[arg(long)]
    target: SocketAddr,
    #[arg(long, default_value = "BenchmarkTopic")]
    topic: String,
    #[arg(long, default_value = "floor_puller")]
    group: String,
    /// Queues 0..N, one pull in flight on each.
    #[arg(long, default_value_t = 4)]
    queues: u32,
    /// maxMsgNums of every pull.
    #[arg(long, default_value_t = 32)]
    batch: u32,
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    warmup: Duration,
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Stop after this many messages even if the duration has not passed.
    #[arg(long, default_value_t = 2_000_000_000)]
    max_messages: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match main_inner(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn main_inner(cli: Cli) -> anyhow::Result<()> {
    if !cli.target.ip().is_loopback() {
        bail!(
            "--target {} is not a loopback address: load goes to 127.0.0.0/8 or ::1 only",
            cli.target
        );
    }
    let cfg = PullerConfig {
        target: cli.target,
        topic: cli.topic,
        group: cli.group,
        queues: cli.queues,
        batch: cli.batch,
        warmup: cli.warmup,
        duration: cli.duration,
        max_messages: cli.max_messages,
    };
    let report = run(&cfg).with_context(|| format!("pulling from {}", cfg.target))?;
    println!(
        "rate={:.0} messages={} pulls={} seconds={:.3} drained={} total={}",
        report.rate(),
        report.messages,
        report.pulls,
        report.elapsed.as_secs_f64(),
        report.drained,
        report.total
    );
    Ok(())
}
