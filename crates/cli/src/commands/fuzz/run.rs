//! Which campaign `fuzz`'s flags ask for: `--target` alone, `--target` with `--compare`, or
//! `--serve`.

use std::io::Write;

use crate::fail::Failure;
use crate::flags::FuzzArgs;

/// `fuzz`.
pub fn run(args: &FuzzArgs, out: &mut dyn Write) -> Result<(), Failure> {
    match (args.serve, args.target, args.compare) {
        (Some(_), _, Some(_)) => Err(Failure::usage(
            "fuzz",
            "--compare goes with --target, not --serve",
        )),
        (Some(listen), _, None) => super::serve::run(args, listen, out),
        (None, Some(a), Some(b)) => super::compare::run(args, a, b, out),
        (None, Some(target), None) => super::target::run(args, target, out),
        (None, None, _) => Err(Failure::usage("fuzz", "--target or --serve is required")),
    }
}
