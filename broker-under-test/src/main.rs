//! `broker-under-test -c broker.conf [--set key=value]... [--strict] [-p | --check]`,
//! `broker-under-test --list-keys[=json|markdown]`

use std::{path::PathBuf, process::ExitCode};

use anyhow::Context;
use broker_under_test::{
    config::{parse_override, BrokerConfig, ConfigSources},
    keys,
};
use clap::Parser;

/// A RocketMQ broker send path, faithful enough to reproduce every SYSTEM_BUSY answer.
#[derive(Debug, Parser)]
#[command(name = "broker-under-test", version)]
struct Cli {
    /// broker.conf in RocketMQ's properties format and key names.
    #[arg(short = 'c', long = "config")]
    config: Option<PathBuf>,
    /// Overrides one key; may be repeated; applied after the file.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Prints the effective configuration (every key, sorted) and exits.
    #[arg(short = 'p', long = "print-config")]
    print: bool,
    /// Unknown keys are an error (exit 1) instead of a warning.
    #[arg(long)]
    strict: bool,
    /// Loads and validates the configuration, prints `ok` and exits 0 (or the error and exits 1)
    /// without binding a port or opening the store.
    #[arg(long, conflicts_with = "print")]
    check: bool,
    /// Prints every known key (JSON array, or the README's markdown table) and exits.
    #[arg(
        long = "list-keys",
        value_name = "FORMAT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "json"
    )]
    list_keys: Option<ListFormat>,
    /// With --list-keys: the markdown table (same as --list-keys=markdown).
    #[arg(long, requires = "list_keys")]
    markdown: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ListFormat {
    Json,
    Markdown,
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
    if let Some(format) = cli.list_keys {
        if cli.markdown || format == ListFormat::Markdown {
            print!("{}", keys::markdown());
        } else {
            print!("{}", keys::list_json());
        }
        return Ok(());
    }
    let overrides = cli
        .set
        .iter()
        .map(|s| parse_override(s))
        .collect::<Result<Vec<_>, _>>()?;
    let loaded = BrokerConfig::load(&ConfigSources {
        file: cli.config.clone(),
        overrides,
        strict: cli.strict,
    })?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let config = loaded.config;
    if cli.print {
        print!("{}", config.render());
        return Ok(());
    }
    if cli.check {
        println!("ok");
        return Ok(());
    }
    eprint!("effective configuration:\n{}", config.render());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("broker-netty")
        .build()
        .context("building the tokio runtime")?;
    runtime.block_on(async move {
        let addr = config.bind_addr();
        let socket = broker_under_test::bind(addr).with_context(|| format!("binding {addr}"))?;
        broker_under_test::run(config, socket, remoting_server::shutdown_signal("broker")).await
    })
}
