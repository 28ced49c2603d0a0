//! `harness recipe NAME`: every flow-control answer on demand, with the answer checked.
//!
//! The README's recipes used to be prose ("pipeline three sends"), and prose leaves the order
//! of events to chance: from an independent client, the `[PC_SYNCHRONIZED]` recipe gave its
//! answer in only 4 of 6 runs, because A could take the put lock before X. Each recipe here
//! starts a fresh broker-under-test with its keys, performs its steps with the waits that make
//! the order certain (a wait is on an observable state, such as "the put lock has been held for
//! more than 1050 ms", never only on a sleep), and checks the answer it promises.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use remoting::headers::{PullMessageRequestHeader, SendMessageRequestHeaderV2};
use remoting::message::encode_properties;
use remoting::{RemotingCommand, RequestCode};

use crate::kind::in_tree::process::{locate_or_build, BrokerProcess};
use crate::kind::write_conf;
use rmq_client::admin::AdminConn;

/// One recipe: broker keys, the steps, and the promised answer.
pub struct Recipe {
    pub name: &'static str,
    /// The answer it promises, as the README states it.
    pub promise: &'static str,
    /// `--set` keys of broker-under-test.
    pub broker: &'static [(&'static str, &'static str)],
    /// What the client does, in words (printed by `--list` and in the README).
    pub steps: &'static str,
    run: fn(&mut Session) -> anyhow::Result<Check>,
}

/// The recipes, in README order.
pub const RECIPES: &[Recipe] = &[
    Recipe {
        name: "overload",
        promise: "code 2 [OVERLOAD] for sends that find the send queue full",
        broker: &[
            ("sendMessageThreadPoolNums", "1"),
            ("sendThreadPoolQueueCapacity", "2"),
            ("injectAppendDelayMicros", "100000"),
            ("waitTimeMillsInSendQueue", "60000"),
        ],
        steps: "pipeline 12 sends on one connection (one runs, two wait, the rest overflow)",
        run: overload,
    },
    Recipe {
        name: "reject-page-cache",
        promise: "code 2 [REJECTREQUEST] while the put lock is held past osPageCacheBusyTimeOutMills",
        broker: &[
            ("injectPutStallMillis", "1800"),
            ("injectPutStallIntervalMillis", "600000"),
            ("sendMessageThreadPoolNums", "2"),
        ],
        steps: "send X; wait until pageCacheLockTimeMills > 1050; send Y",
        run: reject_page_cache,
    },
    Recipe {
        name: "reject-pool",
        promise: "code 2 [REJECTREQUEST] when the transient store pool has no buffer left (RocketMQ #2439)",
        broker: &[
            ("transientStorePoolEnable", "true"),
            ("transientStorePoolSize", "1"),
            ("mappedFileSizeCommitLog", "1048576"),
            ("maxMessageSize", "65536"),
        ],
        steps: "send 20 messages one after another (the only buffer is lent to the active file)",
        run: reject_pool,
    },
    Recipe {
        name: "pcbusy-clean-queue",
        promise: "code 2 [PCBUSY_CLEAN_QUEUE] for the 3 queued sends, period in queue >= 1000 ms",
        broker: &[
            ("sendMessageThreadPoolNums", "1"),
            ("injectPutStallMillis", "1800"),
            ("injectPutStallIntervalMillis", "600000"),
            ("waitTimeMillsInSendQueue", "60000"),
        ],
        steps: "pipeline 4 sends: the first stalls 1800 ms in the put lock, the other three wait in the queue",
        run: pcbusy_clean_queue,
    },
    Recipe {
        name: "timeout-clean-queue",
        promise: "code 2 [TIMEOUT_CLEAN_QUEUE] for the 3 queued sends, period in queue >= 100 ms",
        broker: &[
            ("sendMessageThreadPoolNums", "1"),
            ("injectAppendDelayMicros", "600000"),
            ("waitTimeMillsInSendQueue", "100"),
        ],
        steps: "wait 1100 ms (BrokerFastFailure starts 1000 ms after the broker); pipeline 4 sends",
        run: timeout_clean_queue,
    },
    Recipe {
        name: "timeout-clean-queue-pull",
        promise: "code 2 [TIMEOUT_CLEAN_QUEUE] for pulls that waited past waitTimeMillsInPullQueue",
        broker: &[
            ("pullMessageThreadPoolNums", "1"),
            ("waitTimeMillsInPullQueue", "1"),
        ],
        steps: "wait 1100 ms; store 40 messages of 60 KB; pipeline rounds of 400 pulls of 32 messages until one expires (at most 20 rounds)",
        run: timeout_clean_queue_pull,
    },
    Recipe {
        name: "pc-synchronized",
        promise: "code 1 [PC_SYNCHRONIZED] for C (4.3: a send thread freed by a flush while another put holds the lock)",
        broker: &[
            ("brokerVersionProfile", "4.3"),
            ("sendMessageThreadPoolNums", "2"),
            ("brokerFastFailureEnable", "false"),
            ("flushDiskType", "SYNC_FLUSH"),
            ("injectFlushStallMillis", "1250"),
            ("injectPutStallMillis", "1500"),
            ("injectPutStallIntervalMillis", "1400"),
        ],
        steps: "send X (WAIT=true); wait until X holds the put lock (pageCacheLockTimeMills > 0); pipeline A and C (WAIT=false)",
        run: pc_synchronized,
    },
];

