//! The 12 hex digits at the end of a UNIQ_KEY, written for every send and read back for every
//! consumed message, without `core::fmt` or `from_str_radix`.

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
}
