"""The interop scenarios, the same for every real client, against our broker and name server
on 127.0.0.1, or Apache RocketMQ's (--broker apache-5.3.3); each scenario gets a fresh name
server and broker.

A client is an adapter (cpp_client.py: Apache's C++ client from the PyPI wheel `rocketmq`
0.4.4; rust_client.py: the `rocketmq-client-rust` crate; go_client.py: Apache's Go client,
rocketmq-client-go v2) with `producer(cluster, group)` -> `send(mode, topic, key, body) ->
(ok, error)` / `shutdown()`, and `consumer(cluster, group, topic, ledger, orderly)` ->
`shutdown()`. Each scenario is bounded in messages and time and
passes only on numbers: every message received, none lost, order kept per key, committed
offsets kept across a broker restart, code 2 seen on the wire and handled by the client, a
failed delivery sent back (36 answered 0) and delivered again after its delay level (retry.py),
sends signed by the client's own ACL signer stored and wrongly signed ones refused (acl.py).
Usage:
  python scenarios.py --client cpp|rust|java|go --bin target/release [--only NAME]... [--capture DIR]
                      [--broker in-tree|apache-5.3.3|apache-4.9.7 --harness target/release/harness]
  (--client java: --java-version 4.9.8|5.3.3, Apache's Java client under java_client.py;
   --client go: --go-bin, Apache's Go client under go_client.py)
Exit 0 when every scenario passes, 1 otherwise; one line of numbers per scenario.
"""
import argparse
import os
import subprocess
import sys
import threading
import time

from acl import signed_sends
from cluster import Cluster
from rawclient import committed_offset
from retry import MESSAGE_DELAY_LEVEL, retry_after_delay
from scenario import Ledger, Verdict, body

SEND_MESSAGE_V2 = 310
SEND_MESSAGE = 10
HEART_BEAT = 34
UNREGISTER_CLIENT = 35
LOCK_BATCH_MQ = 41
UNLOCK_BATCH_MQ = 42
UPDATE_CONSUMER_OFFSET = 15
SYSTEM_BUSY = 2
PULL_MESSAGE = 11
CONSUMER_SEND_MSG_BACK = 36

CONSUME_TIMEOUT = 60.0
# One scenario's process, start to end (each bounds its own waits well below this).
SCENARIO_TIMEOUT = 300
# Clients commit offsets every 5 s (persistConsumerOffsetInterval).
COMMIT_TIMEOUT = 20.0


def committed_total(cluster, group, topic, queues=16):
    """The sum of the broker's committed offsets of `group` over the topic's queues (each
    queue starts at 0 in a fresh topic, so this is the count of committed messages)."""
    total = 0
    for q in range(queues):
        total += max(0, committed_offset(("127.0.0.1", cluster.broker_port), group, topic, q))
    return total


def wait_committed(cluster, group, topic, n, timeout):
    end = time.monotonic() + timeout
    while True:
        got = committed_total(cluster, group, topic)
        if got >= n or time.monotonic() > end:
            return got
        time.sleep(0.2)


def sends(cluster):
    req, _, _ = cluster.broker_proxy.snapshot()
    return req[SEND_MESSAGE_V2] + req[SEND_MESSAGE]


def sync_send_and_concurrent_push(client, cluster, n=300):
    v = Verdict("sync-send+concurrent-push")
    topic, group = "InteropSync", "SyncGroup"
    p = client.producer(cluster, "SyncProducer")
    sent, ok, errors = [], 0, []
    for i in range(n):
        b = body("sync", i % 10, i)
        good, err = p.send("sync", topic, i, b)
        ok += good
        if err:
            errors.append(err)
        sent.append(b)
    p.shutdown()
    ledger = Ledger()
    c = client.consumer(cluster, group, topic, ledger)
    missing = ledger.wait_for(sent, CONSUME_TIMEOUT)
    c.shutdown()
    v.note(sent=n, send_ok=ok, received=ledger.distinct(sent), lost=len(missing),
           duplicates=ledger.duplicates(sent))
    v.require(ok == n, f"{n - ok} sync sends failed, e.g. {errors[:1]}")
    v.require(not missing, f"{len(missing)} messages never consumed, e.g. {missing[:3]}")
    return v


