"""The soak's resident-memory bar as nerve-soak now judges it (4cd72c9): per process, the largest rise of a period's
VmRSS above the last half's median, from the per-period lines of a soak's text output (MiB, two decimals)."""
import re, sys
lines = open(sys.argv[1]).read().splitlines()
per = [l for l in lines if re.match(r'^\s+shm pub:', l)]
roles = {}
for l in per[len(per) // 2:]:
    for name, mib in re.findall(r'(?:^|; )\s*([a-z ()]+?): ([\d.]+) MiB', l):
        roles.setdefault(name.strip(), []).append(float(mib))
for n, v in roles.items():
    med = sorted(v)[len(v) // 2]
    print(f"{n:22} median {med:8.2f} MiB  min {min(v):8.2f}  max {max(v):8.2f}  rise above median {100 * (max(v) - med) / med:5.2f} %")
