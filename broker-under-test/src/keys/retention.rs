//! The retention and disk-space keys of `MessageStoreConfig` (retention reference A1) and our
//! test keys for them; spliced into [`KEYS`](super::KEYS) after the send path's keys.

use super::spec::{
    int, key, ours,
    DefaultRule::Fixed,
    KeySpec,
    KeyType::{self, Bool, Str},
    Unit,
};

const MILLIS: KeyType = int(Unit::Millis, 0, 86_400_000);
const INTERVAL: KeyType = int(Unit::Millis, 1, 86_400_000);
const PERCENT: KeyType = int(Unit::Percent, 0, 100);

pub(super) const RETENTION: [KeySpec; 15] = [
    key(
        "fileReservedTime",
        int(Unit::Hours, 0, 1_000_000),
        Fixed("72"),
        "hours: a CommitLog file older than this (last modification) is deleted at deleteWhen or when the disk is over diskMaxUsedSpaceRatio",
    ),
    key(
        "deleteWhen",
        Str,
        Fixed("04"),
        "hours of day (`;`-separated, local time) at which files older than fileReservedTime are deleted",
    ),
    key(
        "diskMaxUsedSpaceRatio",
        PERCENT,
        Fixed("75"),
        "percent: above this disk usage old files are deleted at any hour; clamped to 10..=95",
    ),
    key(
        "cleanResourceInterval",
        INTERVAL,
        Fixed("10000"),
        "ms: period of the clean rounds (CleanCommitLogService, CleanConsumeQueueService) after the first 60 s",
    ),
    key(
        "deleteCommitLogFilesInterval",
        MILLIS,
        Fixed("100"),
        "ms: pause between two CommitLog files deleted in one round",
    ),
    key(
        "deleteConsumeQueueFilesInterval",
        MILLIS,
        Fixed("100"),
        "ms: pause after each consume queue that lost a file",
    ),
    key(
        "destroyMapedFileIntervalForcibly",
        MILLIS,
        Fixed("120000"),
        "ms: a file still held by readers this long after its first destroy is deleted anyway",
    ),
    key(
        "redeleteHangedFileInterval",
        MILLIS,
        Fixed("120000"),
        "ms: retry period for a first CommitLog file destroyed once but still held",
    ),
    key(
        "cleanFileForciblyEnable",
        Bool,
        Fixed("true"),
        "above diskSpaceCleanForciblyRatio delete regardless of age",
    ),
    key(
        "deleteFileBatchMax",
        int(Unit::Count, 1, 10_000),
        Fixed("10"),
        "CommitLog files deleted per round (5.0+; a constant 10 in 4.x)",
    ),
    key(
        "diskSpaceWarningLevelRatio",
        PERCENT,
        Fixed("90"),
        "percent: above this the store is not writable (sends get 14); 5.x clamps to 35..=90; 4.x reads only `-Drocketmq.broker.diskSpaceWarningLevelRatio` (0.90, no clamp), which this key stands for",
    ),
    key(
        "diskSpaceCleanForciblyRatio",
        PERCENT,
        Fixed("85"),
        "percent: above this files are deleted regardless of age (with cleanFileForciblyEnable); 5.x clamps to 30..=85; 4.x: `-Drocketmq.broker.diskSpaceCleanForciblyRatio`",
    ),
    ours(
        "injectFileReservedSeconds",
        int(Unit::Seconds, 0, 86_400_000),
        Fixed("0"),
        "ours: when > 0, replaces fileReservedTime, in seconds (tests and soaks)",
    ),
    ours(
        "injectStoreSizeCapBytes",
        int(Unit::Bytes, 0, i64::MAX),
        Fixed("0"),
        "ours: bytes; when > 0, the disk is the store folder capped at this size: every disk ratio is its allocated bytes over the cap",
    ),
    ours(
        "injectCleanFirstDelayMillis",
        MILLIS,
        Fixed("60000"),
        "ours: ms before the first clean round (RocketMQ's fixed 60 s)",
    ),
];
