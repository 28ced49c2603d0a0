use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = harness::Cli::parse();
    match harness::run_cli(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
