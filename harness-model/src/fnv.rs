//! FNV-1a, 64 bit: the one hash behind stable cell ids, the `broker_conf_hash` in run.json and
//! the per-(cell, metric) bootstrap seeds. Those values are written to files and compared across
//! runs and releases, so the function must never change; std's `DefaultHasher` may.

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0100_0000_01b3;

/// A streaming FNV-1a hasher: feeding bytes in pieces gives the same value as feeding them at once.
#[derive(Debug, Clone, Copy)]
pub struct Fnv1a(u64);

impl Fnv1a {
    pub fn new() -> Self {
        Fnv1a(OFFSET_BASIS)
    }

    /// Starts from the offset basis XOR `seed`, so one input hashes differently per seed.
    pub fn with_seed(seed: u64) -> Self {
        Fnv1a(OFFSET_BASIS ^ seed)
    }

    pub fn write(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(PRIME);
        }
        self
    }

    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for Fnv1a {
    fn default() -> Self {
        Self::new()
    }
}

/// FNV-1a of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    Fnv1a::new().write(bytes).finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn streaming_equals_one_shot() {
        let mut h = Fnv1a::new();
        h.write(b"foo").write(b"bar");
        assert_eq!(h.finish(), fnv1a64(b"foobar"));
        assert_ne!(Fnv1a::with_seed(1).write(b"x").finish(), fnv1a64(b"x"));
    }
}
