//! A connection's output buffer that keeps what it held: frames written from the start of the
//! buffer round after round land where the last round's frames stood, so a frame of the same
//! layout ([`crate::FrameCache`]) is patched where it lies instead of copied in again.
//!
//! A closed-loop refill writes a window of sends (512 at the generator's floor) from the start
//! of an emptied buffer; the next refill writes the same number of frames of the same layout at
//! the same offsets. Copying each frame in whole was most of `memmove`'s 5.9% of the generator's
//! time at the floor (`perf`, 128-byte messages, 460-byte frames); patched, a frame costs the
//! bytes of its opaque and values.

use std::ops::Range;

use bytes::BytesMut;

/// Unwritten bytes in `bytes[start..end]`. `bytes` is always initialized up to its length, so
/// what an earlier round wrote past `end` is still there to be reused.
#[derive(Debug, Default)]
pub struct FrameBuf {
    bytes: Vec<u8>,
    start: usize,
    end: usize,
    /// `bytes[..kept_end]` are frames of layout `kept_layout` laid end to end from offset 0.
    kept_layout: u64,
    kept_end: usize,
    /// `bytes[..end]` too are frames of `kept_layout` end to end from 0, so `end` is where the
    /// next one stood.
    aligned: bool,
    /// For encoders that write only into a `BytesMut`.
    scratch: BytesMut,
}

impl FrameBuf {
    pub fn new() -> FrameBuf {
        FrameBuf {
            aligned: true,
            ..FrameBuf::default()
        }
    }

    /// The bytes not yet written out.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[self.start..self.end]
    }

    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// `n` bytes were written out. An emptied buffer starts again at its beginning, where the
    /// next round's frames meet the last round's.
    ///
    /// # Panics
    /// If `n` is more than [`FrameBuf::len`].
    pub fn advance(&mut self, n: usize) {
        assert!(n <= self.len(), "advance past the end");
        self.start += n;
        if self.start == self.end {
            self.clear();
        }
    }

    /// Drops the unwritten bytes; the next frame goes at the start.
    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
        self.aligned = true;
    }

    /// Appends bytes that are no kept frame.
    pub fn extend_from_slice(&mut self, data: &[u8]) {
        let at = self.grow(data.len());
        self.bytes[at.clone()].copy_from_slice(data);
        self.kept_end = self.kept_end.min(at.start);
        self.aligned = false;
    }

    /// Appends what `encode` writes into a `BytesMut` (for encoders that write nothing else).
    pub fn put_with(&mut self, encode: impl FnOnce(&mut BytesMut)) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        encode(&mut scratch);
        self.extend_from_slice(&scratch);
        self.scratch = scratch;
    }

    /// The next `len` bytes, appended as they stand, when they hold a frame of `layout` from
    /// an earlier round; `None` otherwise.
    pub(crate) fn reuse(&mut self, len: usize, layout: u64) -> Option<&mut [u8]> {
        if !(self.aligned && layout == self.kept_layout && self.end + len <= self.kept_end) {
            return None;
        }
        let at = self.end..self.end + len;
        self.end = at.end;
        Some(&mut self.bytes[at])
    }

    /// Appends `frame`, of `layout`, and returns where it now stands.
    pub(crate) fn append_frame(&mut self, frame: &[u8], layout: u64) -> &mut [u8] {
        let at = self.grow(frame.len());
        if at.start == 0 {
            if layout != self.kept_layout {
                self.kept_layout = layout;
                self.kept_end = 0;
            }
            self.aligned = true;
        }
        if self.aligned && layout == self.kept_layout {
            self.kept_end = self.kept_end.max(at.end);
        } else {
            // A frame of another layout: what stood from here on is no longer whole frames of
            // the kept one.
            self.kept_end = self.kept_end.min(at.start);
            self.aligned = false;
        }
        let f = &mut self.bytes[at];
        f.copy_from_slice(frame);
        f
    }

    /// Room for `n` more bytes at `end`; returns their range, now counted in.
    fn grow(&mut self, n: usize) -> Range<usize> {
        let at = self.end..self.end + n;
        if at.end > self.bytes.len() {
            let len = at.end.max(self.bytes.len() * 2);
            self.bytes.resize(len, 0);
        }
        self.end = at.end;
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_of_the_kept_layout_are_reused_where_they_stood() {
        let mut b = FrameBuf::new();
        assert!(b.reuse(3, 7).is_none(), "nothing kept yet");
        b.append_frame(b"abc", 7);
        b.append_frame(b"abd", 7);
        assert_eq!(b.as_slice(), b"abcabd");
        b.advance(4);
        assert_eq!(b.as_slice(), b"bd");
        b.advance(2);
        assert!(b.is_empty());
        // The next round: both frames are there, a third is not.
        assert_eq!(b.reuse(3, 7).map(|f| f.to_vec()), Some(b"abc".to_vec()));
        assert!(b.reuse(3, 8).is_none(), "another layout");
        assert_eq!(b.reuse(3, 7).map(|f| f.to_vec()), Some(b"abd".to_vec()));
        assert!(b.reuse(3, 7).is_none(), "past what was kept");
        assert_eq!(b.as_slice(), b"abcabd");
    }

    #[test]
    fn other_bytes_end_what_is_kept() {
        let mut b = FrameBuf::new();
        for _ in 0..3 {
            b.append_frame(b"xy", 1);
        }
        b.clear();
        b.append_frame(b"xy", 1);
        b.extend_from_slice(b"-");
        b.clear();
        // The first frame still stands; the second was partly overwritten.
        assert!(b.reuse(2, 1).is_some());
        assert!(b.reuse(2, 1).is_none());
        b.clear();
        // A frame of another layout at the start makes it the kept one.
        b.append_frame(b"pqr", 2);
        b.clear();
        assert!(b.reuse(2, 1).is_none());
        assert_eq!(b.reuse(3, 2).map(|f| f.to_vec()), Some(b"pqr".to_vec()));
    }

    #[test]
    fn a_frame_of_another_layout_inside_a_round_ends_what_is_kept_after_it() {
        let mut b = FrameBuf::new();
        for _ in 0..4 {
            b.append_frame(b"ab", 1);
        }
        b.clear();
        assert!(b.reuse(2, 1).is_some());
        b.append_frame(b"cd", 2);
        // Not aligned to layout 1 any more, and layout 2 does not start at 0.
        assert!(b.reuse(2, 1).is_none());
        assert!(b.reuse(2, 2).is_none());
        b.clear();
        assert!(b.reuse(2, 1).is_some());
        assert!(b.reuse(2, 1).is_none(), "the second frame was overwritten");
    }

    #[test]
    fn a_new_layout_at_the_start_forgets_what_the_old_one_kept() {
        let mut b = FrameBuf::new();
        for _ in 0..3 {
            b.append_frame(b"ab", 1);
        }
        b.clear();
        b.append_frame(b"xyz", 2);
        b.clear();
        assert!(b.reuse(3, 2).is_some());
        // Bytes 3..6 are "bab": old frames, not one of layout 2.
        assert!(b.reuse(3, 2).is_none());
    }

    #[test]
    fn put_with_appends_what_the_encoder_wrote() {
        let mut b = FrameBuf::new();
        b.put_with(|d| d.extend_from_slice(b"one"));
        b.put_with(|d| d.extend_from_slice(b"two"));
        assert_eq!(b.as_slice(), b"onetwo");
    }
}
