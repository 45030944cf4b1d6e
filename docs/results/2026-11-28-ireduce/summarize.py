import json, sys, glob, collections, statistics
import os; STAT = os.environ.get("STAT", "avg_us")
d = sys.argv[1]; form = sys.argv[2]
ops = sys.argv[3].split(",") if len(sys.argv) > 3 else ["reduce", "allreduce"]
sizes = [int(x) for x in os.environ.get("SIZES", "8,4096,262144,1048576").split(",")]
res = collections.defaultdict(list)
loads = []
for f in sorted(glob.glob(f"{d}/*-{form}-*.txt")):
    rep, _, m, heap = f.split("/")[-1][:-4].split("-", 3)
    for line in open(f):
        if line.startswith("# "): loads.append(line.split("load ")[1].strip())
        if not line.startswith("{"): continue
        x = json.loads(line)
        res[(x["op"], x["size"], m, heap)].append((x[STAT], x.get("minflt", 0) / x["iters"]))
print("loads at launch:", ", ".join(loads))
print(f"| op | size | native as-is | table as-is | native primed | table primed | faults/call (n-as-is, t-as-is, n-primed, t-primed) |")
print("|---|---|---|---|---|---|---|")
for op in ops:
    for s in sizes:
        cells = []; fl = []
        for m, heap in (("native","as-is"),("table","as-is"),("native","primed"),("table","primed")):
            v = res[(op, s, m, heap)]
            means = [a for a, _ in v]
            cells.append(f"{statistics.mean(means):.1f} ({min(means):.1f}-{max(means):.1f})" if v else "-")
            fl.append(f"{statistics.mean([b for _, b in v]):.1f}" if v else "-")
        print(f"| {op} | {s} | " + " | ".join(cells) + " | " + ", ".join(fl) + " |")