pub fn find(name: &str) -> Option<&'static Recipe> {
    RECIPES.iter().find(|r| r.name == name)
}

/// The message for a name that is not a recipe, with the closest one.
pub fn unknown(name: &str) -> String {
    let best = RECIPES
        .iter()
        .map(|r| (strsim::jaro_winkler(name, r.name), r.name))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .filter(|(score, _)| *score >= 0.8)
        .map_or(String::new(), |(_, n)| format!("did you mean `{n}`? "));
    let names: Vec<&str> = RECIPES.iter().map(|r| r.name).collect();
    format!(
        "no recipe `{name}`: {best}recipes: {}, or `all`",
        names.join(", ")
    )
}

/// One block per recipe: name, promise, the broker command line and the steps.
pub fn listing() -> String {
    let mut out = String::new();
    for r in RECIPES {
        let keys: Vec<String> = r
            .broker
            .iter()
            .map(|(k, v)| format!("--set {k}={v}"))
            .collect();
        out.push_str(&format!(
            "{}\n  promise: {}\n  broker:  broker-under-test {}\n  steps:   {}\n",
            r.name,
            r.promise,
            keys.join(" "),
            r.steps
        ));
    }
    out
}

/// What a recipe saw, and whether it is what it promised.
#[derive(Debug)]
pub struct Check {
    pub kept: bool,
    /// `(label, code, remark)` of every answer, in the order the steps name them.
    pub answers: Vec<(String, i32, String)>,
    pub detail: String,
}

/// Starts a broker with the recipe's keys, runs it, stops the broker.
pub fn run(recipe: &Recipe, broker_bin: Option<&Path>) -> anyhow::Result<Check> {
    let bin = locate_or_build(broker_bin)?;
    let dir = tempfile::tempdir().context("creating a store directory")?;
    let mut conf: BTreeMap<String, String> = [
        ("listenPort", "0"),
        ("brokerIP1", "127.0.0.1"),
        ("brokerName", "broker-a"),
    ]
    .iter()
    .chain(recipe.broker)
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    conf.insert(
        "storePathRootDir".into(),
        dir.path().join("store").display().to_string(),
    );
    let conf_path = dir.path().join("broker.conf");
    write_conf(&conf_path, &conf).context("writing broker.conf")?;
    let broker = BrokerProcess::start(
        &bin,
        &conf_path,
        &dir.path().join("broker.log"),
        None,
        Duration::from_secs(20),
    )
    .with_context(|| format!("starting {}", bin.display()))?;
    let mut session = Session {
        wire: AdminConn::connect(broker.addr, CONNECT_TIMEOUT)?,
        probe: AdminConn::connect(broker.addr, CONNECT_TIMEOUT)?,
        sent: 0,
    };
    let check = (recipe.run)(&mut session);
    broker.stop(Duration::from_secs(10));
    check
}

