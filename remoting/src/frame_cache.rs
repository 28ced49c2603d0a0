//! The last frame of a template, kept with where its opaque and slots stand: the next frame
//! whose opaque and values have the same lengths is that frame copied whole and patched.
//!
//! A load generator's sends differ from one to the next in a few digits (the opaque, a queue
//! id, a born timestamp, a UNIQ_KEY's sequence), and those keep their lengths for thousands of
//! sends at a time. Emitting a frame part by part is a copy call per constant piece and per
//! value; a kept frame is one copy of the whole and a few small writes where the values go.
//! The bytes are the template's own (the tests hold them to [`FrameTemplate::encode_with`]).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::BytesMut;

use crate::frame_buf::FrameBuf;
use crate::template::FrameTemplate;

/// The last frame of one template and where its values stand. Use it with one template only:
/// a new template needs a new cache.
#[derive(Debug, Clone, Default)]
pub struct FrameCache {
    frame: BytesMut,
    opaque: Range<usize>,
    slots: Vec<Range<usize>>,
    kept: bool,
    /// The opaque whose digits `frame` holds.
    last_opaque: i32,
    /// Which layout `frame` has (the lengths of its opaque and values): a new number, unique in
    /// the process, each time the frame is emitted anew. A [`FrameBuf`] tells by it which of
    /// its old frames it may patch.
    layout: u64,
}

/// Layout numbers, shared by every cache so that two templates writing into one [`FrameBuf`]
/// never share one.
static NEXT_LAYOUT: AtomicU64 = AtomicU64::new(1);

impl FrameTemplate {
    /// Appends the frame with `opaque` and the slots' bytes `values` (escaped, as for
    /// [`FrameTemplate::encode_with`]) to `dst`: the kept frame patched when every value has
    /// the length it had there, otherwise emitted anew and kept. `None` from a signing
    /// template, whose signature changes with every value.
    ///
    /// # Panics
    /// If `values` does not hold exactly one value per slot: a programming error.
    pub fn encode_cached(
        &self,
        cache: &mut FrameCache,
        opaque: i32,
        values: &[&[u8]],
        dst: &mut BytesMut,
    ) -> Option<()> {
        self.update(cache, opaque, values)?;
        let start = dst.len();
        dst.extend_from_slice(&cache.frame);
        patch(&mut dst[start..], cache, values);
        Some(())
    }

    /// [`FrameTemplate::encode_cached`] into a [`FrameBuf`]: where the buffer still holds a
    /// frame of the same layout from its last round, only the opaque and the values are
    /// written over it; the rest of the frame is not copied again.
    pub fn encode_kept(
        &self,
        cache: &mut FrameCache,
        opaque: i32,
        values: &[&[u8]],
        dst: &mut FrameBuf,
    ) -> Option<()> {
        self.update(cache, opaque, values)?;
        match dst.reuse(cache.frame.len(), cache.layout) {
            Some(f) => {
                f[cache.opaque.clone()].copy_from_slice(&cache.frame[cache.opaque.clone()]);
                patch(f, cache, values);
            }
            None => patch(dst.append_frame(&cache.frame, cache.layout), cache, values),
        }
        Some(())
    }

    /// Brings the kept frame to `opaque`, and to the lengths of `values` (emitting it anew when
    /// they differ); the slots of the kept frame may still hold older values of those lengths.
    fn update(&self, cache: &mut FrameCache, opaque: i32, values: &[&[u8]]) -> Option<()> {
        assert_eq!(values.len(), self.slot_count(), "one value per slot");
        if self.signs() {
            return None;
        }
        let slots_fit = cache.kept
            && cache
                .slots
                .iter()
                .zip(values)
                .all(|(r, v)| r.len() == v.len());
        // A connection's opaques count up by one: the kept frame's digits are counted up in
        // place (one byte changes nine times in ten) instead of formatted and copied in.
        // Positive ones only: a minus sign counts the other way.
        if slots_fit
            && opaque > 0
            && cache.last_opaque.checked_add(1) == Some(opaque)
            && count_up(&mut cache.frame[cache.opaque.clone()])
        {
            cache.last_opaque = opaque;
            return Some(());
        }
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(opaque).as_bytes();
        if slots_fit && cache.opaque.len() == digits.len() {
            cache.frame[cache.opaque.clone()].copy_from_slice(digits);
            cache.last_opaque = opaque;
            return Some(());
        }
        let FrameCache {
            frame,
            opaque: at,
            slots,
            kept,
            last_opaque,
            layout,
        } = cache;
        frame.clear();
        slots.clear();
        slots.resize(self.slot_count(), 0..0);
        self.emit_parts(
            frame,
            |f| {
                let a = f.len();
                f.extend_from_slice(digits);
                *at = a..f.len();
            },
            |i, f| {
                let a = f.len();
                f.extend_from_slice(values[i]);
                slots[i] = a..f.len();
            },
        );
        *kept = true;
        *last_opaque = opaque;
        *layout = NEXT_LAYOUT.fetch_add(1, Ordering::Relaxed);
        Some(())
    }
}

/// The slots' values written into `frame`, a copy of the kept frame.
fn patch(frame: &mut [u8], cache: &FrameCache, values: &[&[u8]]) {
    for (r, v) in cache.slots.iter().zip(values) {
        frame[r.clone()].copy_from_slice(v);
    }
}

