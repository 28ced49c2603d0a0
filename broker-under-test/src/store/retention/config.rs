//! [`RetentionConfig`]: the retention and disk-space keys (retention reference A1), resolved
//! once with the selected release's clamps.

use std::time::Duration;

use crate::keys::{BadValue, Reader, VersionProfile};

/// Where the disk ratios come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskModel {
    /// `statvfs` of the store paths, as RocketMQ measures (A3).
    Real,
    /// Ours (`injectStoreSizeCapBytes`): the disk is the store folder, this many bytes large.
    Capped(u64),
}

/// The retention settings.
#[derive(Debug, Clone)]
pub struct RetentionConfig {
    pub profile: VersionProfile,
    /// `fileReservedTime` (hours), or `injectFileReservedSeconds` when set. Default: 72 h.
    pub file_reserved: Duration,
    /// `deleteWhen`: hours of day. Default: 04.
    pub delete_when: Vec<u32>,
    /// `diskMaxUsedSpaceRatio` / 100, clamped to 0.10..=0.95 like its getter. Default: 0.75.
    pub disk_max_used_space_ratio: f64,
    /// `cleanResourceInterval`. Default: 10 s.
    pub clean_resource_interval: Duration,
    /// `deleteCommitLogFilesInterval`. Default: 100 ms.
    pub delete_commit_log_files_interval: Duration,
    /// `deleteConsumeQueueFilesInterval`. Default: 100 ms.
    pub delete_consume_queue_files_interval: Duration,
    /// `destroyMapedFileIntervalForcibly`. Default: 120 s.
    pub destroy_mapped_file_interval_forcibly: Duration,
    /// `redeleteHangedFileInterval`. Default: 120 s.
    pub redelete_hanged_file_interval: Duration,
    /// `cleanFileForciblyEnable`. Default: true.
    pub clean_file_forcibly_enable: bool,
    /// `deleteFileBatchMax` (5.x; 4.x's constant is the same 10). Default: 10.
    pub delete_file_batch_max: usize,
    /// W: `diskSpaceWarningLevelRatio` / 100; 5.x clamps to 0.35..=0.90, 4.x does not. Default: 0.90.
    pub disk_space_warning_level_ratio: f64,
    /// F: `diskSpaceCleanForciblyRatio` / 100; 5.x clamps to 0.30..=0.85, 4.x does not. Default: 0.85.
    pub disk_space_clean_forcibly_ratio: f64,
    /// `injectStoreSizeCapBytes`. Default: the real disk.
    pub disk: DiskModel,
    /// `injectCleanFirstDelayMillis`: RocketMQ's fixed 60 s before the first round. Default: 60 s.
    pub first_delay: Duration,
}

impl RetentionConfig {
    pub(crate) fn from_keys(r: &Reader<'_>, profile: VersionProfile) -> Result<Self, BadValue> {
        let reserved_secs: u64 = r.get("injectFileReservedSeconds")?;
        let file_reserved = if reserved_secs > 0 {
            Duration::from_secs(reserved_secs)
        } else {
            Duration::from_secs(r.get::<u64>("fileReservedTime")? * 3600)
        };
        let delete_when = parse_delete_when(r.raw("deleteWhen")).map_err(|reason| BadValue {
            key: "deleteWhen".into(),
            value: r.raw("deleteWhen").into(),
            reason,
        })?;
        let percent = |k: &str| -> Result<f64, BadValue> { Ok(r.get::<u32>(k)? as f64 / 100.0) };
        let (mut warning, mut forcibly) = (
            percent("diskSpaceWarningLevelRatio")?,
            percent("diskSpaceCleanForciblyRatio")?,
        );
        if !profile.is_4x() {
            warning = warning.clamp(0.35, 0.90);
            forcibly = forcibly.clamp(0.30, 0.85);
        }
        let cap: u64 = r.get("injectStoreSizeCapBytes")?;
        Ok(RetentionConfig {
            profile,
            file_reserved,
            delete_when,
            disk_max_used_space_ratio: percent("diskMaxUsedSpaceRatio")?.clamp(0.10, 0.95),
            clean_resource_interval: r.millis("cleanResourceInterval")?,
            delete_commit_log_files_interval: r.millis("deleteCommitLogFilesInterval")?,
            delete_consume_queue_files_interval: r.millis("deleteConsumeQueueFilesInterval")?,
            destroy_mapped_file_interval_forcibly: r.millis("destroyMapedFileIntervalForcibly")?,
            redelete_hanged_file_interval: r.millis("redeleteHangedFileInterval")?,
            clean_file_forcibly_enable: r.bool("cleanFileForciblyEnable")?,
            delete_file_batch_max: r.get("deleteFileBatchMax")?,
            disk_space_warning_level_ratio: warning,
            disk_space_clean_forcibly_ratio: forcibly,
            disk: if cap > 0 {
                DiskModel::Capped(cap)
            } else {
                DiskModel::Real
            },
            first_delay: r.millis("injectCleanFirstDelayMillis")?,
        })
    }
}

