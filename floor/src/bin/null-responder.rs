//! `null-responder [--listen ADDR] [--for DURATION]`: answers every RocketMQ request at once.
//! Prints `listening on IP:PORT` once ready; stops by itself after `--for`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;

#[derive(Parser)]
#[command(about = "Answers every RocketMQ send at once: the peer for measuring a generator alone")]
struct Cli {
    /// Address to listen on (port 0 = any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Stop after this long ("90s", "10m").
    #[arg(long = "for", default_value = "10m", value_parser = humantime::parse_duration)]
    run_for: Duration,
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
        .with_context(|| format!("bind {}", cli.listen))?;
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
