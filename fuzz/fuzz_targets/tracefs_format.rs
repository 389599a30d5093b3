//! Fuzz the tracefs `format` parser: the text comes from the kernel, but from any kernel
//! (old, patched, a guest's) and through a file system the user may point elsewhere.
//!
//! Properties checked, on any bytes (UTF-8, else lossy):
//! - `EventFormat::parse` never panics; an error names a line inside the input;
//! - a parsed format keeps its promises: every field ends at or before `record_size()`,
//!   which is at most `MAX_RECORD_SIZE`; `__data_loc` fields are 4 bytes without an array
//!   length; a fixed array's length divides its size (0: flexible, size 0);
//! - every accessor (`bytes`, `read_i64`, `read_u64`, `dynamic`) on a RAW buffer of exactly
//!   `record_size()` bytes, filled from the input, never panics; `bytes` is always `Some`
//!   there and `dynamic` returns a slice of that buffer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_runtime::tracefs::{EventFormat, MAX_RECORD_SIZE};

fn check(text: &str, fill: &[u8]) {
    let fmt = match EventFormat::parse(text) {
        Err((line, what)) => {
            assert!(!what.is_empty());
            let lines = text.lines().count();
            assert!(
                line >= 1 && line <= lines,
                "line {line} of {lines}: {text:?}"
            );
            return;
        }
        Ok(f) => f,
    };
    let end = fmt.record_size();
    assert!(end <= MAX_RECORD_SIZE, "record size {end}");
    let raw: Vec<u8> = if fill.is_empty() {
        vec![0; end]
    } else {
        fill.iter().copied().cycle().take(end).collect()
    };
    let range = raw.as_ptr_range();
    for f in &fmt.fields {
        let field_end = f.offset.checked_add(f.size).expect("bounded by parse");
        assert!(field_end <= end, "{f:?} past {end}");
        if f.data_loc.is_some() {
            assert_eq!((f.size, f.array_len), (4, None), "{f:?}");
        }
        match f.array_len {
            Some(0) => assert_eq!(f.size, 0, "{f:?}"),
            Some(n) => assert_eq!(f.size % n, 0, "{f:?}"),
            None => {}
        }
        assert!(f.bytes(&raw).is_some(), "{f:?} not inside {end} bytes");
        let _ = (f.read_i64(&raw), f.read_u64(&raw));
        if let Some(d) = f.dynamic(&raw) {
            let r = d.as_ptr_range();
            assert!(range.start <= r.start && r.end <= range.end, "{f:?}");
        }
        // A shorter buffer: accessors answer None rather than read past it.
        let short = raw.get(..field_end.saturating_sub(1)).unwrap_or(&[]);
        if f.size > 0 {
            assert!(f.bytes(short).is_none(), "{f:?}");
        }
    }
    let _ = fmt.field("common_pid");
}

fuzz_target!(|data: &[u8]| {
    // The last 8 bytes (if any) also fill the RAW buffer; the whole input is the text.
    let fill = data.get(data.len().saturating_sub(8)..).unwrap_or(&[]);
    match core::str::from_utf8(data) {
        Ok(s) => check(s, fill),
        Err(_) => check(&String::from_utf8_lossy(data), fill),
    }
});
