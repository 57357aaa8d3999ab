"""The site's generated figures: the split diagram, the benchmark ratio plots and the
scaling plot.

As an MkDocs hook, `on_files` draws them when the site is built and adds them to the site
as `img/<name>.png`, so they always match the code and the committed benchmark results.
As a script, `python docs/hooks/figures.py OUTDIR` writes the same PNGs to `OUTDIR` to look
at them.
"""

import io
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
# the suite runs the benchmarks page shows, and the case groups of their plots
SUITES = {
    "bench-cpu-2core.png": ("suite-cpu-2core-2026-11-23.json", "2 CPU cores"),
    "bench-h100.png": ("suite-h100-2026-11-23.json", "one H100"),
}
GROUPS = {
    "NUFFT": ("NUFFT",),
    "Interpolate": ("Interp",),
    "ArrayToBlocks, BlocksToArray": ("ArrayToBlocks", "BlocksToArray"),
    "SENSE, normals, CG-SENSE": ("SENSE", "Normal", "CG-SENSE"),
}
PEER_COLOURS = {"torchlinops": "tab:blue", "finufft": "tab:orange", "sigpy": "tab:green"}
# the scaling run the scaling page shows (`benchmarks/scaling.py --json`)
SCALING = "scaling-cpu-2core-2026-11-25.json"
SPLIT_COLOURS = {"coils": "tab:blue", "grid": "tab:orange"}
MEMORY_COLOURS = {**SPLIT_COLOURS, "pencil": "tab:green"}  # pencils: measured, not modelled


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    _pyplot().close(fig)
    return buffer.getvalue()


def device_blocks(num_tiles: int, num_devices: int) -> list[list[int]]:
    """The tiles each device runs: contiguous blocks of ceil(tiles / devices), the grid
    padded with empty tiles to a multiple of the devices (as `create_batched_linop` does)."""
    per_device = math.ceil(num_tiles / num_devices)
    return [list(range(d * per_device, (d + 1) * per_device)) for d in range(num_devices)]


