//! The UNIQ_KEY scheme (MessageClientIDSetter's shape): a load's 20-hex-digit prefix, then the
//! send's sequence number in 12 hex digits, written for every send and read back for every
//! consumed message (without `core::fmt` or `from_str_radix`), so a key maps back to its send
//! with no table of strings.

/// The low 48 bits of `v` as 12 upper-case hex digits: `{:012X}` without the formatter, which
/// cost more than the rest of the key's encoding (this runs for every send). A byte's two
/// digits at a time, from a table: a digit at a time was 64 instructions a key, this is about 20.
#[inline]
pub fn hex12(v: u64) -> [u8; 12] {
    let mut d = [0u8; 12];
    for (i, pair) in d.chunks_exact_mut(2).enumerate() {
        let byte = (v >> (8 * (5 - i))) as u8;
        pair.copy_from_slice(&HEX_PAIRS[byte as usize]);
    }
    d
}

/// Each byte's two upper-case hex digits.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut t = [[0u8; 2]; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = [DIGITS[b >> 4], DIGITS[b & 0xF]];
        b += 1;
    }
    t
};

/// [`hex12`] appended to `out`.
pub fn push_hex12(v: u64, out: &mut String) {
    // Hex digits are ASCII.
    out.push_str(std::str::from_utf8(&hex12(v)).unwrap_or_default());
}

/// 12 hex digits of either case, the first the most significant; `None` if any byte is not
/// one. By a table, not `from_str_radix`, which checks sign, radix and overflow at every digit
/// (this runs for every consumed message). Eight bytes at a time by word arithmetic was tried:
/// its constants and masks cost as many instructions as the table's twelve lookups.
#[inline]
pub fn read_hex12(d: &[u8; 12]) -> Option<u64> {
    let mut v = 0u64;
    // Any byte that is no digit sets the high bits.
    let mut bad = 0u8;
    for &c in d {
        let x = HEX_VALUE[c as usize];
        bad |= x;
        v = v << 4 | u64::from(x & 0xF);
    }
    (bad & 0xF0 == 0).then_some(v)
}

/// What each byte is worth as a hex digit, or `NOT_HEX`.
const NOT_HEX: u8 = 0xFF;
const HEX_VALUE: [u8; 256] = {
    let mut t = [NOT_HEX; 256];
    let mut c = 0;
    while c < 10 {
        t[b'0' as usize + c] = c as u8;
        c += 1;
    }
    let mut c = 0;
    while c < 6 {
        t[b'A' as usize + c] = 10 + c as u8;
        t[b'a' as usize + c] = 10 + c as u8;
        c += 1;
    }
    t
};

/// The UNIQ_KEYs of one load: `prefix` (IP, pid, a per-load "classloader hash", 20 hex
/// digits, §3.4), then 12 hex digits. Java puts the time since the start of the month and a
/// 16-bit counter there; we put the send's sequence number (48 bits). Every key of a load is
/// still unique and 32 hex digits, which is all the broker and a Java consumer rely on; a retry
/// carries the same key, as the Java client's does; and a key read back from the store or a
/// pull maps to its send number ([`KeySpace::seq_of`], [`uniq_seq`]) with no table of strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpace {
    prefix: String,
}

impl KeySpace {
    /// The key space of `prefix` (20 hex digits).
    pub fn new(prefix: String) -> KeySpace {
        KeySpace { prefix }
    }

    /// Appends the key of send `seq`.
    pub fn write(&self, seq: u64, out: &mut String) {
        out.push_str(&self.prefix);
        push_hex12(seq, out);
    }

    /// The 20-hex-digit prefix of every key of the load.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The send number of `key`, or None for a key of another load.
    pub fn seq_of(&self, key: &str) -> Option<u64> {
        match uniq_seq(key) {
            Some((prefix, seq)) if prefix == self.prefix => Some(seq),
            _ => None,
        }
    }
}

/// Hex digits before a UNIQ_KEY's sequence number: IP, pid and the per-load hash
/// ([`KeySpace`]).
pub const KEY_PREFIX_LEN: usize = 20;