/// Adds one to the decimal digits `d` in place; `false` (and `d` left changed) when they are
/// not all digits or all nines, whose successor is one digit longer.
fn count_up(d: &mut [u8]) -> bool {
    for b in d.iter_mut().rev() {
        match *b {
            b'0'..=b'8' => {
                *b += 1;
                return true;
            }
            b'9' => *b = b'0',
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::mark;
    use crate::RemotingCommand;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn template() -> FrameTemplate {
        let mut ext = BTreeMap::new();
        ext.insert("e".to_string(), mark(0));
        ext.insert("g".to_string(), mark(1));
        ext.insert(
            "i".to_string(),
            format!("WAIT\u{1}true\u{2}UNIQ_KEY\u{1}{}\u{2}", mark(2)),
        );
        let cmd = RemotingCommand::request(310, 0)
            .with_ext_fields(ext)
            .with_body(&b"hello"[..]);
        FrameTemplate::marked(&cmd, 3).unwrap()
    }

    /// Opaques counted up across every carry, from negative to positive, and past `i32::MAX`.
    #[test]
    fn counted_up_opaques_are_the_frames_emitted() {
        let t = template();
        let mut cache = FrameCache::default();
        let runs = [
            -12..3,
            7..12,
            97..102,
            995..1003,
            2_147_483_640..2_147_483_647,
        ];
        let mut opaques: Vec<i32> = runs.into_iter().flatten().collect();
        opaques.extend([i32::MAX, i32::MIN, i32::MIN + 1, 0x3fff_ffff, 0, 1]);
        for opaque in opaques {
            let values: [&[u8]; 3] = [b"1", b"1700000000000", b"0123456789AB"];
            let mut got = BytesMut::new();
            assert_eq!(
                t.encode_cached(&mut cache, opaque, &values, &mut got),
                Some(())
            );
            let mut want = BytesMut::new();
            let _ = t.encode_with(opaque, &mut want, |i, d| d.extend_from_slice(values[i]));
            assert_eq!(got, want, "opaque {opaque}");
        }
    }

    #[test]
    fn count_up_carries_and_stops_at_the_length() {
        let up = |s: &str| {
            let mut d = s.as_bytes().to_vec();
            count_up(&mut d).then(|| String::from_utf8(d).unwrap())
        };
        assert_eq!(up("0").as_deref(), Some("1"));
        assert_eq!(up("1299").as_deref(), Some("1300"));
        assert_eq!(up("999"), None);
        assert_eq!(up("1-9"), None);
    }

    proptest! {
        /// Any interleaving of frames (opaques counted up or not, values changing length or
        /// not), other bytes, partial and whole writes and clears leaves in a `FrameBuf` the
        /// bytes that appending each frame as `encode_with` emits it leaves.
        #[test]
        fn a_frame_buf_holds_what_was_appended(
            ops in prop::collection::vec(
                (0u8..10, any::<i32>(), "[0-9]{1,2}", "[0-9]{13}", "[0-9A-F]{12}", any::<u16>()),
                1..120,
            ),
        ) {
            let t = template();
            let mut cache = FrameCache::default();
            let mut buf = FrameBuf::new();
            let mut want: Vec<u8> = Vec::new();
            let mut opaque = 1i32;
            for (op, any_opaque, q, born, key, n) in ops {
                match op {
                    0..=5 => {
                        opaque = if op == 5 { any_opaque } else { opaque.wrapping_add(1) };
                        let values = [q.as_bytes(), born.as_bytes(), key.as_bytes()];
                        prop_assert_eq!(t.encode_kept(&mut cache, opaque, &values, &mut buf), Some(()));
                        let mut f = BytesMut::new();
                        let _ = t.encode_with(opaque, &mut f, |i, d| d.extend_from_slice(values[i]));
                        want.extend_from_slice(&f);
                    }
                    6 => {
                        buf.extend_from_slice(q.as_bytes());
                        want.extend_from_slice(q.as_bytes());
                    }
                    7 => {
                        let k = usize::from(n) % (want.len() + 1);
                        buf.advance(k);
                        want.drain(..k);
                    }
                    8 => {
                        buf.advance(want.len());
                        want.clear();
                    }
                    _ => {
                        buf.clear();
                        want.clear();
                    }
                }
                prop_assert_eq!(buf.as_slice(), &want[..]);
            }
        }

        /// Any sequence of opaques and values, lengths changing or not, comes out as the
        /// template emits it.
        #[test]
        fn a_kept_frame_patched_is_the_frame_emitted(
            frames in prop::collection::vec(
                (any::<i32>(), "[0-9]{1,3}", "[0-9]{13}", "[0-9A-F]{12}", 0u8..3),
                1..40,
            ),
        ) {
            let t = template();
            let mut cache = FrameCache::default();
            let mut last_opaque = 1i32;
            for (opaque, q, born, key, same) in frames {
                // Mostly the next opaque (a sequence keeps its length), sometimes any.
                let opaque = if same > 0 { last_opaque.wrapping_add(1) } else { opaque };
                last_opaque = opaque;
                let values = [q.as_bytes(), born.as_bytes(), key.as_bytes()];
                let mut got = BytesMut::from(&b"x"[..]);
                prop_assert_eq!(t.encode_cached(&mut cache, opaque, &values, &mut got), Some(()));
                let mut want = BytesMut::from(&b"x"[..]);
                let _ = t.encode_with(opaque, &mut want, |i, d| d.extend_from_slice(values[i]));
                prop_assert_eq!(got, want);
            }
        }
    }
}
