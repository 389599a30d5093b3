//! The flags that choose and configure an object's programs and maps, shared by `record`
//! and `inspect --load`: `--prog NAME[,NAME...]`, `--set NAME=VALUE`, `--map-size NAME=N`,
//! `--pin-root DIR`. Only parsed here; what they mean is the runtime's
//! ([`sluice_runtime::LoadOptions`]).

use crate::fail::{self, Failure};
use sluice_runtime::LoadOptions;

/// Whether `--flag` is one of these flags.
#[must_use]
pub fn is_flag(flag: &str) -> bool {
    matches!(flag, "prog" | "set" | "map-size" | "pin-root")
}

/// Reads flag `--flag` (one of [`is_flag`]) into `opts`, its value taken from `parser`.
///
/// # Errors
/// A usage failure for a missing or malformed value.
pub fn parse(
    flag: &str,
    parser: &mut lexopt::Parser,
    opts: &mut LoadOptions,
) -> Result<(), Failure> {
    let bad = |what: String| Failure::usage_msg(format!("{what} (see sluice --help)"));
    let value = |parser: &mut lexopt::Parser| -> Result<String, Failure> {
        parser
            .value()
            .map_err(fail::usage)?
            .into_string()
            .map_err(|v| bad(format!("--{flag}: not UTF-8: {}", v.to_string_lossy())))
    };
    match flag {
        "prog" => {
            let v = value(parser)?;
            let names: Vec<String> = v
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect();
            if names.is_empty() {
                return Err(bad(format!("--prog '{v}': want NAME[,NAME...]")));
            }
            opts.programs.get_or_insert_with(Vec::new).extend(names);
        }
        "set" => {
            let v = value(parser)?;
            let (name, val) = v
                .split_once('=')
                .filter(|(n, _)| !n.is_empty())
                .ok_or_else(|| bad(format!("--set wants NAME=VALUE, got '{v}'")))?;
            opts.globals.push((name.to_owned(), val.to_owned()));
        }
        "map-size" => {
            let v = value(parser)?;
            let parsed = v
                .split_once('=')
                .filter(|(n, _)| !n.is_empty())
                .and_then(|(n, size)| Some((n, size.trim().parse::<u32>().ok()?)));
            match parsed {
                Some((name, size)) if size > 0 => {
                    opts.map_sizes.insert(name.to_owned(), size);
                }
                _ => {
                    return Err(bad(format!(
                        "--map-size wants NAME=N with 0 < N < 2^32, got '{v}'"
                    )))
                }
            }
        }
        "pin-root" => {
            opts.pin_root = Some(parser.value().map_err(fail::usage)?.into());
        }
        _ => {}
    }
    Ok(())
}
