#!/usr/bin/env python3
"""Regenerates the synthetic fixtures of harness/tests/compare_*.rs (deterministic).

Run from this directory: python3 gen.py. The numbers are invented but shaped like real
runs: two broker axes, noisy latencies, busy responses only in the spin-lock cells.
"""
import csv
import math
import os
import random

SUMMARY = ("profile,cell_id,repetition,step,{params}target_rate,achieved_rate,ok_rate,duration_s,sent,ok,"
           "busy,busy_rate,busy_pcbusy_clean_queue,busy_timeout_clean_queue,busy_rejectrequest,busy_overload,"
           "busy_pc_synchronized,busy_other,system_error,flush_disk_timeout,message_illegal,other_codes,timeouts,"
           "dropped,connection_errors,attempts,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,service_p50_ms,service_p99_ms,"
           "service_max_ms,lag_p50_us,lag_p99_us,lag_max_us,busy_p99_ms,period_in_queue_p50_ms,"
           "period_in_queue_max_ms,size_of_queue_max,broker_cpu_avg,broker_cpu_max,broker_rss_max_mb,"
           "harness_cpu_max,broker_flow_control_total,broker_counters_match,valid,invalid_reason")
SERIES = ("profile,cell_id,repetition,step,second,phase,target_rate,achieved_rate,ok,busy,busy_pcbusy_clean_queue,"
          "busy_timeout_clean_queue,busy_rejectrequest,busy_overload,busy_pc_synchronized,busy_other,errors,"
          "timeouts,dropped,p50_ms,p99_ms,max_ms,broker_cpu,broker_rss_mb,harness_cpu,send_queue_size,"
          "send_queue_head_wait_ms,page_cache_lock_ms")
LOCK = "broker.useReentrantLockWhenPutMessage"
THREADS = "broker.sendMessageThreadPoolNums"
CELLS = [("false", "1"), ("false", "4"), ("true", "1"), ("true", "4")]


def summary_row(rng, cell_id, rep, lock, threads, p99_scale=1.0, busy_scale=1.0, valid=True, reason=""):
    target, dur = 2000.0, 30.0
    sent = int(target * dur)
    busy_rate = (0.002 if lock == "true" else 0.0) * busy_scale * (1 + 0.1 * rng.gauss(0, 1))
    busy = max(0, round(busy_rate * sent))
    pc = round(busy * 0.7)
    tq = busy - pc
    timeouts = rng.choice([0, 0, 0, 1])
    ok = sent - busy - timeouts
    achieved = target * (1 - 0.004 * abs(rng.gauss(0, 1)))
    base99 = 12.0 if threads == "1" else 9.0
    p99 = base99 * p99_scale * (1 + 0.06 * rng.gauss(0, 1))
    p50 = 2.0 * (1 + 0.05 * rng.gauss(0, 1))
    cpu = 55 + 3 * rng.gauss(0, 1)
    return {
        "target_rate": target, "achieved_rate": round(achieved, 2), "ok_rate": round(ok / dur, 2),
        "duration_s": dur, "sent": sent, "ok": ok, "busy": busy, "busy_rate": round(busy / sent, 6),
        "busy_pcbusy_clean_queue": pc, "busy_timeout_clean_queue": tq, "busy_rejectrequest": 0,
        "busy_overload": 0, "busy_pc_synchronized": 0, "busy_other": 0, "system_error": 0,
        "flush_disk_timeout": 0, "message_illegal": 0, "other_codes": 0, "timeouts": timeouts,
        "dropped": 0, "connection_errors": 0, "attempts": sent, "p50_ms": round(p50, 3),
        "p90_ms": round(p99 * 0.5, 3), "p99_ms": round(p99, 3), "p999_ms": round(p99 * 2.5, 3),
        "max_ms": round(p99 * 5, 3), "service_p50_ms": round(p50 * 0.9, 3),
        "service_p99_ms": round(p99 * 0.9, 3), "service_max_ms": round(p99 * 4.5, 3),
        "lag_p50_us": 40, "lag_p99_us": 300, "lag_max_us": 2500, "busy_p99_ms": "" if busy == 0 else 1.5,
        "period_in_queue_p50_ms": "" if busy == 0 else 210, "period_in_queue_max_ms": "" if busy == 0 else 260,
        "size_of_queue_max": "" if busy == 0 else 9000, "broker_cpu_avg": round(cpu, 2),
        "broker_cpu_max": round(cpu + 20, 2), "broker_rss_max_mb": 512, "harness_cpu_max": 35,
        "broker_flow_control_total": busy, "broker_counters_match": "true",
        "valid": "true" if valid else "false", "invalid_reason": reason,
    }


