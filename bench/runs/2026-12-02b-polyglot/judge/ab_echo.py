"""A/B of echo runs: per system, the geometric mean over points of after/before (median over runs) p50 and delivered."""
import glob, math, re, statistics, sys
d = sys.argv[1]
def parse(path):
    rows = {}
    for line in open(path):
        m = re.match(r'^(\S+)\s+(\d)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$', line)
        if m:
            rows[(m[1], m[2], m[3])] = (float(m[5]), float(m[8]), float(m[9]))  # delivered, p50, p99
    return rows
runs = {w: [parse(p) for p in sorted(glob.glob(f'{d}/echo-{w}-run*.txt'))] for w in ('before', 'after')}
keys = sorted(set(runs['after'][0]) & set(runs['before'][0]))
systems = sorted({k[0] for k in keys})
print(f"{'system':18} {'points':>6} {'p50 after/before':>17} {'p99 after/before':>17} {'delivered a/b':>14}  (geomean over points of median-of-3 ratios)")
for s in systems:
    pts = [k for k in keys if k[0] == s]
    r50, r99, rdel = [], [], []
    for k in pts:
        med = {w: [statistics.median(r[k][i] for r in runs[w] if k in r) for i in range(3)] for w in runs}
        if med['before'][1] > 0: r50.append(med['after'][1] / med['before'][1])
        if med['before'][2] > 0: r99.append(med['after'][2] / med['before'][2])
        if med['before'][0] > 0: rdel.append(med['after'][0] / med['before'][0])
    g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
    print(f"{s:18} {len(pts):6} {g(r50):17.3f} {g(r99):17.3f} {g(rdel):14.3f}")
