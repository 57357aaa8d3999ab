"""Markdown tables and a plot from the suite's JSON.

    python benchmarks/report.py results.json [--markdown out.md] [--plot out.png]

Tables: times with ratios against each peer (a peer's median over jaxlinops'; above 1,
jaxlinops is faster), then jaxlinops against the machine's measured limits (achieved
GFLOP/s and GB/s as a share of the peak FFT throughput and copy bandwidth, by the cases'
lower-bound models), its compile time and XLA's memory figure, and the accuracy of every
library.
"""

from __future__ import annotations

import argparse
import json
import sys

LIBRARIES = ("jaxlinops", "torchlinops", "finufft", "sigpy")
PEERS = LIBRARIES[1:]


def _num(value: float) -> str:
    """Three significant digits without exponents."""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def _ms(stats: dict | None) -> str:
    if stats is None:
        return "—"
    text = f"{_num(stats['median_ms'])} ({_num(stats['p75_ms'] - stats['p25_ms'])})"
    return text + "*" if stats["capped"] else text


def ratio(result: dict, peer: str) -> float | None:
    """The peer's median time over jaxlinops' (None if the peer did not run)."""
    if peer not in result:
        return None
    return result[peer]["median_ms"] / result["jaxlinops"]["median_ms"]


def times_table(results: list[dict], peers: list[str]) -> list[str]:
    head = ["case", "size", "jaxlinops ms (IQR)"]
    for p in peers:
        head += [f"{p} ms", f"× {p}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [r["family"], r["size"], _ms(r["jaxlinops"])]
        for p in peers:
            x = ratio(r, p)
            cells += [_ms(r.get(p)), "—" if x is None else f"{x:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def limits_table(results: list[dict], peaks: dict, peers: list[str]) -> list[str]:
    head = ["case", "size", "GFLOP/s (% FFT peak)", "GB/s (% copy peak)", "compile s",
            "MiB (XLA; peers' peak)", "rel. error vs exact", "peers' rel. diff"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        jl = r["jaxlinops"]
        seconds = jl["median_ms"] / 1e3
        flops = r["flops"] / seconds / 1e9
        bandwidth = r["bytes"] / seconds / 1e9
        share = 100 * flops / peaks["fft_GFLOPps"]
        gflops = f"{flops:.3g} ({share:.0f}%)" if r["flops"] else "—"
        memory = sum(jl.get("memory_bytes", {}).values()) / 2**20
        errors = [
            f"{lib[:2]} {r[lib]['rel_error_vs_exact']:.1e}"
            for lib in LIBRARIES
            if lib in r and "rel_error_vs_exact" in r[lib]
        ]
        diffs = [f"{p[:2]} {r[p]['rel_diff_vs_jaxlinops']:.1e}" for p in peers if p in r]
        peaks_mib = [f"{p[:2]} {r[p]['peak_bytes'] / 2**20:.1f}" for p in peers
                     if "peak_bytes" in r.get(p, {})]  # fmt: skip
        cells = [r["family"], r["size"], gflops,
                 f"{bandwidth:.3g} ({100 * bandwidth / peaks['copy_GBps']:.0f}%)",
                 f"{jl.get('compile_s', float('nan')):.2f}",
                 f"{memory:.1f}" + "".join(f", {m}" for m in peaks_mib),
                 ", ".join(errors) or "—", ", ".join(diffs) or "—"]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def markdown(record: dict) -> str:
    m, results = record["machine"], record["results"]
    peers = [p for p in PEERS if any(p in r for r in results)]
    peaks = m["peaks"]
    versions = ", ".join(
        f"{k} {m[k]}" for k in ("jax", "torch", "torch-named-linops", "finufft", "sigpy")
        if m.get(k)
    )  # fmt: skip
    source = (m["commit"] or "?")[:8] + (" + local changes" if m["jaxlinops_dirty"] else "")
    lines = [
        f"Machine: {m['cpu_count']} CPUs ({m['processor']}), jax backend {m['jax_backend']} "
        f"({m['device_kind']}), torch on {m.get('torch_device', '—')}; {versions}; "
        f"{m['platform']}; load {m['loadavg_start'][0]:.1f} → {m['loadavg_end'][0]:.1f}; "
        f"jaxlinops at {source}; "
        f"{m['date']}, {m['total_s']:.0f} s in all.",
        "",
        f"Measured peaks (jax, complex64): copy {peaks['copy_GBps']:.3g} GB/s, "
        f"{peaks['fft_size'][0]}² FFT {peaks['fft_GFLOPps']:.3g} GFLOP/s.",
        "",
        "Times: median (interquartile range) per call, fresh input each run; * = capped at "
        "3 runs. × peer = the peer's median / jaxlinops' (above 1: jaxlinops is faster).",
        "",
        *times_table(results, peers),
        "",
        "jaxlinops against the machine's limits (lower-bound models of flops and bytes, see "
        "`cases.py`), compile time, memory (XLA's arguments + output + temporaries; a "
        "peer's own peak counter where it has one: torch on CUDA), and "
        "accuracy: error against an exact evaluation (finufft in double precision, NUFFT "
        "only) and each peer's difference from jaxlinops on one input (jl = jaxlinops, "
        "to = torchlinops, fi = finufft, si = sigpy).",
        "",
        *limits_table(results, peaks, peers),
        "",
    ]
    return "\n".join(lines)


def plot(record: dict, path: str) -> None:
    """Horizontal bars: each peer's time over jaxlinops', per case (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = record["results"]
    peers = [p for p in PEERS if any(p in r for r in results)]
    labels = [f"{r['family']} {r['size']}" for r in results]
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(results) + 1.5))
    height = 0.8 / max(len(peers), 1)
    for i, p in enumerate(peers):
        values = [ratio(r, p) or 0 for r in results]
        ax.barh([k + i * height for k in range(len(results))], values, height, label=p)
    ax.axvline(1, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks([k + height * (len(peers) - 1) / 2 for k in range(len(results))], labels,
                  fontsize=7)  # fmt: skip
    ax.invert_yaxis()
    ax.set_xlabel("peer time / jaxlinops time (> 1: jaxlinops faster)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("json", help="a JSON record written by suite.py --json")
    parser.add_argument("--markdown", help="write the tables here (None: print them)")
    parser.add_argument("--plot", help="write a PNG of the ratios here (needs matplotlib)")
    args = parser.parse_args(argv)
    with open(args.json) as f:
        record = json.load(f)
    text = markdown(record)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    else:
        print(text)
    if args.plot:
        plot(record, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