def write_summary(folder, rows, extra=False):
    os.makedirs(folder, exist_ok=True)
    header = SUMMARY.format(params=f"param_{LOCK},param_{THREADS},").split(",")
    if extra:
        header.append("git_sha")
    with open(os.path.join(folder, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            r.setdefault("git_sha", "3f2a9c1")
            w.writerow([r.get(h, "") for h in header])


def multi_rep(folder, seed, reps, p99_scale=1.0, busy_scale=1.0, invalid=None, extra=False):
    rng = random.Random(seed)
    rows = []
    for rep in range(1, reps + 1):
        for i, (lock, threads) in enumerate(CELLS):
            cell = f"c{i}"
            bad = invalid == (cell, rep)
            r = summary_row(rng, cell, rep, lock, threads, p99_scale, busy_scale,
                            valid=not bad, reason="harness_cpu_max 97% > 90%" if bad else "")
            r.update({"profile": "fixture", "cell_id": cell, "repetition": rep, "step": "",
                      f"param_{LOCK}": lock, f"param_{THREADS}": threads})
            rows.append(r)
    write_summary(folder, rows, extra)


WAIT = "broker.waitTimeMillsInSendQueue"


def smoke(folder, seed, p99_scale=1.0, busy_scale=1.0, busy_in_clean=0):
    """Shaped like profiles/smoke.toml: one repetition, a put stall, waitTimeMillsInSendQueue
    200 (requests time out in the send queue: TIMEOUT_CLEAN_QUEUE) vs 3000 (no busy).
    summary.csv is computed from the per-second rows, as `harness run` does."""
    rng = random.Random(seed)
    rows, secs = [], []
    for i, wait in enumerate(["200", "3000"]):
        cell = f"c{i}"
        ar = 0.0
        base99 = 40.0 if wait == "200" else 25.0
        tot = {"ok": 0, "busy": 0, "tq": 0}
        p99s, p50s, cpus, rates = [], [], [], []
        for s in range(25):
            ar = 0.6 * ar + rng.gauss(0, 1)  # autocorrelated, like a stall spanning seconds
            if wait == "200":
                busy = max(0, round(20 * busy_scale + 5 * rng.gauss(0, 1)))
            else:
                busy = busy_in_clean if s == 12 else 0
            ok = 1000 - busy
            p50 = round(2.0 + 0.1 * rng.gauss(0, 1), 3)
            p99 = round(base99 * p99_scale * (1 + 0.08 * ar), 3)
            cpu = round(45 + 3 * rng.gauss(0, 1), 2)
            rate = round(1000 + 5 * rng.gauss(0, 1), 1)
            phase = "warmup" if s < 5 else "measure"
            secs.append(["smoke", cell, 1, "", s, phase, 1000, rate, ok, busy, 0, busy, 0, 0, 0, 0,
                         0, 0, 0, p50, p99, round(p99 * 3, 3), cpu, 300, 25, 50, 150.0, 0.2])
            if phase == "measure":
                tot["ok"] += ok
                tot["busy"] += busy
                p99s.append(p99)
                p50s.append(p50)
                cpus.append(cpu)
                rates.append(rate)
        sent = tot["ok"] + tot["busy"]
        med = lambda v: sorted(v)[len(v) // 2]
        r = {
            "profile": "smoke", "cell_id": cell, "repetition": 1, "step": "", f"param_{WAIT}": wait,
            "target_rate": 1000, "achieved_rate": round(sum(rates) / len(rates), 2),
            "ok_rate": round(tot["ok"] / 20, 2), "duration_s": 20, "sent": sent, "ok": tot["ok"],
            "busy": tot["busy"], "busy_rate": round(tot["busy"] / sent, 6),
            "busy_pcbusy_clean_queue": 0, "busy_timeout_clean_queue": tot["busy"],
            "busy_rejectrequest": 0, "busy_overload": 0, "busy_pc_synchronized": 0, "busy_other": 0,
            "system_error": 0, "flush_disk_timeout": 0, "message_illegal": 0, "other_codes": 0,
            "timeouts": 0, "dropped": 0, "connection_errors": 0, "attempts": sent,
            "p50_ms": med(p50s), "p90_ms": round(med(p99s) / 2, 3), "p99_ms": med(p99s),
            "p999_ms": round(max(p99s) * 1.5, 3), "max_ms": round(max(p99s) * 3, 3),
            "service_p50_ms": med(p50s), "service_p99_ms": med(p99s), "service_max_ms": max(p99s),
            "lag_p50_us": 40, "lag_p99_us": 400, "lag_max_us": 3000,
            "busy_p99_ms": 1.2 if tot["busy"] else "", "period_in_queue_p50_ms": 201 if tot["busy"] else "",
            "period_in_queue_max_ms": 230 if tot["busy"] else "", "size_of_queue_max": 400 if tot["busy"] else "",
            "broker_cpu_avg": round(sum(cpus) / len(cpus), 2), "broker_cpu_max": max(cpus),
            "broker_rss_max_mb": 300, "harness_cpu_max": 30, "broker_flow_control_total": tot["busy"],
            "broker_counters_match": "true", "valid": "true", "invalid_reason": "",
        }
        rows.append(r)
    os.makedirs(folder, exist_ok=True)
    header = SUMMARY.format(params=f"param_{WAIT},").split(",")
    with open(os.path.join(folder, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow([r.get(h, "") for h in header])
    with open(os.path.join(folder, "timeseries.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(SERIES.split(","))
        w.writerows(secs)


if __name__ == "__main__":
    multi_rep("base", 1, 5, extra=True)
    multi_rep("cand-same", 2, 5)
    multi_rep("cand-worse", 3, 5, p99_scale=1.3, busy_scale=3.0)
    multi_rep("cand-invalid", 4, 5, invalid=("c1", 2))
    multi_rep("base3", 5, 3)
    multi_rep("cand3-worse", 6, 3, p99_scale=1.3)
    smoke("smoke-base", 7)
    smoke("smoke-same", 8)
    smoke("smoke-slower", 9, p99_scale=1.5)
    smoke("smoke-broken", 10, busy_in_clean=3)
    os.makedirs("bad-number", exist_ok=True)
    with open("base/summary.csv") as src, open("bad-number/summary.csv", "w") as dst:
        lines = src.read().splitlines()
        cols = lines[3].split(",")
        cols[lines[0].split(",").index("p99_ms")] = "12ms"
        lines[3] = ",".join(cols)
        dst.write("\n".join(lines) + "\n")
    os.makedirs("missing-column", exist_ok=True)
    with open("base/summary.csv") as src, open("missing-column/summary.csv", "w") as dst:
        rows = list(csv.reader(src))
        k = rows[0].index("repetition")
        for r in rows:
            del r[k]
        csv.writer(dst, lineterminator="\n").writerows(rows)