/// A recipe's connections to the broker: `wire` carries the recipe's requests, `probe` the
/// runtime-info polls, so a poll never waits behind a queued send.
pub struct Session {
    wire: AdminConn,
    probe: AdminConn,
    /// Sends so far: numbers each message's UNIQ_KEY.
    sent: u64,
}

const ANSWER_TIMEOUT: Duration = Duration::from_secs(15);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

impl Session {
    fn send(&mut self, label: &str, wait_store: bool, body: &[u8]) -> anyhow::Result<i32> {
        self.sent += 1;
        let request = send_request(self.sent, label, wait_store, body);
        Ok(self.wire.send(request, ANSWER_TIMEOUT)?)
    }

    /// Reads answers until every opaque in `want` has one.
    fn answers(&mut self, want: &[i32]) -> anyhow::Result<BTreeMap<i32, RemotingCommand>> {
        let mut got = BTreeMap::new();
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        while want.iter().any(|o| !got.contains_key(o)) {
            let r = self.wire.read_response(deadline, ANSWER_TIMEOUT)?;
            got.insert(r.opaque, r);
        }
        Ok(got)
    }

    fn runtime_counter(&mut self, key: &str) -> anyhow::Result<u64> {
        let table = self.probe.runtime_info(ANSWER_TIMEOUT)?;
        Ok(table.get(key).and_then(|v| v.parse().ok()).unwrap_or(0))
    }

    /// Waits until the put lock's current holder has held it longer than `ms`.
    fn wait_lock_held_longer_than(&mut self, ms: u64) -> anyhow::Result<()> {
        self.wait_counter_above("pageCacheLockTimeMills", ms)
            .with_context(|| format!("the put lock was never held for more than {ms} ms"))
    }

    /// Waits until BrokerFastFailure has run once (`brokerFastFailureRounds`, the broker's
    /// count of its rounds; the first comes 1000 ms after start): a sleep from start could end
    /// before it on a loaded machine.
    fn wait_fast_failure_running(&mut self) -> anyhow::Result<()> {
        self.wait_counter_above("brokerFastFailureRounds", 0)
            .context("BrokerFastFailure never ran")
    }

