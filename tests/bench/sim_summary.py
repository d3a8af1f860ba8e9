#!/usr/bin/env python3
"""Condenses perfgate-verdict-sim's long table into one row per (noise, node).

Usage: perfgate-verdict-sim ... > sim.md; tests/bench/sim_summary.py sim.md
"""
import sys

rows = {}
order = []
rules = []
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    if len(cells) != 8 or cells[0] in ('noise', '---') or cells[3].startswith('-'):
        continue
    noise, node, rule, fail, inc, _pass, mean_n, max_n = cells
    key = (noise, node)
    if key not in rows:
        rows[key] = {}
        order.append(key)
    if rule not in rules:
        rules.append(rule)
    rows[key][rule] = (float(fail), float(inc), float(mean_n), float(max_n))

seq, fixed, one, mean_n, retry = rules[:5]
print(f"| noise | node | {seq}: FAIL % / INC % / samples per test (per node max) "
      f"| {fixed}: FAIL % / INC % | {one}: FAIL % | {mean_n}: FAIL % | {retry}: FAIL % |")
print("|---|---|---|---|---:|---:|---:|")
for key in order:
    r = rows[key]
    s = r[seq]
    f = r[fixed]
    print(f"| {key[0]} | {key[1]} | {s[0]:.2f} / {s[1]:.2f} / {s[2]:.1f} ({s[3]:.1f}) "
          f"| {f[0]:.2f} / {f[1]:.2f} | {r[one][0]:.2f} | {r[mean_n][0]:.2f} | {r[retry][0]:.2f} |")
