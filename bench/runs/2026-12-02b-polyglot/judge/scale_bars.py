"""Issue 39's bars from three runs of `nerve bench scale` (scale.jsonl in each DIR): each figure's median over the
runs, the ratio of the medians, and whether each run met the bar on its own."""
import json, statistics, sys
runs = []
for d in sys.argv[1:]:
    fig = {}
    for line in open(f"{d}/scale.jsonl"):
        o = json.loads(line)
        if "metric" in o:
            fig[(o["case"], o["system"], o["metric"])] = o["value"]
    runs.append(fig)
def med(k): return statistics.median(r[k] for r in runs)
def each(k): return [r[k] for r in runs]
rows = []
def bar(name, num, den, limit, extra=lambda r: 0.0, scale=1.0):
    per = [r[num] / (scale * (r[den] + extra(r))) for r in runs]
    m = med(num) / (scale * (med(den) + statistics.median(extra(r) for r in runs)))
    rows.append((name, m, limit, sum(p <= limit for p in per), per))
S = "nerve bus shm"
c = lambda n, m: (f"channels_{n}", S, m)
print("1000 idle channels: threads", each(c(1000, "threads")), " idle ms/s", [round(x, 2) for x in each(c(1000, "idle_cpu"))],
      " median idle", round(med(c(1000, "idle_cpu")), 2))
for sysname in ["iceoryx2 WaitSet", "lcm-c udpm"]:
    print(f"   {sysname}: threads", each(("channels_1000", sysname, "threads")), "idle ms/s",
          [round(x, 2) for x in each(("channels_1000", sysname, "idle_cpu"))], "RSS MiB", [round(x) for x in each(("channels_1000", sysname, "rss"))])
print("   nerve RSS MiB at 1000:", [round(x, 1) for x in each(c(1000, "rss"))])
bar("1000ch active p50 / 1ch p50 (<=1.5)", c(1000, "p50"), c(1, "p50"), 1.5)
M = 4194304
for mode in ["poll", "wait"]:
    zc = lambda n: (f"size_{n}", f"nerve-shm zc-{mode}", "p50")
    bar(f"zc-{mode} 4MiB p50 / 64B p50 (<=2)", zc(M), zc(64), 2.0)
    bar(f"zc-{mode} 4MiB p50 / iceoryx2 zc-{mode} 4MiB (<=1)", zc(M), (f"size_{M}", f"iceoryx2 zc-{mode}", "p50"), 1.0)
    cp = lambda n: (f"size_{n}", f"nerve-shm copy-{mode}", "p50")
    bar(f"copy-{mode} 4MiB p50 / (memcpy 4MiB + copy 64B) (<=1.3)", cp(M), (f"size_{M}", "memcpy", "p50"), 1.3,
        extra=lambda r, cp=cp: r[cp(64)])
for read in ["copy-wait", "zc-wait"]:
    rd = lambda n: (f"readers_{n}", f"nerve-shm {read}", "last_p50")
    bar(f"8 readers {read} last p50 / 1 reader (<=2)", rd(8), rd(1), 2.0)
for peer in sorted({k[1] for k in runs[0] if k[0] == "readers_1" and not k[1].startswith("nerve")}):
    rd = lambda n, peer=peer: (f"readers_{n}", peer, "last_p50")
    bar(f"   (peer/control) {peer} 8 readers / 1 reader", rd(8), rd(1), 2.0)
print(f"{'bar':62} {'ratio of medians':>16} {'runs met':>8}  per run")
for name, m, lim, ok, per in rows:
    print(f"{name:62} {m:16.2f} {ok:>5}/{len(runs)}  {' '.join(f'{p:.2f}' for p in per)}")
