//! The master/slave replication keys (HA reference §1.3) of BrokerConfig and MessageStoreConfig;
//! spliced into [`KEYS`](super::KEYS) after retention's. Classic HA only: the DLedger and
//! controller-mode keys (`enableDLegerCommitLog`, `enableControllerMode`, `allAckInSyncStateSet`,
//! `minInSyncReplicas`, …) change nothing under the classic service and are left out.

use super::spec::{
    int, key,
    DefaultRule::Fixed,
    KeySpec,
    KeyType::{Bool, Str},
    Unit,
};

pub(super) const HA: [KeySpec; 12] = [
    key(
        "brokerId",
        int(Unit::Count, 0, 1_000_000),
        Fixed("0"),
        "0 = master (a master's id is forced to 0); a SLAVE needs an id > 0 (`Slave's brokerId must be > 0`)",
    ),
    key(
        "haListenPort",
        int(Unit::Count, 0, 65_535),
        Fixed("0"),
        "HA port every broker binds: 4.x always listenPort + 1; 5.3 this value when > 0, else listenPort + 1; with listenPort=0 (tests) this value, 0 = ephemeral; printed as `ha listening on IP:PORT`",
    ),
    key(
        "haMasterAddress",
        Str,
        Fixed(""),
        "SLAVE: the master's HA address `host:port` (used when at least 6 characters); empty = learnt from the name server's REGISTER_BROKER answer (haServerAddr)",
    ),
    key(
        "haSendHeartbeatInterval",
        int(Unit::Millis, 1, 86_400_000),
        Fixed("5000"),
        "ms: the master sends an empty frame, the slave re-reports its offset, after this long idle; 4.x: a slave's first report comes this long after each connect",
    ),
    key(
        "haHousekeepingInterval",
        int(Unit::Millis, 1, 86_400_000),
        Fixed("20000"),
        "ms: the master closes an HA connection silent this long (the slave too, 4.3 and 5.3)",
    ),
    key(
        "haTransferBatchSize",
        int(Unit::Bytes, 1, 4 * 1024 * 1024 - 12),
        Fixed("32768"),
        "bytes: largest body of one master → slave transfer frame",
    ),
    key(
        "haSlaveFallbehindMax",
        int(Unit::Bytes, 0, i64::MAX),
        Fixed("268435456"),
        "bytes: 4.x SYNC_MASTER answers SLAVE_NOT_AVAILABLE (11) when the fastest slave is this far behind (or none is connected); ignored by 5.3",
    ),
    key(
        "haMaxGapNotInSync",
        int(Unit::Bytes, 0, i64::MAX),
        Fixed("268435456"),
        "bytes: 5.3's GET_BROKER_HA_STATUS (907) counts a slave less than this far behind as in sync",
    ),
    key(
        "slaveTimeout",
        int(Unit::Millis, 0, 86_400_000),
        Fixed("3000"),
        "ms: 4.9 (4.9.3+) and 5.3 SYNC_MASTER wait for the slave before FLUSH_SLAVE_TIMEOUT (12); 4.3 waits syncFlushTimeout instead",
    ),
    key(
        "inSyncReplicas",
        int(Unit::Count, 1, 64),
        Fixed("1"),
        "5.3 SYNC_MASTER: acks a put needs, the master's included; at 1 (default) no put waits for a slave; 4.x ignores it",
    ),
    key(
        "slaveReadEnable",
        Bool,
        Fixed("false"),
        "pulls answer suggestWhichBrokerId = 1 when the consumer reads beyond accessMessageInMemoryMaxRatio; a 5.3 SLAVE without it answers pulls with code 2",
    ),
    key(
        "offsetCheckInSlave",
        Bool,
        Fixed("false"),
        "SLAVE: a pull whose offset is out of range gets the corrected nextBeginOffset and 21 (PULL_OFFSET_MOVED) as on a master; false keeps the requested offset and answers 20 (PULL_RETRY_IMMEDIATELY, suggestWhichBrokerId = the group's brokerId); ignored on a master",
    ),
];
