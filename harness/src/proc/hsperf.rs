//! A HotSpot JVM's own counters, read from the file it publishes them in
//! (`/tmp/hsperfdata_<user>/<pid>`, on by default: `-XX:+UsePerfData`), the file `jstat` reads.
//! The harness reads its JIT's work from it: how much of a window the JVM's compilers spent
//! compiling (`java.ci.totalTime`, in ticks of `sun.os.hrt.frequency`) and how many methods
//! they compiled (`sun.ci.totalCompiles`). No attach and no second JVM, so reading it costs the
//! broker's core nothing; a process that publishes no such file (broker-under-test) has no JIT.
//!
//! The file (HotSpot `perfMemory.hpp`, `PerfDataPrologue` and `PerfDataEntry`): a 32-byte
//! prologue (magic `0xcafec0c0` big-endian, then the byte order of everything else, version
//! 2.0, `used`, `overflow`, `mod_time_stamp`, `entry_offset`, `num_entries`), then entries of
//! `entry_length`, `name_offset`, `vector_length`, `data_type`, `flags`, `data_units`,
//! `data_variability`, `data_offset`, the name a NUL-ended string and the value at their
//! offsets from the entry's start. Only scalar longs (`data_type` `J`, `vector_length` 0) are
//! kept: every counter the harness reads is one.

use std::collections::BTreeMap;
use std::path::PathBuf;

const MAGIC: u32 = 0xcafe_c0c0;
const PROLOGUE: usize = 32;
const ENTRY_HEADER: usize = 20;

/// Why a perf data file could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HsperfError {
    #[error("not HotSpot perf data (magic {0:#010x})")]
    Magic(u32),
    #[error("perf data version {0}.{1}; only 2.x is read")]
    Version(u8, u8),
    #[error("perf data cut short at byte {0}")]
    Short(usize),
}

/// The scalar long counters of one perf data file, by name.
pub type Counters = BTreeMap<String, i64>;

/// Parses the bytes of a perf data file.
pub fn parse(b: &[u8]) -> Result<Counters, HsperfError> {
    let short = |at: usize| HsperfError::Short(at);
    let head = b.get(..PROLOGUE).ok_or(short(b.len()))?;
    let magic = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    if magic != MAGIC {
        return Err(HsperfError::Magic(magic));
    }
    let little = head[4] == 1;
    if head[5] != 2 {
        return Err(HsperfError::Version(head[5], head[6]));
    }
    let i32_at = |at: usize| word::<4>(b, at, little).map(i32::from_be_bytes);
    let i64_at = |at: usize| word::<8>(b, at, little).map(i64::from_be_bytes);
    let entry_offset = i32_at(24)?.max(0) as usize;
    let entries = i32_at(28)?.max(0) as usize;
    let mut out = Counters::new();
    let mut at = entry_offset;
    for _ in 0..entries {
        let header = b.get(at..at + ENTRY_HEADER).ok_or(short(at))?;
        let length = i32_at(at)?;
        let name_offset = i32_at(at + 4)?.max(0) as usize;
        let vector_length = i32_at(at + 8)?;
        let data_type = header[12];
        let data_offset = i32_at(at + 16)?.max(0) as usize;
        // A length that does not move forward would loop or read the prologue again.
        if length < ENTRY_HEADER as i32 {
            return Err(short(at));
        }
        let name_at = at + name_offset;
        let name_bytes = b.get(name_at..).ok_or(short(name_at))?;
        let end = name_bytes
            .iter()
            .position(|&c| c == 0)
            .ok_or(short(name_at))?;
        if data_type == b'J' && vector_length == 0 {
            let name = String::from_utf8_lossy(&name_bytes[..end]).into_owned();
            out.insert(name, i64_at(at + data_offset)?);
        }
        at += length as usize;
    }
    Ok(out)
}

/// The `N` bytes at `at`, in big-endian order whatever the file's (`little`: its byte order).
fn word<const N: usize>(b: &[u8], at: usize, little: bool) -> Result<[u8; N], HsperfError> {
    let mut w: [u8; N] = b
        .get(at..at + N)
        .ok_or(HsperfError::Short(at))?
        .try_into()
        .expect("N bytes");
    if little {
        w.reverse();
    }
    Ok(w)
}

/// Where the JVM `pid`, run by the harness's own user, publishes its counters: HotSpot's
/// temporary directory (`/tmp` on Linux, which `-Djava.io.tmpdir` does not move) and the user's name.
pub fn path_of(pid: u32) -> Option<PathBuf> {
    let user = user_name()?;
    Some(PathBuf::from(format!("/tmp/hsperfdata_{user}/{pid}")))
}

/// The counters of the JVM `pid`; None for a process that publishes none (not a JVM, or one
/// started with `-XX:-UsePerfData`) or a file that does not parse.
pub fn read(pid: u32) -> Option<Counters> {
    let bytes = std::fs::read(path_of(pid)?).ok()?;
    parse(&bytes).ok()
}

/// The effective user's name, as HotSpot names the folder.
fn user_name() -> Option<String> {
    // SAFETY: geteuid has no preconditions; getpwuid_r writes only into the buffers given,
    // whose lengths it is told, and `result` is read only when it points at `pwd`.
    unsafe {
        let uid = libc::geteuid();
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 4096];
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result);
        if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        Some(
            std::ffi::CStr::from_ptr(pwd.pw_name)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

/// The JIT's work so far, from one read of the counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Jit {
    /// Seconds the compiler threads have spent compiling, summed over the threads
    /// (`java.ci.totalTime` / `sun.os.hrt.frequency`). A compile that waits for the CPU counts
    /// too: on one core this is the time the JIT had work queued, not the CPU it used.
    pub compile_s: f64,
    /// Methods compiled (`sun.ci.totalCompiles`).
    pub compiles: i64,
}