def split_diagram(num_coils: int = 6, num_devices: int = 4) -> bytes:
    """Tile grid -> devices -> reassembly for `BatchSpec({"C": 1})` on a SENSE operator
    `A: (Nx, Ny) -> (C, Kx, Ky)`: tiles by coil, contiguous blocks per device (padding
    tiles included), then the forward's sharded output and the adjoint's psum."""
    from matplotlib.patches import FancyArrowPatch, Rectangle

    plt = _pyplot()
    blocks = device_blocks(num_coils, num_devices)
    num_tiles = sum(len(b) for b in blocks)
    colour = {t: f"C{d}" for d, block in enumerate(blocks) for t in block}
    fig, ax = plt.subplots(figsize=(9, 5.2))
    ax.set(xlim=(0.2, 9.4), ylim=(-0.4, num_tiles + 1.6), aspect="auto")
    ax.axis("off")

    def tile(x, y, t, width=1.6, label=None):
        padding = t >= num_coils
        ax.add_patch(
            Rectangle((x, y), width, 0.8, facecolor="white" if padding else colour[t],
                      edgecolor=colour[t], hatch="//" if padding else None, alpha=0.85)
        )  # fmt: skip
        text = label or ("padding" if padding else f"coil {t}")
        ax.text(x + width / 2, y + 0.4, text, ha="center", va="center", fontsize=8)

    def arrow(start, end, col="0.3"):
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10,
                                     color=col, linewidth=1))  # fmt: skip

    top = num_tiles + 0.9
    ax.text(1.2, top, "1. tile grid\n$A_t = Q_t A P_t^T$, one coil each", ha="center",
            va="bottom", fontsize=9)  # fmt: skip
    ax.text(4.9, top, f"2. devices ({num_devices})\nlax.scan over each block", ha="center",
            va="bottom", fontsize=9)  # fmt: skip
    ax.text(8.4, top, "3. reassembly", ha="center", va="bottom", fontsize=9)
    for t in range(num_tiles):  # the grid, padded to a multiple of the devices
        tile(0.4, num_tiles - 1 - t, t)

    device_y = {}
    for d, block in enumerate(blocks):
        y0 = num_tiles - (d + 1) * len(block)
        device_y[d] = y0 + len(block) / 2 - 0.1
        ax.add_patch(Rectangle((3.9, y0 - 0.05), 2.0, len(block) - 0.1, facecolor="none",
                               edgecolor=f"C{d}", linewidth=1.5))  # fmt: skip
        ax.text(5.55, device_y[d], f"cpu:{d}", ha="center", va="center", fontsize=8,
                color=f"C{d}")  # fmt: skip
        for i, t in enumerate(block):
            tile(4.0, num_tiles - 1 - t, t, width=1.2)
            arrow((2.05, num_tiles - 0.6 - t), (3.95, num_tiles - 0.6 - t), f"C{d}")

    # forward: C is an output dim, the devices' blocks stay sharded and the padding is cut
    fwd_top = num_tiles - 0.2
    ax.text(8.4, fwd_top + 0.1, "forward $A x$: C stays sharded\n(out_specs), padding cut",
            ha="center", va="bottom", fontsize=8)  # fmt: skip
    for c in range(num_coils):
        y = fwd_top - 0.45 * (c + 1)
        ax.add_patch(Rectangle((7.7, y), 1.4, 0.4, facecolor=colour[c], alpha=0.85))
        ax.text(8.4, y + 0.2, f"C = {c}", ha="center", va="center", fontsize=7)
    ax.text(8.4, fwd_top - 0.45 * num_coils - 0.35, "(C, Kx, Ky)", ha="center", fontsize=8)

    # adjoint and normal: C is summed, so the partial images are added with psum
    ax.add_patch(Rectangle((7.7, 0.0), 1.4, 1.4, facecolor="0.85", edgecolor="0.3"))
    ax.text(8.4, 0.7, "$\\Sigma$ psum", ha="center", va="center", fontsize=10)
    ax.text(8.4, 1.5, "adjoint $A^H y$, normal $A^H A x$:\nC summed over devices",
            ha="center", va="bottom", fontsize=8)  # fmt: skip
    ax.text(8.4, -0.35, "(Nx, Ny), on every device", ha="center", fontsize=8)
    for d, y in device_y.items():
        coils = [t for t in blocks[d] if t < num_coils]
        if coils:  # a device holding only padding has no part of the forward's output
            middle = fwd_top - 0.45 * (coils[0] + len(coils) / 2)
            arrow((5.95, y), (7.65, middle), f"C{d}")
        arrow((5.95, y - 0.2), (7.65, 0.7), f"C{d}")
    fig.suptitle(
        f'create_batched_linop(A, BatchSpec({{"C": 1}}, device_matrix=devices)): '
        f"{num_coils} coils on {num_devices} devices",
        fontsize=10,
    )
    return _png(fig)


def suite_ratios(record: dict) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """{group: {peer: [(case, peer median / jaxlinops median), ...]}} from a suite JSON."""
    out: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for group, prefixes in GROUPS.items():
        peers = out.setdefault(group, {})
        for r in record["results"]:
            if not r["family"].startswith(prefixes):
                continue
            for peer in PEER_COLOURS:
                if peer in r:
                    ratio = r[peer]["median_ms"] / r["jaxlinops"]["median_ms"]
                    peers.setdefault(peer, []).append((f"{r['family']}, {r['size']}", ratio))
    return {group: peers for group, peers in out.items() if peers}