def oneway_send(client, cluster, n=300):
    v = Verdict("oneway-send+push")
    topic, group = "InteropOneway", "OnewayGroup"
    ledger = Ledger()
    p = client.producer(cluster, "OnewayProducer")
    # Creates the topic (and its route) first: a oneway send has no answer to wait for.
    first = body("oneway", "first", 0)
    p.send("sync", topic, 0, first)
    sent = [first]
    before = sends(cluster)
    for i in range(1, n):
        b = body("oneway", i % 10, i)
        p.send("oneway", topic, i, b)
        sent.append(b)
    c = client.consumer(cluster, group, topic, ledger)
    missing = ledger.wait_for(sent, CONSUME_TIMEOUT)
    c.shutdown()
    p.shutdown()
    v.note(sent=n, oneway_on_wire=sends(cluster) - before, received=ledger.distinct(sent),
           lost=len(missing))
    v.require(not missing, f"{len(missing)} oneway messages never consumed")
    return v


def orderly(client, cluster, keys=8, per_key=40):
    v = Verdict("orderly-send+orderly-push")
    topic, group = "InteropOrderly", "OrderlyGroup"
    ledger = Ledger()
    p = client.producer(cluster, "OrderlyProducer")
    sent, ok = [], 0
    for seq in range(per_key):
        for k in range(keys):
            b = body("orderly", f"k{k}", seq)
            ok += p.send("orderly", topic, k, b)[0]
            sent.append(b)
    p.shutdown()
    c = client.consumer(cluster, group, topic, ledger, orderly=True)
    missing = ledger.wait_for(sent, CONSUME_TIMEOUT)
    c.shutdown()
    bad = ledger.order_violations()
    req, _, _ = cluster.broker_proxy.snapshot()
    v.note(sent=len(sent), send_ok=ok, received=ledger.distinct(sent), lost=len(missing),
           keys_out_of_order=len(bad), lock_batch_calls=req[LOCK_BATCH_MQ])
    v.require(ok == len(sent), "orderly sends failed")
    v.require(not missing, f"{len(missing)} messages never consumed")
    v.require(not bad, f"order broken for keys {bad}")
    v.require(req[LOCK_BATCH_MQ] > 0, "the orderly consumer never locked a queue")
    return v


