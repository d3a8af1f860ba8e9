#!/usr/bin/env python3
"""Summarises tests/bench/real_noise.sh output: perfgate verdicts, and the one-run, mean-of-10
and retry-until-pass rules on the same runs (from the report's first samples).
Usage: tests/bench/real_noise_summary.py OUT"""
import json, glob, os, statistics as st
import sys
d = sys.argv[1] if len(sys.argv) > 1 else 'real-noise'
cal = json.load(open(f'{d}/calib_medians.json'))
bounds = {k: 0.9 * v for k, v in cal.items()}
runs = []
for p in sorted(glob.glob(f'{d}/run_*.json')):
    r = json.load(open(p))
    t = r['tests'][0]
    ms = {m['name']: m for m in t['metrics']}
    first = {k: ms[k]['samples'] for k in bounds}
    one = 'FAIL' if any(first[k][0] < b for k, b in bounds.items()) else 'PASS'
    mean10 = 'FAIL' if any(sum(first[k][:10]) / 10 < b for k, b in bounds.items()) else 'PASS'
    runs.append(dict(name=os.path.basename(p), verdict=t['verdict'], n=t['samples'],
                     stop=t['stopReason'], one=one, mean10=mean10,
                     med=min(ms[k]['summary']['median'] / cal[k] for k in bounds),
                     cv=max(ms[k]['summary']['cv'] for k in bounds),
                     outl=sum(ms[k]['summary'].get('outliers', 0) for k in bounds),
                     seconds=t.get('seconds', 0), mtime=os.path.getmtime(p)))
N = len(runs)
def count(key, val): return sum(1 for r in runs if r[key] == val)
print('runs', N, 'calibration medians', {k: round(v, 2) for k, v in cal.items()})
for v in ('PASS', 'FAIL', 'INCONCLUSIVE'):
    print(f'perfgate {v}: {count("verdict", v)}')
print('perfgate mean samples', round(st.mean(r['n'] for r in runs), 1), 'median', st.median(r['n'] for r in runs),
      'stop reasons', {s: count('stop', s) for s in set(r['stop'] for r in runs)})
for v in ('PASS', 'FAIL', 'INCONCLUSIVE'):
    sel = [r['n'] for r in runs if r['verdict'] == v]
    if sel: print(f'  {v}: mean samples {st.mean(sel):.1f}')
print('one run FAIL', count('one', 'FAIL'), ' mean of 10 FAIL', count('mean10', 'FAIL'))
retry = []
for i in range(N - 2):
    retry.append('PASS' if 'PASS' in (runs[i]['one'], runs[i+1]['one'], runs[i+2]['one']) else 'FAIL')
print('retry-3 FAIL', retry.count('FAIL'), 'of', len(retry), '(windows of 3 consecutive runs)')
meds = sorted(r['med'] for r in runs)
print('run median / calibration median (lowest metric): min %.2f p10 %.2f median %.2f p90 %.2f max %.2f' % (
    meds[0], meds[N // 10], meds[N // 2], meds[9 * N // 10], meds[-1]))
print('per-run CV (highest metric): median %.2f max %.2f; outliers per run (4 metrics) mean %.1f' % (
    st.median(r['cv'] for r in runs), max(r['cv'] for r in runs), st.mean(r['outl'] for r in runs)))
# load average around each FAIL/INCONCLUSIVE run (load.log: epoch, 1-min, 5-min, 15-min)
load = []
if os.path.exists(f'{d}/load.log'):
    for line in open(f'{d}/load.log'):
        parts = line.split()
        load.append((int(parts[0]), float(parts[1])))
def load_during(r):
    xs = [l for (t, l) in load if r['mtime'] - r['seconds'] - 5 <= t <= r['mtime']]
    return round(max(xs), 2) if xs else None
for r in runs:
    if r['verdict'] != 'PASS':
        print(' ', r['name'], r['verdict'], r['n'], r['stop'], 'median/cal %.2f' % r['med'], 'cv %.2f' % r['cv'],
              'max 1-min load during run', load_during(r))
ls = [load_during(r) for r in runs if r['verdict'] == 'PASS']
ls = [x for x in ls if x is not None]
if ls: print('PASS runs: max 1-min load during run: median', st.median(ls), 'max', max(ls), 'of', len(ls))
