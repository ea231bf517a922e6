//! The `mnemon` command ([`mnemon_cli::main_with`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    mnemon_cli::main_with(std::env::args_os())
}
