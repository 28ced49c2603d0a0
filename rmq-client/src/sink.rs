//! Where a send's frame is appended: a plain `BytesMut`, or a connection's [`FrameBuf`], which
//! patches a frame of the kept layout where the last round's frame stood instead of copying it
//! in again (`remoting::frame_buf`).

use bytes::BytesMut;
use remoting::{FrameBuf, FrameCache, FrameTemplate};

/// A buffer that [`crate::send::SendBuilder::encode_into_queue`] appends to.
pub trait SendSink {
    /// Bytes appended and not yet written out.
    fn filled(&self) -> usize;

    /// The frame of template `t` with `opaque` and `values`, from `cache`.
    fn put_marked(
        &mut self,
        t: &FrameTemplate,
        cache: &mut FrameCache,
        opaque: i32,
        values: &[&[u8]],
    );

    /// What `encode` writes.
    fn put_with(&mut self, encode: impl FnOnce(&mut BytesMut));
}

impl SendSink for BytesMut {
    fn filled(&self) -> usize {
        BytesMut::len(self)
    }

    fn put_marked(
        &mut self,
        t: &FrameTemplate,
        cache: &mut FrameCache,
        opaque: i32,
        values: &[&[u8]],
    ) {
        let _ = t.encode_cached(cache, opaque, values, self);
    }

    fn put_with(&mut self, encode: impl FnOnce(&mut BytesMut)) {
        encode(self);
    }
}

impl SendSink for FrameBuf {
    fn filled(&self) -> usize {
        FrameBuf::len(self)
    }

    fn put_marked(
        &mut self,
        t: &FrameTemplate,
        cache: &mut FrameCache,
        opaque: i32,
        values: &[&[u8]],
    ) {
        let _ = t.encode_kept(cache, opaque, values, self);
    }

    fn put_with(&mut self, encode: impl FnOnce(&mut BytesMut)) {
        FrameBuf::put_with(self, encode);
    }
}
