//! Where the perf.data encoders write: a [`Sink`] of bytes chosen by the caller — a
//! fixed buffer ([`SliceSink`], whose end is [`Error::Capacity`]), a byte counter
//! ([`CountSink`]), or the caller's own (a file writer in the CLI). Fields are
//! native-endian, as perf writes them (the reader tells the byte order by the magic).

use crate::error::Error;

/// Appends bytes somewhere.
pub trait Sink {
    /// What a failed write is; an encoder's own errors (a record too large for its `u16`
    /// size, ...) convert into it.
    type Error: From<Error>;

    /// Appends `bytes`.
    ///
    /// # Errors
    /// The sink's: full, or the write failed.
    fn put(&mut self, bytes: &[u8]) -> Result<(), Self::Error>;

    /// Appends `n` zero bytes.
    ///
    /// # Errors
    /// As [`Sink::put`].
    fn zeros(&mut self, n: usize) -> Result<(), Self::Error> {
        const ZEROS: [u8; 64] = [0; 64];
        let mut left = n;
        while left > 0 {
            let k = left.min(ZEROS.len());
            self.put(ZEROS.get(..k).unwrap_or_default())?;
            left -= k;
        }
        Ok(())
    }

    /// Appends a native-endian `u16`.
    ///
    /// # Errors
    /// As [`Sink::put`].
    fn u16(&mut self, v: u16) -> Result<(), Self::Error> {
        self.put(&v.to_ne_bytes())
    }

    /// Appends a native-endian `u32`.
    ///
    /// # Errors
    /// As [`Sink::put`].
    fn u32(&mut self, v: u32) -> Result<(), Self::Error> {
        self.put(&v.to_ne_bytes())
    }

    /// Appends a native-endian `u64`.
    ///
    /// # Errors
    /// As [`Sink::put`].
    fn u64(&mut self, v: u64) -> Result<(), Self::Error> {
        self.put(&v.to_ne_bytes())
    }
}

/// A caller's buffer, filled from its start.
#[derive(Debug)]
pub struct SliceSink<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> SliceSink<'a> {
    /// An empty sink over `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        SliceSink { buf, len: 0 }
    }

    /// Bytes written so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes written.
    #[must_use]
    pub fn written(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }
}

impl Sink for SliceSink<'_> {
    type Error = Error;

    fn put(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let end = self.len.checked_add(bytes.len());
        match end.and_then(|e| self.buf.get_mut(self.len..e)) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                self.len += bytes.len();
                Ok(())
            }
            None => Err(Error::Capacity {
                what: "bytes of the perf.data output buffer",
                limit: u32::try_from(self.buf.len()).unwrap_or(u32::MAX),
            }),
        }
    }
}

/// Counts the bytes an encoder would write (to size a section before writing it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountSink {
    /// Bytes so far.
    pub len: u64,
}

impl Sink for CountSink {
    type Error = Error;

    fn put(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.len = self.len.saturating_add(bytes.len() as u64);
        Ok(())
    }
}
