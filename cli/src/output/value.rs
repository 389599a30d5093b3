//! A record's fields, printed as its BTF type lays them out ([`sluice_core::btf::walk`]):
//! ` name=value ...` for text, `{"name":value,...}` for JSON, with the same names.
//!
//! Integers print in decimal by their sign, `bool` as `true`/`false`, an enum by its
//! enumerator's name (its number when none has the value), a `char` array as a string up
//! to its NUL, a pointer in hex, a float or a wider integer as hex bytes. A nested struct or
//! union prints as `name={a=1 b=2}` (JSON: an object), an array as `name=[1,2,3]`. The
//! members of an anonymous struct or union print among their parent's, as C names them.

use sluice_core::btf::{Int, Visitor};

use super::json::string_into;
use super::{decimal_into, hex_into, hex_u64_into, quoted_into, signed_into};

#[derive(Clone, Copy, Debug)]
struct Frame {
    /// Nothing printed in it yet.
    first: bool,
    /// An array: elements are separated by `,` and have no names.
    array: bool,
    /// An anonymous member: its members print in the parent.
    flat: bool,
}

/// The nesting a [`Fields`] walk keeps, reused from record to record (its room is
/// allocated once, by the first records, not per record).
#[derive(Debug, Default)]
pub struct Stack(Vec<Frame>);

/// Prints a walk as text (`json == false`) or JSON members into a line being built.
pub struct Fields<'o> {
    out: &'o mut String,
    json: bool,
    stack: &'o mut Vec<Frame>,
}

impl<'o> Fields<'o> {
    /// A printer appending to `out`: text fields each preceded by a space, or one JSON
    /// object (or value, when the type is not a struct); `stack` is emptied and reused.
    pub fn new(out: &'o mut String, json: bool, stack: &'o mut Stack) -> Self {
        stack.0.clear();
        Fields {
            out,
            json,
            stack: &mut stack.0,
        }
    }

    /// The separator and `name=` (`"name":`) before a value.
    fn start(&mut self, name: &str) {
        let json = self.json;
        let Some(at) = self.stack.iter().rposition(|f| !f.flat) else {
            // The top-level value itself.
            if !json {
                self.out.push(' ');
            }
            return;
        };
        let Some(frame) = self.stack.get_mut(at) else {
            return;
        };
        let (first, array) = (frame.first, frame.array);
        frame.first = false;
        if json || array {
            if !first {
                self.out.push(',');
            }
        } else if at == 0 || !first {
            // Text: every top-level field after the line's head, nested ones between.
            self.out.push(' ');
        }
        if array {
            return;
        }
        if json {
            string_into(self.out, name);
            self.out.push(':');
        } else {
            self.out.push_str(name);
            self.out.push('=');
        }
    }

    fn text(&mut self, name: &str, s: &str) {
        self.start(name);
        self.out.push_str(s);
    }

    fn int_text(out: &mut String, v: Int) {
        // Straight into the line; `fmt` only for the 128-bit values no u64/i64 holds.
        match v {
            Int::Signed(i) => match i64::try_from(i) {
                Ok(i) => signed_into(out, i),
                Err(_) => {
                    use std::fmt::Write as _;
                    let _ = write!(out, "{i}");
                }
            },
            Int::Unsigned(u) => match u64::try_from(u) {
                Ok(u) => decimal_into(out, u),
                Err(_) => {
                    use std::fmt::Write as _;
                    let _ = write!(out, "{u}");
                }
            },
        }
    }
}

impl Visitor for Fields<'_> {
    fn int(&mut self, name: &str, value: Int, _bits: u8) {
        self.start(name);
        Self::int_text(self.out, value);
    }

    fn bool(&mut self, name: &str, value: bool) {
        self.text(name, if value { "true" } else { "false" });
    }

    fn enumerator(&mut self, name: &str, enumerator: Option<&str>, value: Int) {
        self.start(name);
        match enumerator {
            Some(e) if self.json => string_into(self.out, e),
            Some(e) => self.out.push_str(e),
            None => Self::int_text(self.out, value),
        }
    }

    fn string(&mut self, name: &str, text: &[u8]) {
        self.start(name);
        let s = String::from_utf8_lossy(text);
        if self.json {
            string_into(self.out, &s);
        } else {
            quoted_into(self.out, &s);
        }
    }

    fn pointer(&mut self, name: &str, value: u64) {
        self.start(name);
        if self.json {
            self.out.push('"');
            hex_u64_into(self.out, value);
            self.out.push('"');
        } else {
            hex_u64_into(self.out, value);
        }
    }

    fn bytes(&mut self, name: &str, bytes: &[u8]) {
        self.start(name);
        if self.json {
            self.out.push('"');
        }
        self.out.push_str("0x");
        hex_into(self.out, bytes);
        if self.json {
            self.out.push('"');
        }
    }

    fn begin_struct(&mut self, name: &str, _union: bool) {
        let nested = !self.stack.is_empty();
        let flat = nested && name.is_empty() && !self.stack.last().is_some_and(|f| f.array);
        if nested && !flat {
            self.start(name);
            self.out.push('{');
        } else if !nested && self.json {
            self.out.push('{');
        }
        self.stack.push(Frame {
            first: true,
            array: false,
            flat,
        });
    }

    fn end_struct(&mut self) {
        let Some(f) = self.stack.pop() else {
            return;
        };
        if f.flat {
            return;
        }
        if !self.stack.is_empty() || self.json {
            self.out.push('}');
        }
    }

    fn begin_array(&mut self, name: &str, _len: u32) {
        self.start(name);
        self.out.push('[');
        self.stack.push(Frame {
            first: true,
            array: true,
            flat: false,
        });
    }

    fn end_array(&mut self) {
        self.stack.pop();
        self.out.push(']');
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn event(v: &mut dyn Visitor) {
        v.begin_struct("", false);
        v.int("pid", Int::Unsigned(7), 32);
        v.enumerator("op", Some("MOUNT"), Int::Unsigned(0));
        v.string("comm", b"cat\"");
        v.begin_struct("in", false);
        v.int("a", Int::Signed(-1), 16);
        v.bool("b", true);
        v.end_struct();
        v.begin_struct("", true);
        v.int("u", Int::Unsigned(3), 32);
        v.end_struct();
        v.begin_array("vals", 2);
        v.int("", Int::Unsigned(1), 32);
        v.pointer("", 0x10);
        v.end_array();
        v.enumerator("k", None, Int::Signed(-5));
        v.end_struct();
    }

    #[test]
    fn text_and_json_name_the_same_fields() {
        let mut t = String::from("ringbuf:events:");
        event(&mut Fields::new(&mut t, false, &mut Stack::default()));
        assert_eq!(
            t,
            "ringbuf:events: pid=7 op=MOUNT comm=\"cat\\\"\" in={a=-1 b=true} u=3 vals=[1,0x10] k=-5"
        );
        let mut j = String::new();
        event(&mut Fields::new(&mut j, true, &mut Stack::default()));
        assert_eq!(
            j,
            "{\"pid\":7,\"op\":\"MOUNT\",\"comm\":\"cat\\\"\",\"in\":{\"a\":-1,\"b\":true},\
             \"u\":3,\"vals\":[1,\"0x10\"],\"k\":-5}"
        );
        let mut s = String::new();
        Fields::new(&mut s, false, &mut Stack::default()).int("", Int::Unsigned(9), 64);
        assert_eq!(s, " 9");
    }
}