/// The prefix of a load's UNIQ_KEYs, as bytes: compared as a fixed-size array, it needs no
/// call to `memcmp`, which was 2% of a consumer's instructions per message.
pub type KeyPrefix = [u8; KEY_PREFIX_LEN];

/// A UNIQ_KEY written by [`SendBuilder`], read: its prefix and the send's sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySeq<'a> {
    pub prefix: &'a KeyPrefix,
    pub seq: u64,
}

/// `key` read as [`SendBuilder`] writes it: 32 bytes, the last 12 hex digits the sequence.
/// The prefix is not checked here: a key of another load is told apart by it.
#[inline]
pub fn key_seq(key: &[u8]) -> Option<KeySeq<'_>> {
    let key: &[u8; KEY_PREFIX_LEN + 12] = key.try_into().ok()?;
    let (prefix, digits) = key.split_at(KEY_PREFIX_LEN);
    Some(KeySeq {
        prefix: prefix.try_into().ok()?,
        seq: read_hex12(digits.try_into().ok()?)?,
    })
}

/// A UNIQ_KEY written by [`SendBuilder`]: its 20-digit prefix and the send's sequence number.
pub fn uniq_seq(key: &str) -> Option<(&str, u64)> {
    // The prefix must be text to split there (a key is not always ASCII).
    let k = key_seq(key.as_bytes())?;
    Some((key.get(..KEY_PREFIX_LEN)?, k.seq))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What `from_str_radix` reads, but digits only (it would take a leading sign).
    fn reference(d: &[u8]) -> Option<u64> {
        if !d.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u64::from_str_radix(std::str::from_utf8(d).ok()?, 16).ok()
    }

    proptest! {
        /// Any 12 bytes: mostly digits, with bytes next to the ranges' ends, and any byte.
        #[test]
        fn twelve_bytes_read_as_from_str_radix_reads_them(
            d in prop::array::uniform12(prop_oneof![
                8 => prop::sample::select(b"0123456789abcdefABCDEF".to_vec()),
                2 => prop::sample::select(b"/:@G`g \x00\x7f\x80\xb0\xc6\xff".to_vec()),
                1 => any::<u8>(),
            ]),
        ) {
            prop_assert_eq!(read_hex12(&d), reference(&d));
        }

        #[test]
        fn the_digits_are_the_formatters(v in any::<u64>()) {
            let d = hex12(v);
            prop_assert_eq!(
                std::str::from_utf8(&d).unwrap(),
                format!("{:012X}", v & ((1 << 48) - 1))
            );
        }

        #[test]
        fn what_is_written_reads_back(v in 0u64..1 << 48) {
            let mut s = String::new();
            push_hex12(v, &mut s);
            let d: &[u8; 12] = s.as_bytes().try_into().unwrap();
            prop_assert_eq!(read_hex12(d), Some(v));
        }
    }

    #[test]
    fn every_byte_in_every_place_is_judged_alone() {
        for place in 0..12 {
            for b in 0..=255u8 {
                let mut d = *b"0123456789AB";
                d[place] = b;
                assert_eq!(read_hex12(&d), reference(&d), "byte {b:#x} at {place}");
            }
        }
    }

    proptest::proptest! {
        /// The hand-written hex parse reads what `from_str_radix` reads, and refuses the rest.
        #[test]
        fn a_key_sequence_reads_as_hex(seq in "[0-9a-fA-F]{12}|[0-9a-fA-FxX +-]{12}") {
            let key = format!("{}{seq}", "7F000001000100000000");
            let want = match seq.as_bytes()[0] {
                b'+' | b'-' => None,
                _ => u64::from_str_radix(&seq, 16).ok(),
            };
            prop_assert_eq!(uniq_seq(&key).map(|(_, s)| s), want);
        }
    }

    #[test]
    fn digit_writers_match_the_formatter() {
        for v in [
            0u64,
            9,
            0xA,
            0xFFFF_FFFF_FFFF,
            0x1_0000_0000_0001,
            u64::MAX,
            40_000_000,
        ] {
            let mut got = String::from("x");
            push_hex12(v, &mut got);
            assert_eq!(got, format!("x{:012X}", v & 0xFFFF_FFFF_FFFF));
        }
    }
}
