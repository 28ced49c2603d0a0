//! `floor-sender --target ADDR`: the minimal pipelined sender. Prints one line,
//! `rate=<responses per second> responses=<n> seconds=<s> total=<responses, warm-up included>`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use floor::sender::{run, SenderConfig};
use remoting::SerializeType;

#[derive(Clone, Copy, ValueEnum)]
enum Header {
    Json,
    Rocketmq,
}

#[derive(Parser)]
#[command(
    about = "Minimal pipelined RocketMQ sender: the floor a load generator is measured against"
)]
struct Cli {
    /// The responder (loopback only).
    #[arg(long)]
    target: SocketAddr,
    /// Requests outstanding at once.
    #[arg(long, default_value_t = 512)]
    in_flight: usize,
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    warmup: Duration,
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Body bytes per message.
    #[arg(long, default_value_t = 128)]
    message_size: usize,
    #[arg(long, value_enum, default_value = "json")]
    header: Header,
    /// Stop after this many requests even if the duration has not passed.
    #[arg(long, default_value_t = 200_000_000)]
    max_requests: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match main_inner(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn main_inner(cli: &Cli) -> anyhow::Result<()> {
    if !cli.target.ip().is_loopback() {
        bail!(
            "--target {} is not a loopback address: load goes to 127.0.0.0/8 or ::1 only",
            cli.target
        );
    }
    let cfg = SenderConfig {
        target: cli.target,
        in_flight: cli.in_flight,
        warmup: cli.warmup,
        duration: cli.duration,
        message_size: cli.message_size,
        serialize: match cli.header {
            Header::Json => SerializeType::Json,
            Header::Rocketmq => SerializeType::RocketMq,
        },
        max_requests: cli.max_requests,
    };
    let report = run(&cfg).with_context(|| format!("sending to {}", cli.target))?;
    println!(
        "rate={:.0} responses={} seconds={:.3} total={}",
        report.rate(),
        report.responses,
        report.elapsed.as_secs_f64(),
        report.total
    );
    Ok(())
}