    /// Polls the runtime-info counter `key` until it exceeds `floor`, for at most 10 s.
    fn wait_counter_above(&mut self, key: &str, floor: u64) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let now = self.runtime_counter(key)?;
            if now > floor {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("{key} stayed at {now} (<= {floor}) for 10 s");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn send_request(seq: u64, label: &str, wait_store: bool, body: &[u8]) -> RemotingCommand {
    let uniq = format!("RECIPE{seq:026}");
    let wait = if wait_store { "true" } else { "false" };
    let header = SendMessageRequestHeaderV2 {
        a: "recipe_producer".into(),
        b: "RecipeTopic".into(),
        c: "TBW102".into(),
        d: 4,
        e: 0,
        f: 0,
        g: 1_700_000_000_000,
        h: 0,
        i: Some(encode_properties([
            ("WAIT", wait),
            ("UNIQ_KEY", uniq.as_str()),
            ("KEYS", label),
        ])),
        j: Some(0),
        k: Some(false),
        l: None,
        m: Some(false),
        n: None,
    };
    RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, 0)
        .with_header(&header)
        .with_body(body.to_vec())
}

fn remark(r: &RemotingCommand) -> String {
    r.remark.clone().unwrap_or_default()
}

fn listed(
    answers: &BTreeMap<i32, RemotingCommand>,
    label: impl Fn(i32) -> String,
) -> Vec<(String, i32, String)> {
    answers
        .iter()
        .map(|(o, r)| (label(*o), r.code, remark(r)))
        .collect()
}

/// `period in queue: N ms` of a fast-failure remark.
fn period_in_queue(remark: &str) -> Option<u64> {
    let rest = remark.split_once("period in queue: ")?.1;
    rest.split_once("ms")?.0.parse().ok()
}

const OVERLOAD: &str = "[OVERLOAD]system busy, start flow control for a while";
const REJECT: &str = "[REJECTREQUEST]system busy, start flow control for a while";
const PCBUSY: &str = "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while";
const TIMEOUT: &str = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while";
const PC_SYNCHRONIZED: &str = "[PC_SYNCHRONIZED]broker busy, start flow control for a while";

fn overload(s: &mut Session) -> anyhow::Result<Check> {
    let mut sent = Vec::new();
    for i in 0..12 {
        sent.push(s.send(&format!("m{i}"), true, b"overload")?);
    }
    let answers = s.answers(&sent)?;
    let busy = answers
        .values()
        .filter(|r| r.code == 2 && remark(r) == OVERLOAD)
        .count();
    let others = answers
        .values()
        .filter(|r| r.code != 0 && !(r.code == 2 && remark(r) == OVERLOAD))
        .count();
    Ok(Check {
        kept: busy > 0 && others == 0,
        answers: listed(&answers, |o| format!("send {o}")),
        detail: format!("{busy} of 12 sends answered [OVERLOAD], {others} other failures"),
    })
}

fn reject_page_cache(s: &mut Session) -> anyhow::Result<Check> {
    let x = s.send("X", true, b"X")?;
    s.wait_lock_held_longer_than(1050)?;
    let y = s.send("Y", true, b"Y")?;
    let answers = s.answers(&[x, y])?;
    let (rx, ry) = (&answers[&x], &answers[&y]);
    Ok(Check {
        kept: rx.code == 0 && ry.code == 2 && remark(ry) == REJECT,
        answers: vec![
            ("X".into(), rx.code, remark(rx)),
            ("Y".into(), ry.code, remark(ry)),
        ],
        detail: "Y arrived while X held the put lock for more than 1050 ms".into(),
    })
}

fn reject_pool(s: &mut Session) -> anyhow::Result<Check> {
    let mut answers = BTreeMap::new();
    for i in 0..20 {
        let o = s.send(&format!("m{i}"), true, &[b'p'; 1024])?;
        answers.extend(s.answers(&[o])?);
    }
    let rejected = answers
        .values()
        .filter(|r| r.code == 2 && remark(r) == REJECT)
        .count();
    let others = answers
        .values()
        .filter(|r| r.code != 0 && !(r.code == 2 && remark(r) == REJECT))
        .count();
    Ok(Check {
        kept: rejected > 0 && others == 0,
        answers: listed(&answers, |o| format!("send {o}")),
        detail: format!("{rejected} of 20 sends answered [REJECTREQUEST], {others} other failures"),
    })
}

fn pcbusy_clean_queue(s: &mut Session) -> anyhow::Result<Check> {
    let mut sent = Vec::new();
    for i in 0..4 {
        sent.push(s.send(&format!("m{i}"), true, b"pcbusy")?);
    }
    let answers = s.answers(&sent)?;
    let first_ok = answers[&sent[0]].code == 0;
    let drained = sent[1..]
        .iter()
        .filter(|o| {
            let r = &answers[o];
            r.code == 2
                && remark(r).starts_with(PCBUSY)
                && period_in_queue(&remark(r)).is_some_and(|p| p >= 1000)
        })
        .count();
    Ok(Check {
        kept: first_ok && drained == 3,
        answers: listed(&answers, |o| format!("send {o}")),
        detail: format!(
            "first send {}, {drained} of 3 queued sends drained",
            if first_ok { "stored" } else { "failed" }
        ),
    })
}

fn timeout_clean_queue(s: &mut Session) -> anyhow::Result<Check> {
    s.wait_fast_failure_running()?;
    let mut sent = Vec::new();
    for i in 0..4 {
        sent.push(s.send(&format!("m{i}"), true, b"timeout")?);
    }
    let answers = s.answers(&sent)?;
    let expired = answers
        .values()
        .filter(|r| {
            r.code == 2
                && remark(r).starts_with(TIMEOUT)
                && period_in_queue(&remark(r)).is_some_and(|p| p >= 100)
        })
        .count();
    Ok(Check {
        kept: expired == 3,
        answers: listed(&answers, |o| format!("send {o}")),
        detail: format!("{expired} of the 3 queued sends expired"),
    })
}

fn timeout_clean_queue_pull(s: &mut Session) -> anyhow::Result<Check> {
    s.wait_fast_failure_running()?;
    let big = vec![b'p'; 60_000];
    for i in 0..40 {
        let o = s.send(&format!("m{i}"), true, &big)?;
        let r = &s.answers(&[o])?[&o];
        if r.code != 0 {
            bail!("storing message {i} failed: code {} {}", r.code, remark(r));
        }
    }
    let mut expired = Vec::new();
    let mut pulls = 0;
    for _round in 0..20 {
        let mut round = BTreeSet::new();
        for _ in 0..400 {
            let h = PullMessageRequestHeader {
                consumer_group: "recipe_consumer".into(),
                topic: "RecipeTopic".into(),
                queue_id: 0,
                queue_offset: 0,
                max_msg_nums: 32,
                // SUBSCRIPTION: the expression travels in the pull (no heartbeat needed).
                sys_flag: 4,
                commit_offset: 0,
                suspend_timeout_millis: 0,
                subscription: Some("*".into()),
                sub_version: 0,
                expression_type: Some("TAG".into()),
                max_msg_bytes: None,
            };
            let pull = RemotingCommand::request(RequestCode::PULL_MESSAGE, 0).with_header(&h);
            round.insert(s.wire.send(pull, ANSWER_TIMEOUT)?);
        }
        pulls += round.len();
        let want: Vec<i32> = round.into_iter().collect();
        let answers = s.answers(&want)?;
        expired.extend(
            answers
                .into_iter()
                .filter(|(_, r)| r.code == 2 && remark(r).starts_with(TIMEOUT))
                .map(|(o, r)| (format!("pull {o}"), r.code, remark(&r))),
        );
        if !expired.is_empty() {
            break;
        }
    }
    let n = expired.len();
    Ok(Check {
        kept: n > 0,
        answers: expired,
        detail: format!("{n} of {pulls} pulls expired in the pull queue"),
    })
}

fn pc_synchronized(s: &mut Session) -> anyhow::Result<Check> {
    let x = s.send("X", true, b"X")?;
    // X must take the put lock first: if A wins it, no send thread is ever blocked on a flush
    // while another put stalls, and C is simply stored.
    s.wait_lock_held_longer_than(0)?;
    let a = s.send("A", false, b"A")?;
    let c = s.send("C", false, b"C")?;
    let answers = s.answers(&[x, a, c])?;
    let label = |o: i32| {
        if o == x {
            "X".to_owned()
        } else if o == a {
            "A".to_owned()
        } else {
            "C".to_owned()
        }
    };
    let rc = &answers[&c];
    Ok(Check {
        kept: answers[&x].code == 0
            && answers[&a].code == 0
            && rc.code == 1
            && remark(rc) == PC_SYNCHRONIZED,
        answers: listed(&answers, label),
        detail: "C became runnable while A had held the put lock for more than 1000 ms".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_findable() {
        let names: BTreeSet<&str> = RECIPES.iter().map(|r| r.name).collect();
        assert_eq!(names.len(), RECIPES.len());
        assert!(find("pc-synchronized").is_some());
        assert!(find("pc-synchronised").is_none());
        assert!(unknown("pc-synchronised").contains("did you mean `pc-synchronized`"));
        assert!(!unknown("zzz").contains("did you mean"));
    }

    #[test]
    fn period_in_queue_is_read_from_fast_failure_remarks() {
        let r = format!("{TIMEOUT}, period in queue: 123ms, size of queue: 2");
        assert_eq!(period_in_queue(&r), Some(123));
        assert_eq!(period_in_queue(OVERLOAD), None);
    }
}
