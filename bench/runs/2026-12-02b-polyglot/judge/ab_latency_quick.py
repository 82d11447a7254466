"""Median p50/p99 of each latency-suite row over runs, before (b7d9645) and after, and after/before; the kernel and
floor rows (spin, futex, pipe, udp, ...) are the control: code that did not change, moving only with the host."""
import re, statistics, sys, glob
def parse(path):
    rows, case = {}, None
    for line in open(path):
        m = re.search(r"\(case (\S+?)\)", line) or re.search(r"\(cases? (\S+?)[\);]", line)
        if m and not line.startswith(" "):
            case = m.group(1)
            continue
        parts = line.split()
        nums = []
        for p in reversed(parts):
            try: nums.append(float(p))
            except ValueError: break
        if case and len(nums) >= 8 and case.startswith("64B"):
            nums.reverse()
            name = " ".join(parts[:len(parts) - len(nums)])
            rows[(case, name)] = (nums[-3], nums[-2])  # p50, p99
    return rows
R = sys.argv[1]
sides = {s: [parse(p) for p in sorted(glob.glob(f"{R}/latency-quick-{s}-run*.txt"))] for s in ("before", "after")}
keys = [k for k in sides["after"][0] if all(k in r for s in sides.values() for r in s)]
print(f"runs: before {len(sides['before'])}, after {len(sides['after'])}")
print(f"{'case':12} {'row':52} {'p50 before':>10} {'p50 after':>10} {'ratio':>6}  {'p99 before':>10} {'p99 after':>10}")
for k in keys:
    md = {s: [statistics.median(r[k][i] for r in sides[s]) for i in (0, 1)] for s in sides}
    ratio = md["after"][0] / md["before"][0] if md["before"][0] else float("nan")
    print(f"{k[0]:12} {k[1][:52]:52} {md['before'][0]:10.1f} {md['after'][0]:10.1f} {ratio:6.2f}  {md['before'][1]:10.1f} {md['after'][1]:10.1f}")
