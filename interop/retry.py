"""The `retry` scenario: a concurrent push consumer whose listener fails (RECONSUME_LATER) the
first delivery of each message. The client sends each failure back (CONSUMER_SEND_MSG_BACK,
36); the broker answers 0 and stores it in `%RETRY%<group>` through its delay level; the
message comes back no earlier than that level's delay after the send-back.
"""
import os
import sys
import threading
import time

from scenario import Ledger, Verdict, body

CONSUMER_SEND_MSG_BACK = 36
# Whole seconds so the scenario stays short; 18 levels as RocketMQ's default has.
DELAY_LEVELS = [f"{i}s" for i in range(1, 19)]
MESSAGE_DELAY_LEVEL = "messageDelayLevel=" + " ".join(DELAY_LEVELS)
FIRST_TIMEOUT = 60.0
# The longest level a first failure can be given is 18 s here; its redelivery has this long.
AGAIN_TIMEOUT = 60.0


def level_delay(level):
    """The delay (s) of a delay level under MESSAGE_DELAY_LEVEL (levels above the last use
    the last, as ScheduleMessageService does)."""
    level = max(1, min(level, len(DELAY_LEVELS)))
    return int(DELAY_LEVELS[level - 1][:-1])


def expected_level(ext, reconsume_times):
    """The delay level the broker gives a send-back (SendMessageProcessor: a header's
    delayLevel 0 means 3 + the record's reconsume times)."""
    delay = int(ext.get("delayLevel", "0"))
    return 3 + reconsume_times if delay == 0 else delay


class RetryLedger(Ledger):
    """The ledger plus every delivery: (monotonic time, reconsume times, commit-log offset,
    failed), by body. `deliver` decides (the first delivery of a body fails); `reported`
    records what a client that decides itself reported."""

    def __init__(self):
        super().__init__()
        self.deliveries = {}
        self.dlock = threading.Lock()

    def deliver(self, text, reconsume_times, offset):
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        with self.dlock:
            fail = text not in self.deliveries
        self.reported(text, reconsume_times, offset, fail)
        return fail

    def reported(self, text, reconsume_times, offset, failed):
        with self.dlock:
            self.deliveries.setdefault(text, []).append(
                (time.monotonic(), reconsume_times, offset, failed))
        self.record(text)

    def wait_again(self, bodies, timeout):
        """Waits until each body was delivered at least twice; the bodies that were not."""
        end = time.monotonic() + timeout
        while True:
            with self.dlock:
                short = [b for b in bodies if len(self.deliveries.get(b, ())) < 2]
            if not short or time.monotonic() > end:
                return short
            time.sleep(0.2)

    def snapshot(self):
        with self.dlock:
            return {b: list(d) for b, d in self.deliveries.items()}


