use std::process::ExitCode;

fn main() -> ExitCode {
    harness::main_with_args(std::env::args_os())
}
