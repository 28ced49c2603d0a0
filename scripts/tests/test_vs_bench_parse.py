"""Tests of scripts/vs_bench_parse.py, the parsing and table code of `make vs-rocketmq-bench`.

Run: python3 -m unittest discover -s scripts/tests (part of `make lint`). The fixtures are lines
RocketMQ's benchmark producer printed, each labelled with where it came from.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import vs_bench_parse as p  # noqa: E402

# rocketmq-example 5.5.0 (bench-tool/5.5.0), -ri 1000, against broker-under-test: printed in
# results/vs-rocketmq-bench/20261204T185348Z/in-tree-bench-5.5.0-2.log
V5_LINE = "Current Time: 2026-12-04 18:55:09,478 | Send TPS: 1283 | Max RT(ms): 3003 | Average RT(ms):  18.958 | Send Failed: 43 | Response Failed: 0"
# 5.x's end line, written from its format string (Producer.java l.393, 5.3.3 tag; the 5.5.0 jar
# holds the same): the driver stops the producer by SIGTERM, so no run printed one
V5_DONE = "[Complete] Send Total: 1000 | Send TPS: 98 | Max RT(ms): 7 | Average RT(ms):     NaN | Send Failed: 1 | Response Failed: 2"
# rocketmq-example 4.7.0 (bench-tool/4.7.0) against Apache 5.3.3: printed in the same run's
# apache-5.3.3-bench-4.7.0-2.log
V4_LINE = "Send TPS: 1015 Max RT: 3000 Average RT:  48.211 Send Failed: 18 Response Failed: 0"
# 5.5.0's banner (in-tree-bench-5.5.0-1.log), not a report line
V5_BANNER = "topic: BenchmarkTest, threadCount: 64, messageSize: 128, keyEnable: false, propertySize: 0, tagCount: 0, traceEnable: false, aclEnable: false, messageQuantity: 0, delayEnable: false, delayLevel: 1, asyncEnable: false"


class ParseLine(unittest.TestCase):
    def test_v5_interval_line(self):
        line = p.parse_bench_line(V5_LINE)
        self.assertEqual((line.tps, line.max_rt_ms, line.avg_rt_ms, line.send_failed, line.response_failed),
                         (1283, 3003, 18.958, 43, 0))
        self.assertFalse(line.complete)

    def test_v5_complete_line_with_nan(self):
        line = p.parse_bench_line(V5_DONE)
        self.assertTrue(line.complete)
        self.assertEqual(line.send_total, 1000)
        self.assertIsNone(line.avg_rt_ms)
        self.assertEqual((line.send_failed, line.response_failed), (1, 2))

    def test_v4_line(self):
        line = p.parse_bench_line(V4_LINE)
        self.assertEqual((line.tps, line.max_rt_ms, line.avg_rt_ms, line.send_failed), (1015, 3000, 48.211, 18))

    def test_other_lines_are_none(self):
        for other in (V5_BANNER,
                      "topic BenchmarkTest threadCount 64 messageSize 128 keyEnable false",
                      "Send TPS: x Max RT: 1", ""):
            self.assertIsNone(p.parse_bench_line(other), other)

    def test_output_keeps_only_report_lines(self):
        text = "\n".join(["banner", V5_LINE, "log line", V5_DONE])
        self.assertEqual(len(p.parse_bench_output(text)), 2)


class StallTruth(unittest.TestCase):
    def test_500ms_at_2000_per_s_over_10_s(self):
        t = p.stall_truth(2000, 0.5, 10.0)
        self.assertEqual(t["delayed"], 1000)
        self.assertEqual(t["max_ms"], 500)
        self.assertAlmostEqual(t["p99_ms"], 400)
        self.assertAlmostEqual(t["p999_ms"], 490)
        self.assertAlmostEqual(t["mean_added_ms"], 12.5)

    def test_a_stall_shorter_than_the_tail_leaves_p99_at_zero(self):
        self.assertEqual(p.stall_truth(2000, 0.05, 10.0)["p99_ms"], 0)


def line(tps, max_rt, avg):
    return p.BenchLine(tps=tps, max_rt_ms=max_rt, avg_rt_ms=avg, send_failed=0, response_failed=0)


class BenchStallReport(unittest.TestCase):
    def test_the_stall_is_the_jump_of_the_cumulative_max(self):
        lines = [line(10000, 40, 6.0), line(10100, 45, 6.1)] + [line(9600, 530, 6.3)] * 10 + [line(10000, 530, 6.0)]
        r = p.bench_stall_report(lines)
        self.assertEqual(r["rate"], 10100)
        self.assertIn("TPS 9,600–9,600", r["reported"])
        self.assertIn("Max RT 530 ms", r["reported"])

    def test_a_cold_start_max_finds_the_stall_by_time(self):
        # Max RT 1869 from the JVM's first sends hides the stall's 500 ms: the line after the
        # stall's time is taken instead
        lines = [p.BenchLine(6000, 1869, 10.0, 0, 0, time=f"2026-12-04 18:52:{s:02d},803") for s in range(40, 56)]
        lines[5].tps = 5500
        from datetime import datetime
        stall = datetime(2026, 12, 4, 18, 52, 44, 900000).timestamp()
        r = p.bench_stall_report(lines, stall)
        self.assertEqual(r["rate"], 6000)
        self.assertIn("TPS 5,500–6,000", r["reported"])

    def test_no_jump_says_so(self):
        r = p.bench_stall_report([line(10000, 40, 6.0), line(10000, 41, 6.0)])
        self.assertIn("no line where Max RT rose", r["reported"])


class Tables(unittest.TestCase):
    def test_rate_table_cpu_per_million(self):
        t = p.rate_table([{"broker": "b", "generator": "g", "run": 1, "tool_rate": 1000.0,
                           "broker_rate": 990.0, "cpu_s": 2.0, "sends": 200000, "failed": 0}])
        self.assertIn("| b | g | 1 | 1,000 | 990 | 2.00 | 10.0 | 0 |", t)

    def test_stall_table_truth_uses_the_window(self):
        t = p.stall_table([{"generator": "h", "run": 1, "rate": 2000.0, "window": 12.0, "reported": "x"}])
        self.assertIn("1,000 sends delayed", t)
        self.assertIn("p99 380 ms", t)


if __name__ == "__main__":
    unittest.main()
