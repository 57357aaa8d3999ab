"""Bad inputs to the PyTorch bridge: `to_jax`, `to_torch`, `torch_linop` and the module it
returns, `from_torchlinops`. The rule: a wrong kind of object or dtype (or layout) is a
`TypeError`, a wrong shape, size or device a `ValueError`. Empty where torch is not
installed; the `from_torchlinops` entries need torchlinops too."""

from __future__ import annotations

import importlib.util
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import jaxlinops as jl

from . import Raises

CASES: list[Raises] = []

if importlib.util.find_spec("torch") is not None:
    import torch

    import interop

    def dense() -> jl.NamedLinop:
        return jl.Dense(np.ones((3, 4)), "M N", "N", "M")

    def module():
        return interop.torch_linop(dense())

    def quiet(make):
        """`make()`, without torch's warnings about its experimental tensor kinds
        (complex32, sparse CSR, nested, quantized)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return make()

    def complex32():
        return quiet(lambda: torch.ones(4, dtype=torch.complex32))

    def without_x64(call):
        """`call()` with 64-bit JAX types switched off (restored after)."""
        x64 = jax.config.jax_enable_x64
        jax.config.update("jax_enable_x64", False)
        try:
            return call()
        finally:
            jax.config.update("jax_enable_x64", x64)

    F64 = {"dtype": torch.float64}
    CASES += [
        Raises(f"interop-{name}", call, exc, match)
        for name, call, exc, match in [
            # -------------------------------------------------------------- to_jax
            ("to-jax-ndarray", lambda: interop.to_jax(np.ones(3)), TypeError,
             r"`interop.to_jax` expects a torch.Tensor; got ndarray"),
            ("to-jax-list", lambda: interop.to_jax([1.0, 2.0]), TypeError,
             r"`interop.to_jax` expects a torch.Tensor; got list"),
            ("to-jax-complex32", lambda: interop.to_jax(complex32()), TypeError,
             r"`interop.to_jax`: torch.complex32 has no JAX counterpart"),
            ("to-jax-sub-byte-int4", lambda: interop.to_jax(torch.zeros(4, dtype=torch.int4)),
             TypeError, r"`interop.to_jax`: torch.int4 has no JAX counterpart"),
            ("to-jax-quantized", lambda: interop.to_jax(quiet(
                lambda: torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.qint8))),
             TypeError, r"`interop.to_jax`: torch.qint8 has no JAX counterpart"),
            ("to-jax-sparse-coo", lambda: interop.to_jax(torch.eye(3).to_sparse()), TypeError,
             r"`interop.to_jax` expects a dense \(strided\) tensor; got a torch.sparse_coo"),
            ("to-jax-sparse-csr", lambda: interop.to_jax(quiet(torch.eye(3).to_sparse_csr)),
             TypeError, r"`interop.to_jax` expects a dense .* got a torch.sparse_csr"),
            ("to-jax-nested", lambda: interop.to_jax(quiet(
                lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]))),
             TypeError, r"`interop.to_jax` expects a dense .* got a nested tensor"),
            ("to-jax-float64-without-x64",
             lambda: without_x64(lambda: interop.to_jax(torch.ones(3, **F64))), TypeError,
             r"`interop.to_jax`: a torch.float64 tensor needs 64-bit JAX types"),
            ("to-jax-meta-device", lambda: interop.to_jax(torch.empty(3, device="meta")),
             ValueError, r"`interop.to_jax`: JAX cannot import a torch.float32 tensor on meta"),
            # ------------------------------------------------------------ to_torch
            ("to-torch-tensor", lambda: interop.to_torch(torch.ones(2)), TypeError,
             r"`interop.to_torch` expects a jax.Array; got Tensor"),
            ("to-torch-ndarray", lambda: interop.to_torch(np.ones(2)), TypeError,
             r"`interop.to_torch` expects a jax.Array; got ndarray"),
            ("to-torch-float", lambda: interop.to_torch(1.0), TypeError,
             r"`interop.to_torch` expects a jax.Array; got float"),
            ("to-torch-traced", lambda: jax.jit(interop.to_torch)(jnp.ones(2)), TypeError,
             r"`interop.to_torch` got a traced value"),
            ("to-torch-prng-key", lambda: interop.to_torch(jax.random.key(0)), TypeError,
             r"`interop.to_torch`: dtype key<fry> has no torch counterpart"),
            ("to-torch-int4", lambda: interop.to_torch(jnp.zeros(4, jnp.int4)), TypeError,
             r"`interop.to_torch`: dtype int4 has no torch counterpart"),
            # --------------------------------------------------------- torch_linop
            ("torch-linop-ndarray", lambda: interop.torch_linop(np.ones((3, 4))), TypeError,
             r"`interop.torch_linop` expects a NamedLinop; got ndarray"),
            ("torch-linop-class", lambda: interop.torch_linop(jl.Dense), TypeError,
             r"`interop.torch_linop` expects a NamedLinop; got the class Dense"),
            ("torch-linop-tensor", lambda: interop.torch_linop(torch.ones(3, 4)), TypeError,
             r"`interop.torch_linop` expects a NamedLinop; got Tensor"),
            # ---------------------------------------------- the module's input x
            ("module-ndarray", lambda: module()(np.ones(4)), TypeError,
             r"`Dense` expects a torch.Tensor; got ndarray"),
            ("module-jax-array", lambda: module()(jnp.ones(4)), TypeError,
             r"`Dense` expects a torch.Tensor; got ArrayImpl"),
            ("module-adjoint-list", lambda: module().H([1.0, 2.0, 3.0]), TypeError,
             r"`Dense.H` expects a torch.Tensor; got list"),
            ("module-wrong-size", lambda: module()(torch.ones(5, **F64)), ValueError,
             r"`Dense` expected dim N with size 4 in its input \(N\); got .* shape \(5,\)"),
            ("module-wrong-ndim", lambda: module()(torch.ones(2, 4, **F64)), ValueError,
             r"`Dense` received incompatible input of shape \(2, 4\): expected dims \(N\)"),
            ("module-scalar", lambda: module()(torch.tensor(1.0, **F64)), ValueError,
             r"`Dense` received incompatible input of shape \(\): expected dims \(N\)"),
            ("module-adjoint-wrong-size", lambda: module().H(torch.ones(4, **F64)),
             ValueError, r"`Dense` expected dim M with size 3 in its input \(M\)"),
            ("module-normal-wrong-size", lambda: module().N(torch.ones(3, **F64)),
             ValueError, r"`Dense` expected dim N with size 4 in its input \(N\)"),
            ("module-float8", lambda: module()(torch.ones(4).to(torch.float8_e4m3fn)),
             TypeError, r"`Dense` expects a tensor of an integer, bool or float16.*"
                        r"got torch.float8_e4m3fn"),
            ("module-complex32", lambda: module()(complex32()), TypeError,
             r"`Dense` expects a tensor of .*complex128 dtype; got torch.complex32"),
            ("module-sparse", lambda: module()(torch.ones(4, **F64).to_sparse()), TypeError,
             r"`interop.to_jax` expects a dense \(strided\) tensor; got a torch.sparse_coo"),
            ("module-meta-device", lambda: module()(torch.empty(4, device="meta", **F64)),
             ValueError, r"JAX cannot import a torch.float64 tensor on meta"),
        ]
    ]  # fmt: skip

    if importlib.util.find_spec("torchlinops") is not None:
        with warnings.catch_warnings():  # torch's deprecations, as `pytest.importorskip`
            warnings.simplefilter("ignore", DeprecationWarning)
            import torchlinops as tl

        def tl_dense(weight):
            return tl.Dense(weight, ("M", "N"), ("N",), ("M",))

        CASES += [
            Raises(f"interop-from-torchlinops-{name}", call, exc, match)
            for name, call, exc, match in [
                ("none", lambda: interop.from_torchlinops(None), TypeError,
                 r"`interop.from_torchlinops` expects a torchlinops NamedLinop; got NoneType"),
                ("class", lambda: interop.from_torchlinops(tl.Identity), TypeError,
                 r"`interop.from_torchlinops` expects a torchlinops NamedLinop; got type"),
                ("nn-module", lambda: interop.from_torchlinops(torch.nn.Linear(2, 2)),
                 TypeError, r"expects a torchlinops NamedLinop; got Linear"),
                ("jaxlinops-operator", lambda: interop.from_torchlinops(dense()), TypeError,
                 r"expects a torchlinops NamedLinop; got Dense"),
                ("torch-linop-module", lambda: interop.from_torchlinops(module()), TypeError,
                 r"expects a torchlinops NamedLinop; got TorchLinop"),
                ("unsupported-class", lambda: interop.from_torchlinops(tl.Sleep(0.0, ("X",))),
                 TypeError, r"cannot convert the torchlinops operator `Sleep`; supported: Add"),
                ("unsupported-in-chain", lambda: interop.from_torchlinops(
                    tl.Chain(tl.Identity(("X",)), tl.Sleep(0.0, ("X",)))),
                 TypeError, r"cannot convert the torchlinops operator `Sleep`"),
                ("complex32-weight",
                 lambda: interop.from_torchlinops(tl_dense(quiet(
                     lambda: torch.ones(3, 4, dtype=torch.complex32)))),
                 TypeError, r"`interop.to_jax`: torch.complex32 has no JAX counterpart"),
                ("sparse-weight",
                 lambda: interop.from_torchlinops(tl_dense(torch.ones(3, 4).to_sparse())),
                 TypeError, r"`interop.to_jax` expects a dense \(strided\) tensor"),
                ("float64-without-x64", lambda: without_x64(
                    lambda: interop.from_torchlinops(tl_dense(torch.ones(3, 4, **F64)))),
                 TypeError, r"a torch.float64 tensor needs 64-bit JAX types"),
                ("diagonal-ellipsis-after-a-dim", lambda: interop.from_torchlinops(
                    tl.Diagonal(torch.ones(3), ("C", "..."))),
                 ValueError, r"a Diagonal with ioshape \('C', '...'\)"),
                ("meta-weight", lambda: interop.from_torchlinops(
                    tl_dense(torch.ones(3, 4, device="meta"))),
                 ValueError, r"JAX cannot import a torch.float32 tensor on meta"),
            ]
        ]  # fmt: skip
