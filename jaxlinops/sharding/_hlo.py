r"""What a compiled program communicates: the collectives of its HLO text and their bytes.

`collective_bytes(compiled.as_text(), devices)` reads every collective instruction
(`all-reduce`, `all-gather`, `reduce-scatter`, `all-to-all`, `collective-permute`, and
their asynchronous `-start` forms, whose tuple shape holds the operand and then the
result) with the shape of its result, and counts the bytes each
device sends (and receives) per execution, for a group of $k$ devices (from the
instruction's `replica_groups`; else all `devices`) and a result of $s$ bytes:

| collective | bytes per device | why |
|---|---|---|
| all-reduce | $2 (k - 1) s / k$ | ring: a reduce-scatter then an all-gather |
| all-gather | $(k - 1) s / k$ | the result is the gathered array; each part comes from a peer |
| reduce-scatter | $(k - 1) s$ | the result is one of the $k$ parts of the operand |
| all-to-all | $(k - 1) s / k$ | each device keeps one of its $k$ blocks |
| collective-permute | $s$ | each device sends its block to one peer (a halo, a shift) |

A collective inside a loop body is counted once (the figures are per instruction, not per
iteration); `looped_collective_bytes` counts it once per iteration where XLA knows the
loop's trip count.
"""

from __future__ import annotations

import math
import re

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
_INSTRUCTION = re.compile(
    r"=\s*(?P<shape>\S.*?)\s+(?P<kind>" + "|".join(KINDS) + r")(?P<start>-start)?\((?P<rest>.*)$",
    re.M,
)
_ARRAY = re.compile(r"\b(?P<dtype>[a-z]+\d*)\[(?P<dims>[\d,]*)\]")
_GROUPS_LIST = re.compile(r"replica_groups=\{\{(?P<first>[\d,]*)\}")
_GROUPS_IOTA = re.compile(r"replica_groups=\[(?P<shape>[\d,]+)\]<=")
# newer XLA: replica_groups=mesh['a'=4,'b'=2] {'a'} (the groups run over the listed axes)
_GROUPS_MESH = re.compile(r"replica_groups=mesh\[(?P<mesh>[^\]]*)\]\s*\{(?P<axes>[^}]*)\}")
_MESH_AXIS = re.compile(r"'(?P<name>[^']+)'=(?P<size>\d+)")
_COMPUTATION = re.compile(r"^(?:ENTRY )?%(?P<name>[^\s(]+) ", re.M)
_LOOP = re.compile(r'\bwhile\(.*\bbody=%(?P<body>[^\s,]+).*"known_trip_count":\{"n":"(?P<n>\d+)')
DTYPE_BYTES = {
    "pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
    "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16,
}  # fmt: skip


def collective_bytes(hlo_text: str, devices: int) -> dict[str, float]:
    """Bytes each device sends per execution of the HLO module `hlo_text`, per kind of
    collective (only the kinds it has; an empty dict: no communication). `devices`: the
    group size of a collective whose `replica_groups` are empty (all devices)."""
    totals: dict[str, float] = {}
    for match in _INSTRUCTION.finditer(hlo_text):
        kind, shape = match["kind"], match["shape"]
        if match["start"] and shape.startswith("("):
            shape = list(_ARRAY.finditer(shape))[1][0]  # an async start: (operand, result, ...)
        size = _shape_bytes(shape)
        k = _group_size(match["rest"], devices)
        factor = {
            "all-reduce": 2 * (k - 1) / k,
            "reduce-scatter": k - 1,
            "collective-permute": 1,
        }.get(kind, (k - 1) / k)
        totals[kind] = totals.get(kind, 0.0) + factor * size
    return totals


def _shape_bytes(shape: str) -> int:
    """Bytes of an HLO shape: one array `c64[8,4]{1,0}` or a tuple of them."""
    total = 0
    for array in _ARRAY.finditer(shape):
        dims = [int(d) for d in array["dims"].split(",") if d]
        total += DTYPE_BYTES.get(array["dtype"], 0) * math.prod(dims)
    return total


def _group_size(attributes: str, devices: int) -> int:
    """The number of devices in each group of a collective (its first replica group)."""
    listed = _GROUPS_LIST.search(attributes)
    if listed is not None and listed["first"]:
        return len(listed["first"].split(","))
    iota = _GROUPS_IOTA.search(attributes)
    if iota is not None:
        return int(iota["shape"].split(",")[-1])
    mesh = _GROUPS_MESH.search(attributes)
    if mesh is not None:
        sizes = {m["name"]: int(m["size"]) for m in _MESH_AXIS.finditer(mesh["mesh"])}
        axes = re.findall(r"'([^']+)'", mesh["axes"])
        return math.prod(sizes[a] for a in axes)
    return devices


def looped_collective_bytes(text: str, devices: int) -> dict[str, float]:
    """`collective_bytes` of a compiled program's HLO `text` per application: those in a
    loop's body (its computation's) once per iteration (its `known_trip_count`; nested
    loops multiply; a loop of unknown trip count: once)."""
    heads = list(_COMPUTATION.finditer(text))
    ends = [h.start() for h in heads[1:]] + [len(text)]
    bodies = {h["name"]: text[h.start() : end] for h, end in zip(heads, ends)}
    times = dict.fromkeys(bodies, 1)
    for name in reversed(bodies):  # HLO text defines a computation before its callers
        for loop in _LOOP.finditer(bodies[name]):
            times[loop["body"]] = times[name] * int(loop["n"])
    totals: dict[str, float] = {}
    for name, body in bodies.items():
        for kind, size in collective_bytes(body, devices).items():
            totals[kind] = totals.get(kind, 0.0) + times[name] * size
    return totals
