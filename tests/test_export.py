"""Shippable reconstructions: `jax.export` of jitted functions that take or return
operators, serialized to bytes and called again (in a fresh process for the SENSE
reconstruction), against numpy."""

import dataclasses
import subprocess
import sys
import textwrap

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

import jaxlinops as jl

N, C, LAM = 8, 3, 0.1

# The receiving side: jax, numpy and jaxlinops (whose import registers the operator classes
# for deserialization), but not this file or any code that built the reconstruction. The
# operator comes from the exported function's own input structure, filled with new arrays.
RECEIVER = textwrap.dedent(
    """
    import sys
    import jax, numpy as np
    jax.config.update("jax_enable_x64", True)
    import jaxlinops  # registers the operator classes with jax.export
    from jax import export

    exported = export.deserialize(bytearray(open(sys.argv[1], "rb").read()))
    data = np.load(sys.argv[2])
    leaves = [data[f"leaf{i}"] for i in range(len(data.files))]
    args, kwargs = jax.tree_util.tree_unflatten(exported.in_tree, leaves)
    A, y = args  # the operator, rebuilt from the deserialized structure: it runs here too
    np.savez(sys.argv[3], x=exported.call(*args, **kwargs), AHy=A.H(y))
    print(type(A).__name__, A.ishape, A.oshape, [m for m in sys.modules if "test_export" in m])
    """
)


def sense_problem(seed):
    """Coil maps (sum of |S_c|^2 = 1), a k-space mask with the same number of samples for
    every seed, and data."""
    rng = np.random.default_rng(seed)
    maps = rng.standard_normal((C, N, N)) + 1j * rng.standard_normal((C, N, N))
    maps /= np.sqrt((np.abs(maps) ** 2).sum(0))
    flat = rng.permutation(N * N)[: N * N * 5 // 8]
    idx = np.unravel_index(np.sort(flat), (N, N))
    y = rng.standard_normal((C, flat.size)) + 1j * rng.standard_normal((C, flat.size))
    return maps, idx, y


def sampled_fft(idx):
    """M F: a 2-D FFT per coil, then k-space sampling."""
    F = jl.FFT(2, batch_shape=("C",))
    M = jl.Sampling([jnp.asarray(i) for i in idx], (N, N), ("K",), F.oshape[1:], batch_shape=("C",))
    return M @ F


def sense_operator(maps, idx):
    """A = M F S, with coil maps S."""
    S = jl.Dense(jnp.asarray(maps), ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))
    return sampled_fft(idx) @ S


def sense_matrix(maps, idx):
    """The same A as a dense numpy matrix [C*K, N*N], built column by column."""
    columns = []
    for e in np.eye(N * N):
        k = np.fft.fft2(maps * e.reshape(N, N), norm="ortho")
        columns.append(k[:, idx[0], idx[1]].ravel())
    return np.stack(columns, axis=1)


def recon(A, y):
    """Tikhonov-regularized CG-SENSE: (A^H A + lam I) x = A^H y."""
    AN = A.N
    lhs = AN + LAM * jl.Identity(AN.ishape, AN.oshape)
    out = jl.alg.conjugate_gradients(A=lhs, y=A.H(y), max_num_iters=60, gtol=1e-12)
    return getattr(out, "x", out)  # the array, or the solution of a CGResult


def reference(maps, idx, y):
    E = sense_matrix(maps, idx)
    x = np.linalg.solve(E.conj().T @ E + LAM * np.eye(N * N), E.conj().T @ y.ravel())
    return x.reshape(N, N)


def rel_err(got, want):
    return float(np.linalg.norm(np.asarray(got) - want) / np.linalg.norm(want))