def ratio_plot(record: dict, machine: str) -> bytes:
    """One panel per group of cases, on one log scale: each peer's time over jaxlinops',
    with the value at the end of each bar and the line at 1 (right of it, jaxlinops is
    faster)."""
    plt = _pyplot()
    groups = suite_ratios(record)
    cases = {
        group: list(dict.fromkeys(case for rows in peers.values() for case, _ in rows))
        for group, peers in groups.items()
    }
    fig, axes = plt.subplots(
        len(groups), 1, sharex=True, layout="constrained", squeeze=False,
        figsize=(9, 1.5 + 0.26 * sum(len(c) for c in cases.values()) + 0.4 * len(groups)),
        gridspec_kw={"height_ratios": [len(c) + 0.5 for c in cases.values()]},
    )  # fmt: skip
    for ax, (group, peers) in zip(axes[:, 0], groups.items(), strict=True):
        names = cases[group]
        height = 0.8 / len(peers)
        for i, (peer, rows) in enumerate(peers.items()):
            values = dict(rows)
            ys = [k + i * height for k, c in enumerate(names) if c in values]
            xs = [values[c] for c in names if c in values]
            # bars from 1 to the ratio: right when jaxlinops is faster, left when slower
            ax.barh(ys, [x - 1 for x in xs], height, left=1, color=PEER_COLOURS[peer],
                    label=f"{peer} time / jaxlinops' time")  # fmt: skip
            for x, y in zip(xs, ys, strict=True):
                ax.text(x * 1.04 if x >= 1 else x / 1.04, y, f"{x:.2g}×", va="center",
                        ha="left" if x >= 1 else "right", fontsize=6)  # fmt: skip
        ax.axvline(1, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yticks([k + height * (len(peers) - 1) / 2 for k in range(len(names))], names,
                      fontsize=7)  # fmt: skip
        ax.invert_yaxis()
        ax.set_title(group, fontsize=9, loc="left")
        ax.grid(axis="x", which="both", alpha=0.3)
    axes[-1, 0].set_xlabel("peer's median time / jaxlinops' (above 1: jaxlinops is faster)")
    handles = {h.get_label(): h for ax in axes[:, 0] for h in ax.get_legend_handles_labels()[0]}
    fig.legend(handles.values(), handles.keys(), loc="outside upper center", ncols=3, fontsize=8,
               title=f"Benchmark suite on {machine}", title_fontsize=9)  # fmt: skip
    return _png(fig)


def scaling_plot(record: dict) -> bytes:
    """Three panels from a `scaling.py` JSON: the 3-D CG-SENSE's per-device peak memory
    against the device count, in strong and in weak scaling, coil split against grid split
    (slabs, and pencils from 4 devices; measured, XLA's figures), and the cost model's
    projected time per CG iteration on H100s (1 GPU, 1 node, 2 and 4 nodes)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), layout="constrained")
    cg = record["cg_sense"]
    for ax, scaling in zip(axes[:2], ("strong", "weak"), strict=True):
        ticks = set()
        for how, colour in MEMORY_COLOURS.items():
            rows = [(int(k.rsplit("/", 1)[1]), r) for k, r in cg.items()
                    if k.startswith(f"{scaling}/{how}/") and "peak_MiB" in r]  # fmt: skip
            ax.plot([d for d, _ in rows], [r["peak_MiB"] for _, r in rows], "o-",
                    color=colour, label=f"split by {how}")  # fmt: skip
            ticks |= {d for d, _ in rows}
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(ticks), [str(d) for d in sorted(ticks)])
        ax.set_ylim(bottom=0)
        ax.set_xlabel("devices D")
        ax.set_ylabel("peak MiB per device")
        shape = "x".join(map(str, cg[f"{scaling}/none/1"]["shape"]))
        grows = "" if scaling == "strong" else ", Nx grows with D"
        ax.set_title(f"{scaling} scaling ({shape} at D = 1{grows})", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    rows = record["cost_model"]["rows"]
    label = next(k.split("/")[0] for k in rows if "H100" in k and k.startswith(
        str(record["settings"]["large"])))  # fmt: skip
    for how, colour in SPLIT_COLOURS.items():
        points = [(int(k.rsplit("/", 1)[1]), r["total_ms"]) for k, r in rows.items()
                  if k.startswith(f"{label}/{how}/")]  # fmt: skip
        axes[2].plot([d for d, _ in points], [t for _, t in points], "o-", color=colour,
                     label=f"split by {how}")  # fmt: skip
    axes[2].set_xscale("log", base=2)
    axes[2].set_xticks([d for d, _ in points], [str(d) for d, _ in points])
    axes[2].set_ylim(bottom=0)
    axes[2].set_xlabel("H100s (8 per node; 16, 32: 2 and 4 nodes)")
    axes[2].set_ylabel("ms per CG iteration (model)")
    axes[2].set_title(f"cost model, {label.split(',')[0]}", fontsize=9)
    axes[2].grid(alpha=0.3)
    axes[2].legend(fontsize=8)
    return _png(fig)


def figures() -> dict[str, bytes]:
    """Every generated figure, by its file name under docs' img/."""
    out = {"split-diagram.png": split_diagram()}
    for name, (results, machine) in SUITES.items():
        out[name] = ratio_plot(json.loads((RESULTS / results).read_text()), machine)
    out["scaling.png"] = scaling_plot(json.loads((RESULTS / SCALING).read_text()))
    return out


def on_files(files, config):
    from mkdocs.structure.files import File

    for name, png in figures().items():
        files.append(File.generated(config, f"img/{name}", content=png))
    return files


if __name__ == "__main__":
    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, png in figures().items():
        (out_dir / name).write_bytes(png)
        print(out_dir / name)