def retry_after_delay(client, cluster, n=40):
    v = Verdict("retry-send-back+delayed-redelivery")
    topic, group = "InteropRetry", "RetryGroup"
    p = client.producer(cluster, "RetryProducer")
    sent, ok = [], 0
    for i in range(n):
        b = body("retry", i % 10, i)
        ok += p.send("sync", topic, i, b)[0]
        sent.append(b)
    p.shutdown()
    ledger = RetryLedger()
    c = client.consumer(cluster, group, topic, ledger, fail_first=True)
    missing = ledger.wait_for(sent, FIRST_TIMEOUT)
    short = ledger.wait_again(sent, AGAIN_TIMEOUT)
    # A moment for a stray third delivery (a redelivery that failed) to show.
    time.sleep(1.0)
    c.shutdown()
    seen = ledger.snapshot()
    backs = [w for w in cluster.broker_proxy.watched_requests()
             if w["code"] == CONSUMER_SEND_MSG_BACK]
    if os.environ.get("INTEROP_RETRY_DUMP"):
        # The raw timeline (INTEROP_RETRY_DUMP=1): each send-back and each delivery.
        for w in backs:
            print(f"36 at={w['at']:.3f} answer={w['answer']} ext={w['ext']}", file=sys.stderr)
        for b, d in sorted(seen.items()):
            print(b, [(round(t, 3), rt, off, f) for t, rt, off, f in d], file=sys.stderr)
    failed = {b for b, d in seen.items() if any(f for _, _, _, f in d)}
    first_failed = {b for b, d in seen.items() if d[0][3]}
    again = {b for b, d in seen.items() if len(d) >= 2}
    by_offset = {d[0][2]: b for b, d in seen.items()}
    answers = {}
    for w in backs:
        answers[w["answer"]] = answers.get(w["answer"], 0) + 1
    # Each send-back against the message it names (header `offset`, the commit-log offset
    # of the failed delivery) and the message's next delivery after it.
    delays, early, unmatched, levels, header_delay = [], [], 0, {}, {}
    for w in backs:
        b = by_offset.get(int(w["ext"].get("offset", "-1")))
        if b is None:
            unmatched += 1
            continue
        d = seen[b]
        # The failed delivery the send-back names; the delivery after it is the message
        # coming back. (Its time on our side can trail the send-back on the wire: the Rust
        # adapter's line is read after the client already sent 36.)
        i = next(i for i, (_, _, off, _) in enumerate(d) if off == int(w["ext"]["offset"]))
        times = d[i][1]
        level = expected_level(w["ext"], times)
        levels[level] = levels.get(level, 0) + 1
        hd = w["ext"].get("delayLevel", "absent")
        header_delay[hd] = header_delay.get(hd, 0) + 1
        if i + 1 >= len(d):
            continue
        took = d[i + 1][0] - w["at"]
        delays.append(took)
        if took < level_delay(level):
            early.append((b, round(took, 2), level))
    redelivered_times = [rt for d in seen.values() for _, rt, _, _ in d[1:]]
    v.note(sent=n, send_ok=ok, first_delivered=n - len(missing), failed=len(failed),
           redelivered=len(again), never_back=len(short), send_back_requests=len(backs),
           send_back_answers=dict(sorted(answers.items(), key=str)),
           header_delay_level=header_delay, expected_levels=levels,
           unmatched_send_backs=unmatched,
           delay_s=(f"{min(delays):.2f}..{max(delays):.2f}" if delays else "none"),
           redelivered_reconsume_times=(f"{min(redelivered_times)}..{max(redelivered_times)}"
                                        if redelivered_times else "none"))
    v.require(ok == n, f"{n - ok} sends failed")
    v.require(not missing, f"{len(missing)} messages never delivered")
    v.require(first_failed == set(sent), f"{n - len(first_failed)} first deliveries not failed")
    v.require(failed == first_failed, f"{len(failed - first_failed)} redeliveries failed too")
    v.require(again == failed, f"delivered again: {len(again)}, failed: {len(failed)}; "
              f"never back: {short[:3]}")
    # One 36 per failure at least. The Rust client sometimes sends one more for a retry record
    # its listener never saw (measured: 5 of 16 runs, 1-4 extra); that is the client's doing,
    # so extra send-backs are counted, not failed, as long as each is answered 0 and its
    # message still keeps its level's delay.
    v.note(extra_send_backs=max(0, len(backs) - len(failed)))
    v.require(answers.get(0, 0) >= len(failed),
              f"send-backs answered 0: {answers.get(0, 0)}, failures: {len(failed)}")
    v.require(set(answers) <= {0}, f"send-backs answered other than 0: {answers}")
    extra = max(0, len(backs) - len(failed))
    v.require(unmatched <= extra,
              f"{unmatched} send-backs name no delivered message's offset ({extra} extra)")
    v.require(not early, f"{len(early)} came back before their level's delay, e.g. {early[:3]}")
    v.require(all(t >= 1 for t in redelivered_times),
              f"redelivered with reconsumeTimes {sorted(set(redelivered_times))}")
    return v
