//! What tracefs is given for a probe's arguments: the fetch-args of a spec without debug
//! info ([`fetch_args`]), and distinct names for a site's ([`unique_arg_names`]).

use sluice_core::probe::{Arg, ArgBase, ProbeSpec};

/// `NAME=FETCHARG` strings with repeated names made distinct (`v`, `v_2`, ...): tracefs
/// refuses an event whose arguments share a name, and a spec may fetch one variable twice.
#[must_use]
pub fn unique_arg_names(args: &[String]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    args.iter()
        .map(|a| {
            let Some((name, fetch)) = a.split_once('=') else {
                return a.clone();
            };
            let mut unique = name.to_owned();
            let mut n = 1;
            while seen.contains(&unique) {
                n += 1;
                unique = format!("{name}_{n}");
            }
            seen.push(unique.clone());
            format!("{unique}={fetch}")
        })
        .collect()
}

/// The tracefs fetch-args a spec's arguments translate to: registers, `$retval`, `$stack`,
/// `$stackN`, `$argN`, `$comm`, `@ADDR`, `@SYM+OFF`, `@+FILEOFFSET` and `\IMM` without steps, inside their `+OFF(...)`
/// memory reads (`+144(+216(+8(%sp)))`). Others (C variables, member steps) need debug info
/// and a prologue: they are left to the program and logged.
#[must_use]
pub fn fetch_args(spec: &ProbeSpec<'_>) -> String {
    let mut out = Vec::new();
    for (i, a) in spec.args().exprs().iter().enumerate() {
        match fetch_arg(i, a) {
            Ok(Some(text)) => out.push(text),
            Ok(None) => {}
            Err(why) => log::info!("argument {} of '{spec}' {why}: left to the program", i + 1),
        }
    }
    out.join(" ")
}

/// The tracefs fetch-arg of argument `a`, entry `i` (0-based) of a spec's list
/// (see [`fetch_args`]): `None` for `$err`; `Err` (why) for one that needs debug info.
///
/// # Errors
/// A C variable, a `$variable` the tracer lacks, or member steps: what the argument is.
pub fn fetch_arg(i: usize, a: &Arg<'_>) -> Result<Option<String>, &'static str> {
    if a.is_err() {
        return Ok(None);
    }
    let base = match a.base() {
        ArgBase::Reg(r) => format!("%{r}"),
        ArgBase::Retval => "$retval".into(),
        ArgBase::Stack => "$stack".into(),
        ArgBase::StackN(n) => format!("$stack{n}"),
        ArgBase::ArgN(n) => format!("$arg{n}"),
        ArgBase::Comm => "$comm".into(),
        ArgBase::Addr(a) => format!("@{a:#x}"),
        // The kernel resolves the symbol itself: right under KASLR.
        base @ ArgBase::Sym { .. } => base.to_string(),
        ArgBase::FileOffset(o) => format!("@+{o:#x}"),
        ArgBase::Imm(v) => format!("\\{v}"),
        ArgBase::Var(_) | ArgBase::Special(_) | ArgBase::Err => {
            return Err("is not a tracefs fetch-arg");
        }
    };
    if !a.steps().is_empty() {
        return Err("has member steps");
    }
    let name = a
        .name()
        .map_or_else(|| format!("arg{}", i + 1), str::to_owned);
    let ty = a
        .fetch_type()
        .map_or_else(String::new, |t| format!(":{}", t.as_str()));
    let reads: String = a.derefs().iter().rev().map(|o| format!("{o:+}(")).collect();
    let close = ")".repeat(a.derefs().len());
    Ok(Some(format!("{name}={reads}{base}{close}{ty}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use sluice_core::probe::Section;

    fn spec(s: &str) -> ProbeSpec<'_> {
        match sluice_core::probe::parse(s).unwrap() {
            Section::Probe(p) => p,
            Section::Title(t) => panic!("{t}"),
        }
    }

    #[test]
    fn fetch_args_keep_memory_reads() {
        assert_eq!(
            fetch_args(&spec(
                "w=generic_perform_write+147 a_ops=+144(+216(+8(%sp))):u64 bytes=%bx:u64 \
                 offset=-16(%sp)"
            )),
            "a_ops=+144(+216(+8(%sp))):u64 bytes=%bx:u64 offset=-16(%sp)"
        );
        assert_eq!(
            fetch_args(&spec(
                "kprobe/f(+8(@0x1000):u8, \\3, file->f_pos, $err, +8($stack2))"
            )),
            "arg1=+8(@0x1000):u8 arg2=\\3 arg5=+8($stack2)"
        );
        assert_eq!(
            fetch_args(&spec(
                "kprobe/f(max_threads=@_stext+0x2f83098:s32, +8(@init_task-0x10), @jiffies)"
            )),
            "max_threads=@_stext+0x2f83098:s32 arg2=+8(@init_task-0x10) arg3=@jiffies"
        );
    }

    #[test]
    fn repeated_names_become_distinct() {
        let args = ["v=%di".to_owned(), "v=%si".to_owned(), "w=%dx".to_owned()];
        assert_eq!(unique_arg_names(&args), ["v=%di", "v_2=%si", "w=%dx"]);
    }
}
