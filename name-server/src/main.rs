//! `name-server [-c namesrv.conf] [--set key=value]... [-p]`

use std::{path::PathBuf, process::ExitCode};

use anyhow::Context;
use clap::Parser;
use name_server::NamesrvConfig;

/// A RocketMQ name server: broker registration, liveness and topic routes.
#[derive(Debug, Parser)]
#[command(name = "name-server", version)]
struct Cli {
    /// A properties file of name-server keys (`key=value`, `#` comments).
    #[arg(short = 'c', long = "config")]
    config: Option<PathBuf>,
    /// Overrides one key; may be repeated; applied after the file.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Prints the effective configuration and exits.
    #[arg(short = 'p', long = "print-config")]
    print: bool,
    /// Prints the key table (markdown) and exits.
    #[arg(long = "list-keys")]
    list_keys: bool,
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if cli.list_keys {
        print!("{}", NamesrvConfig::markdown());
        return Ok(());
    }
    let config = NamesrvConfig::load(cli.config.as_deref(), &cli.set)?;
    if cli.print {
        print!("{}", config.render());
        return Ok(());
    }
    eprint!("effective configuration:\n{}", config.render());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("namesrv-netty")
        .build()
        .context("building the tokio runtime")?;
    runtime.block_on(async move {
        let addr = config.bind_addr();
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        name_server::run(
            config,
            listener,
            remoting_server::shutdown_signal("name server"),
        )
        .await
    })
}
