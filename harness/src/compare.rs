//! `harness compare` and `harness gate` on the command line. The model, the statistics, the
//! renderings and the gate's evaluation are `harness_analysis::compare` (re-exported here, so
//! `harness::compare::…` paths stay); this module tries `harness ab`'s folders first, prints,
//! and maps outcomes to exit codes.

use std::process::ExitCode;

pub use harness_analysis::compare::*;

pub fn run_compare(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    if args.reference.is_none() {
        let (t, a) = (args.stats.threshold, args.stats.alpha);
        if let Some(text) = crate::ab::compare_ab(&args.base, args.candidate.as_deref(), t, a)? {
            print!("{text}");
            return Ok(ExitCode::SUCCESS);
        }
    }
    let c = build_comparison(args)?;
    let text = render::render(&c, args.format, args.all)?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

pub fn run_gate(args: &GateArgs) -> anyhow::Result<ExitCode> {
    let (b, r, s) = (args.baseline.as_deref(), args.rules.as_deref(), &args.stats);
    match crate::ab::gate_ab(&args.candidate, b, r, s.threshold, s.alpha, args.verbose) {
        Ok(Some(code)) => return Ok(ExitCode::from(code)),
        Ok(None) => {}
        Err(e) => {
            eprintln!("gate: invalid input: {e:#}");
            return Ok(ExitCode::from(Outcome::Invalid.exit_code()));
        }
    }
    match gate_report(args) {
        Ok(report) => {
            for line in &report.lines {
                println!("{line}");
            }
            println!("{}", report.summary());
            Ok(ExitCode::from(report.outcome().exit_code()))
        }
        Err(e) => {
            // Through anyhow so `{:#}` prints the causes too (an unreadable file's io error).
            eprintln!("gate: invalid input: {:#}", anyhow::Error::new(e));
            Ok(ExitCode::from(Outcome::Invalid.exit_code()))
        }
    }
}