/// `deleteWhen`: `Integer.parseInt` of each `;`-separated part, compared with `HOUR_OF_DAY`.
/// RocketMQ ignores a part that does not parse (it logs and moves on); we refuse it, so a typo
/// does not silently turn age-based deletion off.
fn parse_delete_when(raw: &str) -> Result<Vec<u32>, String> {
    raw.split(';')
        .filter(|p| !p.trim().is_empty())
        .map(|p| match p.trim().parse::<u32>() {
            Ok(h) if h < 24 => Ok(h),
            _ => Err(format!("`{p}` is not an hour of day 0..=23")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys;

    fn config(profile: VersionProfile, pairs: &[(&str, &str)]) -> RetentionConfig {
        let mut map = keys::defaults(profile, None);
        for (k, v) in pairs {
            map.insert((*k).into(), (*v).into());
        }
        RetentionConfig::from_keys(&Reader { map: &map }, profile).unwrap()
    }

    #[test]
    fn defaults_are_rocketmqs() {
        let c = config(VersionProfile::V5_3, &[]);
        assert_eq!(c.file_reserved, Duration::from_secs(72 * 3600));
        assert_eq!(c.delete_when, vec![4]);
        assert_eq!(c.disk_max_used_space_ratio, 0.75);
        assert_eq!(c.clean_resource_interval, Duration::from_secs(10));
        assert_eq!(c.delete_file_batch_max, 10);
        assert_eq!(
            (
                c.disk_space_warning_level_ratio,
                c.disk_space_clean_forcibly_ratio
            ),
            (0.90, 0.85)
        );
        assert_eq!(c.disk, DiskModel::Real);
        assert_eq!(c.first_delay, Duration::from_secs(60));
    }

    #[test]
    fn ratios_clamp_in_5x_only_and_the_seconds_key_wins() {
        let pairs = [
            ("diskSpaceWarningLevelRatio", "97"),
            ("diskSpaceCleanForciblyRatio", "10"),
            ("diskMaxUsedSpaceRatio", "99"),
            ("injectFileReservedSeconds", "3"),
            ("deleteWhen", "00;13; 23"),
        ];
        let c5 = config(VersionProfile::V5_3, &pairs);
        assert_eq!(
            (
                c5.disk_space_warning_level_ratio,
                c5.disk_space_clean_forcibly_ratio
            ),
            (0.90, 0.30)
        );
        assert_eq!(c5.disk_max_used_space_ratio, 0.95);
        assert_eq!(c5.file_reserved, Duration::from_secs(3));
        assert_eq!(c5.delete_when, vec![0, 13, 23]);
        let c4 = config(VersionProfile::V4_9, &pairs);
        assert_eq!(c4.disk_space_warning_level_ratio, 0.97);
        assert_eq!(c4.disk_space_clean_forcibly_ratio, 0.10);
    }

    #[test]
    fn a_bad_hour_is_refused() {
        assert!(parse_delete_when("04;25").is_err());
        assert!(parse_delete_when("x").is_err());
        assert_eq!(parse_delete_when("").unwrap(), Vec::<u32>::new());
    }
}