def test_sense_reconstruction_round_trip(tmp_path):
    """Export with one operator, call in a fresh process with new maps, mask and data."""
    maps, idx, y = sense_problem(0)
    exported = export.export(jax.jit(recon))(sense_operator(maps, idx), jnp.asarray(y))
    (tmp_path / "recon.bin").write_bytes(exported.serialize())

    maps2, idx2, y2 = sense_problem(1)
    A2 = sense_operator(maps2, idx2)
    leaves = jax.tree_util.tree_leaves(((A2, jnp.asarray(y2)), {}))
    np.savez(tmp_path / "data.npz", **{f"leaf{i}": np.asarray(v) for i, v in enumerate(leaves)})
    run = subprocess.run(
        [sys.executable, "-c", RECEIVER]
        + [str(tmp_path / n) for n in ("recon.bin", "data.npz", "out.npz")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    # rebuilt as the same Chain; this file was not imported
    assert run.stdout.strip() == "Chain ('Nx', 'Ny') ('C', 'K') []"
    out = np.load(tmp_path / "out.npz")
    E2, shipped = sense_matrix(maps2, idx2), out["x"]
    assert rel_err(out["AHy"], (E2.conj().T @ y2.ravel()).reshape(N, N)) <= 1e-12
    # A^H A + lam I has eigenvalues in [0.1, 1.1] (unitary FFT, sum |S_c|^2 = 1): CG at
    # 60 iterations is converged to ~1e-13, so only rounding separates the three results
    assert rel_err(shipped, reference(maps2, idx2, y2)) <= 1e-9
    assert rel_err(shipped, jax.jit(recon)(A2, jnp.asarray(y2))) <= 1e-9
    assert rel_err(shipped, reference(maps, idx, y)) > 0.1  # new data was used


def test_exported_function_returning_operators():
    """Operators as outputs: the deserialized out_tree rebuilds them."""

    maps, idx, _ = sense_problem(2)
    # sampling built outside: inside jit its indices are checked by `equinox.error_if`, a
    # host callback, which jax.export cannot serialize
    MF = sampled_fft(idx)

    def build(maps):
        A = MF @ jl.Dense(maps, ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))
        return A, A.H, A.N

    args = (jnp.asarray(maps),)
    exported = export.deserialize(export.export(jax.jit(build))(*args).serialize())
    A, AH, AN = exported.call(*args)
    want = build(*args)
    assert jax.tree_util.tree_structure((A, AH, AN)) == jax.tree_util.tree_structure(want)
    assert [op.ishape for op in (A, AH, AN)] == [op.ishape for op in want]
    E = sense_matrix(maps, idx)
    x = np.random.default_rng(3).standard_normal((N, N)) + 0j
    assert rel_err(A(jnp.asarray(x)), (E @ x.ravel()).reshape(C, -1)) <= 1e-12
    y = E @ x.ravel()
    assert rel_err(AH(jnp.asarray(y.reshape(C, -1))), (E.conj().T @ y).reshape(N, N)) <= 1e-12
    assert rel_err(AN(jnp.asarray(x)), (E.conj().T @ E @ x.ravel()).reshape(N, N)) <= 1e-12


def test_batched_operator_over_two_devices_round_trip():
    """A BatchedLinop's static mesh and BatchDims serialize; the call runs on 2 devices."""
    maps, idx, y = sense_problem(4)
    mesh_devices = jax.devices()[:2]
    B = jl.create_batched_linop(
        sense_operator(maps[:2], idx), jl.BatchSpec({"C": 1}, device_matrix=mesh_devices)
    )
    exported = export.deserialize(
        export.export(jax.jit(lambda B, y: B.H(y)))(B, jnp.asarray(y[:2])).serialize()
    )
    assert exported.nr_devices == 2
    E = sense_matrix(maps[:2], idx)
    got = exported.call(B, jnp.asarray(y[:2]))
    assert rel_err(got, (E.conj().T @ y[:2].ravel()).reshape(N, N)) <= 1e-12


@pytest.mark.devices(2)
def test_grid_split_with_a_coil_loop_round_trip():
    """A grid split across 2 devices with a loop over coils on each: its static `BatchDim`
    records serialize (they raised TypeError, missing from a hand-kept list), and the
    deserialized call equals the unsplit operator (the split itself is checked against
    numpy in test_grid_coils.py)."""
    maps, _, _ = sense_problem(5)
    S = jl.Dense(jnp.asarray(maps), ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))
    A = jl.FFT(2, batch_shape=("C",)) @ S
    specs = [jl.BatchSpec({"Nx": N // 2}, device_matrix=jax.devices()[:2]), jl.BatchSpec({"C": 1})]
    B = jl.create_batched_linop(A, specs)
    assert isinstance(B, jl.sharding.GridSplitLinop) and B.loop is not None
    y = jnp.asarray(np.random.default_rng(6).standard_normal((C, N, N)) + 0j)
    exported = export.deserialize(export.export(jax.jit(lambda B, y: B.H(y)))(B, y).serialize())
    assert rel_err(exported.call(B, y), A.H(y)) <= 1e-12


def test_every_frozen_dataclass_and_enum_is_registered():
    """Every frozen dataclass and enum of every jaxlinops module (found by importing each
    one) can sit in a static field: each is registered when jaxlinops is imported."""
    import enum
    import importlib
    import pkgutil

    from jaxlinops._export import _VALUE_CLASSES

    found = []
    for info in pkgutil.walk_packages(jl.__path__, "jaxlinops."):
        module = importlib.import_module(info.name)
        for v in vars(module).values():
            if not isinstance(v, type) or v.__module__ != info.name or issubclass(v, eqx.Module):
                continue
            params = getattr(v, "__dataclass_params__", None)
            if (params is not None and params.frozen) or issubclass(v, enum.Enum):
                found.append(v)
    assert {"BatchDim", "Fourier", "Resize"} <= {c.__name__ for c in found}
    registered = set(_VALUE_CLASSES.values())
    assert [c.__qualname__ for c in found if c not in registered] == []


def test_every_module_class_is_registered():
    from jax._src.export._export import serialization_registry

    def subclasses(cls):
        return [c for s in cls.__subclasses__() for c in (s, *subclasses(s))]

    ours = [c for c in subclasses(eqx.Module) if c.__module__.startswith("jaxlinops.")]
    assert jl.Dense in ours and jl.Chain in ours and jl.BatchedLinop in ours
    assert [c for c in ours if c not in serialization_registry] == []
    assert jl.alg.CGResult in serialization_registry


def test_function_in_a_static_field_is_refused_by_name():
    op = jl.SimpleLinop(lambda x: 2 * x, lambda y: 2 * y, ishape=("N",), oshape=("N",))
    exported = export.export(jax.jit(lambda A, x: A(x)))(op, jnp.ones(3))
    with pytest.raises(TypeError, match=r"SimpleLinop\.\w+.*close over this operator"):
        exported.serialize()
    closed = export.export(jax.jit(lambda x: op(x)))(jnp.ones(3))  # closing over it works
    assert np.allclose(export.deserialize(closed.serialize()).call(jnp.ones(3)), 2.0)


def test_user_operator_after_register_for_export():
    @dataclasses.dataclass(frozen=True)
    class Gain:
        value: float

    class Scale(jl.NamedLinop):
        """x -> g x for a static gain g."""

        gain: Gain = eqx.field(static=True)
        ishape: tuple = jl.dims_field()
        oshape: tuple = jl.dims_field()

        def apply(self, x):
            return self.gain.value * x

        def apply_adjoint(self, y):
            return self.gain.value * y

    assert jl.register_for_export(jl.register_for_export(Scale)) is Scale  # idempotent
    op = Scale(Gain(3.0), ("N",), ("N",))
    exported = export.export(jax.jit(lambda A, x: A(x)))(op, jnp.ones(2))
    with pytest.raises(TypeError, match=r"Scale\.gain.*Gain.*register_for_export"):
        exported.serialize()
    jl.register_for_export(Gain)
    loaded = export.deserialize(exported.serialize())
    assert loaded.in_tree == exported.in_tree
    assert np.allclose(loaded.call(Scale(Gain(3.0), ("N",), ("N",)), jnp.arange(2.0)), [0, 3])
    with pytest.raises(TypeError, match="register_for_export.*expected a class"):
        jl.register_for_export(op)
