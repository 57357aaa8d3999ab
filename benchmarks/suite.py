"""The benchmark suite: jaxlinops against torchlinops, finufft and sigpy, in one run.

    python benchmarks/suite.py                 # CPU suite (about 15 minutes on 2 cores)
    python benchmarks/suite.py --quick         # smallest sizes, few runs (under a minute)
    python benchmarks/suite.py --gpu           # on jax's GPU, torch on CUDA (peers without
                                               # a GPU path are left out)
    python benchmarks/suite.py --cases 'NUFFT' --json out.json --markdown out.md

Every case is built by every available library from the same random data and timed the
same way (`harness.py`); ratios are a peer's median time over jaxlinops'. The outputs on one
shared input are compared with jaxlinops' and, where an exact reference exists (finufft in
double precision for the NUFFT), with it. The machine, the versions and the measured peaks
are recorded with the results. `report.py` turns the JSON into Markdown tables and plots.
Peers that are not installed are skipped with a notice.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import jaxlinops  # noqa: F401
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import numpy as np  # noqa: E402
import report  # noqa: E402
from cases import Case, Peers, all_cases  # noqa: E402
from harness import (  # noqa: E402
    QUICK,
    Budget,
    machine_info,
    measure_peaks,
    random_input,
    rel_l2,
    time_impl,
)

from jaxlinops._progress import iterate  # noqa: E402

PEERS = ("torchlinops", "finufft", "sigpy")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, description=__doc__.split("\n\n")[0]
    )
    add = parser.add_argument
    add("--quick", action="store_true", help="smallest size of each family, few runs")
    add("--gpu", action="store_true", help="require jax's GPU backend (and torch on CUDA)")
    add("--cases", default="", help="regex on 'FAMILY SIZE', e.g. 'NUFFT fwd 2D'")
    add("--peers", default=",".join(PEERS), help=f"comma-separated subset of {PEERS}")
    # 6e-3 gives finufft (at oversampling 1.25) the error of jaxlinops' width-4 kernel:
    # 6.6e-3 vs 6.8e-3 in 2-D, 9.4e-3 vs 8.4e-3 in 3-D, against an exact evaluation
    add("--finufft-eps", type=float, default=6e-3, help="finufft's tolerance")
    add("--torch-threads", type=int, help="torch.set_num_threads (None: torch's own)")
    add("--cap-s", type=float, default=30.0, help="few runs for a case predicted longer")
    add("--seed", type=int, default=0, help="random seed")
    add("--json", help="write machine, settings and results here")
    add("--markdown", help="write the Markdown report here")
    args = parser.parse_args(argv)
    unknown = set(args.peers.split(",")) - set(PEERS) - {""}
    if unknown:
        parser.error(f"--peers: unknown {sorted(unknown)}; choose from {PEERS}.")
    if args.gpu and jax.default_backend() == "cpu":
        parser.error("--gpu: jax has no GPU backend here (install jax[cuda12]).")
    return args


def run_case(case: Case, peers: Peers, budget: Budget, seed: int) -> dict:
    """Build every library's implementation, check the outputs on one input, time each."""
    rng = np.random.default_rng(seed)
    impls, shape, exact = case.build(rng, peers)
    x0 = random_input(rng, shape)
    truth = None if exact is None else exact(x0)
    out = {"family": case.family, "size": case.size, "flops": case.flops, "bytes": case.bytes}
    reference = None
    for name, impl in impls.items():
        entry = {}
        if impl.compile is not None:
            start = time.perf_counter()
            entry["memory_bytes"] = impl.compile(x0)
            entry["compile_s"] = time.perf_counter() - start
        impl.peak_bytes()  # the peak counts from here
        start = time.perf_counter()
        y = impl.read(impl.call(impl.fresh(x0)))
        entry["first_call_s"] = time.perf_counter() - start
        if reference is None:
            reference = y
        else:
            entry["rel_diff_vs_jaxlinops"] = rel_l2(y, reference)
        if truth is not None:
            entry["rel_error_vs_exact"] = rel_l2(y, truth)
        entry.update(time_impl(impl, rng, shape, np.complex64, budget))
        peak = impl.peak_bytes()
        if peak is not None:
            entry["peak_bytes"] = peak
        out[name] = entry
        gc.collect()
    return out


def main(argv=None) -> int:
    # one simulated CPU device per core (before JAX starts), for the rows that split the
    # Toeplitz normal and CG-SENSE by coils over the devices
    jax.config.update("jax_num_cpu_devices", os.cpu_count() or 1)
    args = parse_args(argv)
    budget = QUICK if args.quick else Budget(cap_s=args.cap_s)
    gpu = jax.default_backend() != "cpu"
    peers = Peers.load(set(args.peers.split(",")), gpu)
    if peers.torch is not None and args.torch_threads:
        peers.torch.set_num_threads(args.torch_threads)
    missing = [p for p in args.peers.split(",") if p and getattr(peers, p) is None]
    if missing:
        print(f"peers not used here: {', '.join(missing)}", file=sys.stderr)
    pattern = re.compile(args.cases, re.IGNORECASE)
    devices = len(jax.devices())
    cases = all_cases(args.quick, args.finufft_eps, devices)
    cases = [c for c in cases if pattern.search(c.label)]
    machine = machine_info()
    if peers.torch is not None:
        machine["torch_device"] = str(peers.torch_device)
        machine["torch_threads"] = peers.torch.get_num_threads()
    wall = time.perf_counter()
    machine["peaks"] = measure_peaks(args.quick)
    results = []
    # the libraries' own objects stay for the whole run: freezing them keeps the full
    # collection after each implementation (run_case) to the objects made since
    gc.freeze()
    # a bar over the cases in a terminal or notebook (jaxlinops' progress setting)
    for case in iterate(cases, "benchmark cases", tqdm_kwargs={"leave": True}):
        print(f"running {case.label} ...", file=sys.stderr, flush=True)
        results.append(run_case(case, peers, budget, args.seed))
    machine["loadavg_end"] = list(os.getloadavg())
    machine["total_s"] = time.perf_counter() - wall
    record = {"machine": machine, "settings": vars(args), "results": results}
    text = report.markdown(record)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
