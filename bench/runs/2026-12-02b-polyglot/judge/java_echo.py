import glob, re, statistics, sys
d = sys.argv[1]
rows = {}
for p in sorted(glob.glob(f'{d}/echo-after-run*.txt')):
    sec = False
    for line in open(p):
        if line.startswith("ratios: issue 41"): sec = True; continue
        if sec and line.startswith("ratios:"): sec = False
        m = re.match(r'^(\S+clients)\s+delivered\s+([\d.]+) \S+\s+p50\s+([\d.]+)', line)
        if sec and m: rows.setdefault(m[1], []).append((float(m[2]), float(m[3])))
print(f"{'case':18} {'delivered (3 runs)':>24} {'median':>7} {'p50 ratio (3 runs)':>24} {'median':>7}")
for k, v in rows.items():
    dl = [x[0] for x in v]; pr = [x[1] for x in v]
    print(f"{k:18} {' '.join(f'{x:.3f}' for x in dl):>24} {statistics.median(dl):7.3f} {' '.join(f'{x:.3f}' for x in pr):>24} {statistics.median(pr):7.3f}")
