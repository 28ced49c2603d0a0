#!/usr/bin/env python3
"""Prints the README's fault-experiment table from a result folder's summary.csv: one line per
cell, each figure as the per-repetition values and their sum (or median for recovery_ms).

    python3 scripts/fault-table.py results/durability-<stamp>
"""
import csv
import statistics
import sys

COLUMNS = ["acked_lost", "phantom", "unacked_in_flight", "connection_errors", "busy_stored",
           "duplicates", "corrupt"]


def main(folder):
    rows = list(csv.DictReader(open(f"{folder}/summary.csv")))
    params = [c for c in rows[0] if c.startswith("param_")]
    cells = {}
    for r in rows:
        cells.setdefault(tuple(r[p] for p in params), []).append(r)
    head = [p[len("param_broker."):] if p.startswith("param_broker.") else p[6:] for p in params]
    print("| " + " | ".join(head + ["reps (valid)"] + COLUMNS + ["recovery_ms median (max)"]) + " |")
    print("|" + "---|" * (len(head) + len(COLUMNS) + 2))
    for key, rs in sorted(cells.items()):
        rs.sort(key=lambda r: int(r["repetition"]))
        valid = sum(r["valid"] == "true" for r in rs)
        figs = []
        for c in COLUMNS:
            vals = [int(r[c]) for r in rs if r[c] != ""]
            figs.append(f"{sum(vals)} ({', '.join(map(str, vals))})")
        rec = [float(r["recovery_ms"]) for r in rs if r["recovery_ms"] != ""]
        recs = f"{statistics.median(rec):.0f} ({max(rec):.0f})" if rec else "-"
        print("| " + " | ".join(list(key) + [f"{len(rs)} ({valid})"] + figs + [recs]) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