def restart_keeps_offsets(client, cluster, n=200, max_duplicates=20):
    """Consume batch A and let the consumer commit; restart the broker (clean stop); send
    batch B; a new consumer of the group must get all of B and at most `max_duplicates` of A.
    A consumer of another group, running throughout, must get all of A and B."""
    v = Verdict("broker-restart-committed-offsets")
    topic, group = "InteropRestart", "RestartGroup"
    p = client.producer(cluster, "RestartProducer")
    batch_a = [body("restart", "a", i) for i in range(n)]
    for i, b in enumerate(batch_a):
        p.send("sync", topic, i, b)
    # A second group's consumer stays up through the restart: the client reconnects on its own.
    live = Ledger()
    c_live = client.consumer(cluster, "RestartLiveGroup", topic, live)
    ledger = Ledger()
    c = client.consumer(cluster, group, topic, ledger)
    missing_a = ledger.wait_for(batch_a, CONSUME_TIMEOUT)
    # The client commits what it has consumed (periodically and at shutdown): wait until the
    # broker holds all of batch A as committed, then stop the consumer.
    committed = wait_committed(cluster, group, topic, n, COMMIT_TIMEOUT)
    c.shutdown()
    req, _, _ = cluster.broker_proxy.snapshot()
    commits = req[UPDATE_CONSUMER_OFFSET]
    cluster.restart_broker()
    kept = committed_total(cluster, group, topic)
    batch_b = [body("restart", "b", i) for i in range(n)]
    ok_b, errors = 0, []
    for i, b in enumerate(batch_b):
        good, err = p.send("sync", topic, i, b)
        ok_b += good
        if err:
            errors.append(err)
    p.shutdown()
    after = Ledger()
    c2 = client.consumer(cluster, group, topic, after)
    missing_b = after.wait_for(batch_b, CONSUME_TIMEOUT)
    c2.shutdown()
    live_missing = live.wait_for(batch_a + batch_b, CONSUME_TIMEOUT)
    c_live.shutdown()
    dup_a = after.distinct(batch_a)
    v.note(sent=2 * n, batch_a_received=n - len(missing_a), offset_commits=commits,
           committed_before_restart=committed, committed_after_restart=kept,
           batch_b_send_ok=ok_b, batch_b_received=after.distinct(batch_b),
           batch_a_redelivered_after_restart=dup_a,
           live_consumer_received=live.distinct(batch_a + batch_b),
           live_consumer_duplicates=live.duplicates(batch_a + batch_b))
    req, resp, _ = cluster.broker_proxy.snapshot()
    pulls = sorted((code, k) for (r, code), k in resp.items() if r == PULL_MESSAGE)
    v.note(pull_answers=dict(pulls), send_back_requests=req[CONSUMER_SEND_MSG_BACK])
    v.require(not missing_a, f"{len(missing_a)} of batch A never consumed")
    v.require(committed == n, f"the broker holds {committed} of {n} as committed")
    v.require(kept == committed, f"committed offsets {committed} became {kept} in the restart")
    v.require(ok_b == n, f"{n - ok_b} of batch B not acknowledged, e.g. {errors[:1]}")
    v.require(not missing_b, f"{len(missing_b)} of batch B lost after the restart")
    v.require(dup_a <= max_duplicates, f"{dup_a} of batch A consumed again (offsets lost)")
    v.require(not live_missing,
              f"the consumer that lived through the restart missed {len(live_missing)}")
    return v


