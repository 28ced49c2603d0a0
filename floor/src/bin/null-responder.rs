//! `null-responder [--listen ADDR] [--for DURATION] [--message-size N] [--backlog N]`: answers
//! every RocketMQ request at once; pulls get canned messages of N bytes.
//! Prints `listening on IP:PORT` once ready; stops by itself after `--for`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;

#[derive(Parser)]
#[command(
    about = "Answers every RocketMQ send or pull at once: the peer for measuring a generator or a consumer alone"
)]
struct Cli {
    /// Address to listen on (port 0 = any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Stop after this long ("90s", "10m").
    #[arg(long = "for", default_value = "10m", value_parser = humantime::parse_duration)]
    run_for: Duration,
    /// Body bytes of each message in a pull answer.
    #[arg(long, default_value_t = 128)]
    message_size: usize,
    /// Messages per queue before pulls answer PULL_NOT_FOUND (default: endless).
    #[arg(long)]
    backlog: Option<i64>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    let responder = floor::responder::NullResponder::bind(cli.listen)
        .with_context(|| format!("bind {}", cli.listen))?
        .with_pulls(cli.message_size, cli.backlog);
    let running = responder.start().context("start the accept thread")?;
    println!("listening on {}", running.addr());
    let deadline = Instant::now() + cli.run_for;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200).min(deadline - Instant::now()));
    }
    let answered = running.answered();
    running.stop();
    eprintln!(
        "null-responder: {answered} responses, stopped after {:?}",
        cli.run_for
    );
    Ok(())
}
