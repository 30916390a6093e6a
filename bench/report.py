"""Parses wrk output and prints the benchmark table (used by bench/run.sh).

  report.py parse NAME CONNS WRK_OUTPUT   -> one TSV line: name conns turns/s p50_ms p99_ms errors
  report.py table RESULTS_TSV             -> medians per (name, conns) and the ratios
"""

import re
import statistics
import sys

UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def ms(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    return float(m.group(1)) * UNITS[m.group(2)] if m else float("nan")


def parse(name, conns, path):
    text = open(path, encoding="utf-8", errors="replace").read()
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    p50 = re.search(r"^\s+50%\s+(\S+)", text, re.M)
    p99 = re.search(r"^\s+99%\s+(\S+)", text, re.M)
    errors = sum(int(n) for n in re.findall(r"(?:Non-2xx or 3xx responses|connect|read|write|timeout)[: ]+(\d+)", text))
    print(
        f"{name}\t{conns}\t{float(rps.group(1)) if rps else 0:.1f}\t"
        f"{ms(p50.group(1)) if p50 else float('nan'):.3f}\t{ms(p99.group(1)) if p99 else float('nan'):.3f}\t{errors}"
    )


def table(path):
    rows = {}
    for line in open(path, encoding="utf-8"):
        name, conns, rps, p50, p99, errors = line.split("\t")
        rows.setdefault((name, int(conns)), []).append((float(rps), float(p50), float(p99), int(errors)))
    med = {k: tuple(statistics.median(col) for col in zip(*v)) for k, v in rows.items()}
    print(f"\n{'target':<12} {'conns':>5} {'runs':>4} {'turns/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6}   (medians)")
    for (name, conns), (rps, p50, p99, errors) in sorted(med.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"{name:<12} {conns:>5} {len(rows[(name, conns)]):>4} {rps:>9.0f} {p50:>8.2f} {p99:>8.2f} {errors:>6.0f}")
    print()
    for conns in sorted({c for _, c in med}):
        sb = med.get(("switchboard", conns))
        if not sb:
            continue
        parts = []
        if ("baseline", conns) in med:
            parts.append(f"switchboard/baseline = {sb[0] / med[('baseline', conns)][0]:.2f}x")
        if ("floor", conns) in med:
            parts.append(f"switchboard/floor = {100 * sb[0] / med[('floor', conns)][0]:.0f}%")
        if ("langgraph", conns) in med and med[("langgraph", conns)][0] > 0:
            parts.append(f"switchboard/langgraph = {sb[0] / med[('langgraph', conns)][0]:.0f}x")
        print(f"{conns:>3} connections: " + ", ".join(parts))
        # The same ratio per run, then its median (each run's targets ran back to back).
        for other in ("baseline", "floor", "langgraph"):
            if (other, conns) in rows:
                ratios = [a[0] / b[0] for a, b in zip(rows[("switchboard", conns)], rows[(other, conns)]) if b[0] > 0]
                if ratios:
                    print(f"    per-run switchboard/{other}: " + ", ".join(f"{r:.2f}" for r in ratios)
                          + f" (median {statistics.median(ratios):.2f})")


if __name__ == "__main__":
    if sys.argv[1] == "parse":
        parse(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        table(sys.argv[2])