impl Jit {
    pub fn from_counters(c: &Counters) -> Option<Jit> {
        let ticks = *c.get("java.ci.totalTime")?;
        let hz = *c.get("sun.os.hrt.frequency")?;
        (hz > 0).then(|| Jit {
            compile_s: ticks as f64 / hz as f64,
            compiles: c.get("sun.ci.totalCompiles").copied().unwrap_or(0),
        })
    }

    /// The JVM `pid`'s JIT, if it publishes its counters.
    pub fn of(pid: u32) -> Option<Jit> {
        Jit::from_counters(&read(pid)?)
    }

    /// The share of `wall_s` seconds the compilers spent compiling between `self` (earlier)
    /// and `later`.
    pub fn busy_share(&self, later: &Jit, wall_s: f64) -> f64 {
        if wall_s <= 0.0 {
            return 0.0;
        }
        ((later.compile_s - self.compile_s) / wall_s).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file with the given (name, value) longs, in `little` or big byte order, laid out as
    /// HotSpot lays it out (name then 8-aligned value after a 20-byte header).
    fn file(entries: &[(&str, i64)], little: bool) -> Vec<u8> {
        let mut b = vec![0u8; PROLOGUE];
        b[..4].copy_from_slice(&MAGIC.to_be_bytes());
        b[4] = u8::from(little);
        b[5] = 2;
        b[7] = 1;
        let put32 = |v: i32| {
            if little {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            }
        };
        b[24..28].copy_from_slice(&put32(PROLOGUE as i32));
        b[28..32].copy_from_slice(&put32(entries.len() as i32));
        for (name, value) in entries {
            let name_len = name.len() + 1;
            let data_offset = (ENTRY_HEADER + name_len).div_ceil(8) * 8;
            let length = data_offset + 8;
            let mut e = vec![0u8; length];
            e[0..4].copy_from_slice(&put32(length as i32));
            e[4..8].copy_from_slice(&put32(ENTRY_HEADER as i32));
            e[12] = b'J';
            e[16..20].copy_from_slice(&put32(data_offset as i32));
            e[ENTRY_HEADER..ENTRY_HEADER + name.len()].copy_from_slice(name.as_bytes());
            let v = if little {
                value.to_le_bytes()
            } else {
                value.to_be_bytes()
            };
            e[data_offset..].copy_from_slice(&v);
            b.extend_from_slice(&e);
        }
        b
    }

    /// A real JVM's file against the JDK's own reader of it (tests/data/hsperf/README.md).
    #[test]
    fn every_long_jstat_prints_is_read_the_same() {
        let bytes = include_bytes!("../../tests/data/hsperf/openjdk-17.0.15.hsperfdata");
        let snap = include_str!("../../tests/data/hsperf/openjdk-17.0.15.jstat-snap.txt");
        let c = parse(bytes).unwrap();
        let mut compared = 0;
        for line in snap.lines() {
            let Some((name, value)) = line.split_once('=') else {
                continue;
            };
            // Strings are quoted; vectors and other types are not read.
            let Ok(value) = value.parse::<i64>() else {
                continue;
            };
            if let Some(&ours) = c.get(name) {
                assert_eq!(ours, value, "{name}");
                compared += 1;
            }
        }
        // Every long the parser found is one jstat printed, and they are most of the file.
        assert_eq!(compared, c.len(), "{c:?}");
        assert!(compared > 100, "only {compared} counters compared");
        let jit = Jit::from_counters(&c).unwrap();
        assert_eq!(jit.compiles, 896);
        assert!((jit.compile_s - 0.476953879).abs() < 1e-9);
    }

    #[test]
    fn longs_are_read_in_either_byte_order() {
        let entries = [
            ("java.ci.totalTime", 3_000_000_000),
            ("sun.os.hrt.frequency", 1_000_000_000),
            ("sun.ci.totalCompiles", 5561),
        ];
        for little in [true, false] {
            let c = parse(&file(&entries, little)).unwrap();
            assert_eq!(c["sun.ci.totalCompiles"], 5561);
            let jit = Jit::from_counters(&c).unwrap();
            assert_eq!(jit.compile_s, 3.0);
            assert_eq!(jit.compiles, 5561);
        }
    }

    #[test]
    fn the_busy_share_is_compile_time_over_wall_time() {
        let a = Jit {
            compile_s: 10.0,
            compiles: 100,
        };
        let b = Jit {
            compile_s: 12.5,
            compiles: 180,
        };
        assert_eq!(a.busy_share(&b, 5.0), 0.5);
        assert_eq!(a.busy_share(&a, 5.0), 0.0);
        assert_eq!(a.busy_share(&b, 0.0), 0.0);
    }

    #[test]
    fn bad_files_are_errors_not_panics() {
        assert_eq!(parse(&[]), Err(HsperfError::Short(0)));
        let mut b = file(&[("a", 1)], true);
        b[0] = 0;
        assert!(matches!(parse(&b), Err(HsperfError::Magic(_))));
        let mut b = file(&[("a", 1)], true);
        b[5] = 1;
        assert_eq!(parse(&b), Err(HsperfError::Version(1, 0)));
        // Cut anywhere: an error, never a panic or a read past the end.
        let b = file(&[("java.ci.totalTime", 1), ("b", 2)], true);
        for n in 0..b.len() {
            let _ = parse(&b[..n]);
        }
        // An entry length that would not move forward.
        let mut b = file(&[("a", 1)], true);
        b[PROLOGUE..PROLOGUE + 4].copy_from_slice(&0i32.to_le_bytes());
        assert!(parse(&b).is_err());
    }
}