def busy_broker(client, cluster, threads=4, per_thread=10):
    """A broker whose every append takes 250 ms: concurrent senders queue past
    waitTimeMillsInSendQueue (200 ms) and get code 2; the client sees it (retries or fails
    the send), and every acknowledged message is consumed."""
    v = Verdict("busy-broker-code-2")
    topic, group = "InteropBusy", "BusyGroup"
    warm = client.producer(cluster, "BusyWarm")
    warm.send("sync", topic, 0, body("busy", "warm", 0))
    warm.shutdown()
    acked, failed, errors = [], [], []
    lock = threading.Lock()

    # Created and shut down one at a time on this thread (the C++ client aborts when producers
    # start concurrently); only the sends run in parallel.
    producers = [client.producer(cluster, f"BusyProducer{t}") for t in range(threads)]

    def send_all(t):
        p = producers[t]
        for i in range(per_thread):
            b = body("busy", f"t{t}", i)
            good, err = p.send("sync", topic, i, b)
            with lock:
                (acked if good else failed).append(b)
                if err:
                    errors.append(err[:120])

    workers = [threading.Thread(target=send_all, args=(t,), name=f"busy-sender-{t}")
               for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(180)
    for p in producers:
        p.shutdown()
    ledger = Ledger()
    c = client.consumer(cluster, group, topic, ledger)
    missing = ledger.wait_for(acked, CONSUME_TIMEOUT)
    c.shutdown()
    req, resp, remarks = cluster.broker_proxy.snapshot()
    busy = sum(n for (r, code), n in resp.items() if r in (SEND_MESSAGE, SEND_MESSAGE_V2)
               and code == SYSTEM_BUSY)
    attempts = req[SEND_MESSAGE] + req[SEND_MESSAGE_V2] - 1
    v.note(messages=threads * per_thread, acked=len(acked), failed=len(failed),
           send_attempts=attempts, code2_answers=busy, received=ledger.distinct(acked),
           lost=len(missing))
    answers = {}
    for (r, code), k in resp.items():
        if r in (SEND_MESSAGE, SEND_MESSAGE_V2):
            answers[code] = answers.get(code, 0) + k
    # Answers whose opaque matched no open request: Apache 5.3.3 with asyncSendEnable=false
    # answers each stored send twice, 0 and then code 1 with a NullPointerException remark
    # (SendMessageProcessor:358-361 counts transaction metrics under a null REAL_TOPIC after
    # handlePutMessageResult already answered); the client drops the second answer.
    unpaired = sum(k for (r, _), k in resp.items() if r is None)
    v.note(send_answers=dict(sorted(answers.items(), key=str)), unpaired_answers=unpaired)
    if remarks:
        v.note(top_remark=repr(remarks.most_common(1)[0][0][:40]))
    if errors:
        v.note(client_error=repr(errors[0][:80]))
    v.require(busy > 0, "the broker never answered code 2")
    v.require(len(acked) + len(failed) == threads * per_thread, "a send neither acked nor failed")
    v.require(attempts > len(acked), "no retry or failure followed a code 2")
    v.require(not missing, f"{len(missing)} acknowledged messages never consumed")
    return v


# name -> (function, extra broker keys)
SCENARIOS = {
    "sync": (sync_send_and_concurrent_push, []),
    "oneway": (oneway_send, []),
    "orderly": (orderly, []),
    "restart": (restart_keeps_offsets, []),
    "busy": (busy_broker, ["injectAppendDelayMicros=250000"]),
    "retry": (retry_after_delay, [MESSAGE_DELAY_LEVEL]),
    "acl": (signed_sends, []),
}

# On Apache's broker (--broker apache-<version>) a scenario's keys are these instead: the
# broker-under-test-only key injectAppendDelayMicros does not exist there.
# busy, by real means: one send thread (sendMessageThreadPoolNums=1) that holds each send until
# the disk flush is done (asyncSendEnable=false puts through DefaultMessageStore.putMessage, which
# waits for the put future; SYNC_FLUSH completes it after GroupCommitService's force()), so the
# concurrent senders' requests queue behind the flushes, and BrokerFastFailure's 10-ms scan
# answers code 2 [TIMEOUT_CLEAN_QUEUE] to each head that waited waitTimeMillsInSendQueue
# (rocketmq-all-5.3.3 SendMessageProcessor:323, BrokerFastFailure.cleanExpiredRequestInQueue).
APACHE_SETS = {
    "busy": ["sendMessageThreadPoolNums=1", "asyncSendEnable=false", "flushDiskType=SYNC_FLUSH",
             "waitTimeMillsInSendQueue=1"],
}

# Scenarios left out of a client's full run (still run by `--only NAME`), with the reason.
# The C++ client (0.4.4's librocketmq) fails `retry`: it consumes a pulled batch in one listener
# call and sends the whole batch back at the first RECONSUME_LATER, sends 36 straight to the
# record's store host (the broker's own port, not through the recording proxy), and drops a
# message whose send-back fails (see docs/src/interop.md).
KNOWN_FAILING = {
    "cpp": {"retry": "send-back bypasses the proxy and fails whole batches; run --only retry"},
    # The prebuilt interop binary sets no credentials (interop/rust-client/src): rebuilding it
    # with the crate's AclClientRPCHook is slow, so the scenario is the C++ client's only.
    "rust": {"acl": "the interop binary is built without ACL credentials"},
}

CAPTURED = (HEART_BEAT, UNREGISTER_CLIENT, LOCK_BATCH_MQ, UNLOCK_BATCH_MQ)


def make_client(name, args):
    if name == "java":
        from java_client import JavaClient
        return JavaClient(args.java_version)
    if name == "cpp":
        from cpp_client import CppClient
        return CppClient()
    if name == "go":
        from go_client import GoClient
        return GoClient(args.go_bin)
    from rust_client import RustClient
    return RustClient(args.rust_bin)


def run_isolated(args, names):
    """Runs each scenario in a child process of its own: a client library's global state (the
    C++ client aborts in a later scenario once several consumers were destroyed in one process)
    must not decide another scenario's verdict."""
    failed = []
    for name in names:
        argv = [sys.executable, os.path.abspath(__file__), "--client", args.client,
                "--bin", args.bin, "--only", name]
        if args.rust_bin:
            argv += ["--rust-bin", args.rust_bin]
        if args.client == "java":
            argv += ["--java-version", args.java_version]
        if args.go_bin:
            argv += ["--go-bin", args.go_bin]
        if args.broker != "in-tree":
            argv += ["--broker", args.broker, "--harness", args.harness]
        if args.capture:
            argv += ["--capture", args.capture]
        try:
            rc = subprocess.run(argv, timeout=SCENARIO_TIMEOUT).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        if rc != 0:
            if rc not in (0, 1):
                print(f"[{args.client}] FAIL {name}: the scenario process ended with {rc}")
            failed.append(name)
    print(f"[{args.client}] {len(names) - len(failed)} of {len(names)} scenarios passed"
          + (f"; failed: {', '.join(failed)}" if failed else "")
          + known_failures_note(args), flush=True)
    return 1 if failed else 0


def known_failures_note(args):
    """The scenarios a full run of this client leaves out, named on its verdict line: a run
    that passes without them must say so where the pass is read, not only in a line above."""
    skipped = {} if args.only else KNOWN_FAILING.get(args.client, {})
    return "".join(f"; NOT RUN (known client failure): {name} ({why})"
                   for name, why in skipped.items())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--client", choices=["cpp", "rust", "java", "go"], required=True)
    ap.add_argument("--bin", required=True, help="folder of broker-under-test and name-server")
    ap.add_argument("--rust-bin", help="the interop-rust-client binary (--client rust)")
    ap.add_argument("--go-bin", help="the interop-go-client binary (--client go)")
    ap.add_argument("--java-version", default="4.9.8",
                    help="rocketmq-client version pinned in interop/java/<version> (--client java)")
    ap.add_argument("--broker", default="in-tree", choices=["in-tree", "apache-5.3.3", "apache-4.9.7"],
                    help="in-tree: our broker and name server from --bin; apache-<version>: "
                    "Apache's JVMs through `harness serve` (apache_cluster.py)")
    ap.add_argument("--harness", help="the harness binary (--broker apache-*; default BIN/harness)")
    ap.add_argument("--only", action="append", choices=sorted(SCENARIOS))
    ap.add_argument("--capture", help="write the captured request bodies into this folder")
    args = ap.parse_args()
    args.harness = args.harness or os.path.join(args.bin, "harness")
    skipped = KNOWN_FAILING.get(args.client, {})
    names = args.only or [n for n in SCENARIOS if n not in skipped]
    if not args.only:
        for name, why in skipped.items():
            print(f"[{args.client}] NOT RUN (known client failure) {name}: {why}", flush=True)
    if len(names) > 1:
        return run_isolated(args, names)
    client = make_client(args.client, args)
    name = names[0]
    fn, sets = SCENARIOS[name]
    if args.broker == "in-tree":
        cluster = Cluster(args.bin, broker_sets=sets, capture=CAPTURED,
                          watch=(CONSUMER_SEND_MSG_BACK,))
    else:
        from apache_cluster import ApacheCluster
        cluster = ApacheCluster(args.harness, args.broker, broker_sets=APACHE_SETS.get(name, sets),
                                capture=CAPTURED, watch=(CONSUMER_SEND_MSG_BACK,))
    try:
        v = fn(client, cluster)
    except Exception as e:  # noqa: BLE001 (a scenario that crashes fails, with its reason)
        v = Verdict(name)
        v.require(False, f"{type(e).__name__}: {e}")
    finally:
        if args.capture:
            from capture import write_bodies
            write_bodies(cluster.broker_proxy, args.capture, name)
        cluster.close()
    where = "" if args.broker == "in-tree" else f" on {args.broker}"
    print(f"[{args.client}{where}] {v.line()}", flush=True)
    return 0 if v.passed else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
