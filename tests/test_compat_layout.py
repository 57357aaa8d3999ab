"""torchlinops' module layout in jaxlinops: the module paths users import from
(`jaxlinops.nameddim`, `jaxlinops.utils`, `jaxlinops.linops.split`, ...), `NamedDimension`
and `NamedDimCollection`, the utils and `config.using`; each compared with torchlinops
0.8.3 on the same input."""

import importlib
import pkgutil

import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl
from jaxlinops import config, utils
from jaxlinops.nameddim import ND, AnyDim, Dim, NamedDimCollection, NamedShape

torch = pytest.importorskip("torch")
tl = pytest.importorskip("torchlinops")
tnd = importlib.import_module("torchlinops.nameddim")
tutils = importlib.import_module("torchlinops.utils")

# torchlinops.linops names that other parts of jaxlinops provide or deliberately omit
NOT_HERE = {"DeviceSpec", "ResolvedBatchSpec", "parallel_execute"}


def linops_modules():
    package = importlib.import_module("torchlinops.linops")
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"torchlinops.linops.{info.name}")
        if set(getattr(module, "__all__", ())) - NOT_HERE:
            yield info.name, module.__all__
    yield "chain", ["Chain"]
    yield "nufft", ["NUFFT"]


@pytest.mark.parametrize("name, names", list(linops_modules()))
def test_linops_module_paths(name, names):
    """`from torchlinops.linops.<m> import X` works with `jaxlinops.linops.<m>`, and `X` is
    the operator jaxlinops exports at the top level."""
    module = importlib.import_module(f"jaxlinops.linops.{name}")
    for n in set(names) - NOT_HERE:
        assert getattr(module, n) is getattr(jl, n), n


def test_split_module():
    from jaxlinops.linops.split import BatchSpec, create_batched_linop, split_linop

    assert (BatchSpec, create_batched_linop, split_linop) == (
        jl.BatchSpec,
        jl.create_batched_linop,
        jl.split_linop,
    )


def test_dim_without_argument():
    assert jl.Dim() == tl.Dim() == () == Dim()


def test_named_dimension_as_torchlinops():
    cases = [("A", 0), ("A", 1), ("Nx", 2), ("()", 0), ("()", 3), ("...", 0)]
    for name, i in cases:
        ours, theirs = ND(name, i), tnd.NamedDimension(name, i)
        assert repr(ours) == repr(theirs) and ours == theirs and hash(ours) == hash(theirs)
        assert repr(ours + 2) == repr(theirs + 2)
        assert repr(ours.next_unused()) == repr(theirs.next_unused())
        avoid = (str(theirs), str(theirs + 1))
        assert repr(ours.next_unused(avoid)) == repr(theirs.next_unused(avoid))
    for s in ("A1", "Kx", "...", ("A", "B2"), ["C"]):
        ours, theirs = ND.infer(s), tnd.NamedDimension.infer(s)
        assert repr(ours) == repr(theirs)
        if not isinstance(s, str):
            assert type(ours) is type(theirs)
            assert [(d.name, d.i) for d in ours] == [(d.name, d.i) for d in theirs]
    assert {ND("A"): 10}["A"] == 10 and ND("A", 1) == "A1"
    assert repr(AnyDim()) == repr(tnd.AnyDim()) and repr(AnyDim(2)) == repr(tnd.AnyDim(2))
    with pytest.raises(TypeError, match="Unsupported NamedDimension add"):
        ND("A") + "B"
    with pytest.raises(AttributeError, match="immutable"):
        ND("A").i = 3


def test_named_dimensions_are_dims_of_operators():
    """An operator built with NamedDimensions stores their plain names."""
    A = jl.Diagonal(jnp.ones(3), (ND("N"),))
    assert A.ishape == ("N",) and type(A.ishape[0]) is str


@pytest.mark.parametrize(
    "shapes, key, new",
    [
        ({"shape1": ("A", "B"), "shape2": ("B", "C")}, "shape1", ("D", "E")),
        ({"a": ("A", "B"), "b": ("B", "A")}, "a", ("B", "A")),  # a swap, applied at once
        ({"s": ("...", "C"), "t": ("C", "X")}, "s", ("A", "B", "Z")),
        ({"s": ("A", "()"), "t": ("A",)}, "s", ("Q", "R")),
        ({"s": "A", "t": ("A", "B")}, "s", "Z"),
    ],
)
def test_named_dim_collection_as_torchlinops(shapes, key, new):
    ours, theirs = NamedDimCollection(**shapes), tnd.NamedDimCollection(**shapes)
    setattr(ours, key, new)
    setattr(theirs, key, new)
    for name in shapes:
        assert repr(getattr(ours, name)) == repr(getattr(theirs, name)), name


def test_named_dim_collection_errors():
    c = NamedDimCollection(s=("A", "B"))
    with pytest.raises(ValueError, match=r"`s`: the new shape \(C,\) is not compatible"):
        c.s = ("C",)
    with pytest.raises(ValueError, match="renamed to both"):
        NamedDimCollection(s=("A", "A")).s = ("B", "C")
    with pytest.raises(AttributeError, match="'t' is not a shape"):
        _ = c.t


def test_named_shape():
    s = NamedShape(("Nx", "Ny"), ("Kx", "Ky"))
    t = tnd.NamedShape(("Nx", "Ny"), ("Kx", "Ky"))
    c, tc = NamedShape(("C",)), tnd.NamedShape(("C",))
    for ours, theirs in ((s, t), (s.H, t.H), (s.N, t.N), (s + c, t + tc)):
        assert repr(ours.ishape) == repr(theirs.ishape)
        assert repr(ours.oshape) == repr(theirs.oshape)
    assert repr(s.N.oshape) == "(Nx1, Ny1)"
    assert s == NamedShape(("Nx", "()"), ("...",)) and s != s.H
    assert repr(NamedShape().ishape) == repr(tnd.NamedShape(None).ishape)


def test_shape_helpers_as_torchlinops():
    for dims in (("C", "Nx", "Ny", "T"), ("Kx", "C", "Kz")):
        for fn in ("N2K", "K2N"):  # torchlinops' take NamedDimensions
            want = getattr(tnd, fn)(tnd.NamedDimension.infer(dims))
            assert repr(getattr(jl.nameddim, fn)(dims)) == repr(want)
    for d in (1, 2, 3):
        for k in (False, True):
            assert jl.nameddim.get_nd_shape(d, k) == tnd.get_nd_shape(d, k)
    assert jl.nameddim.fake_dims("B", 3) == tnd.fake_dims("B", 3)
    for val in ("A", "C", "D"):
        assert jl.nameddim.partition(("A", "B", "C"), val) == tnd.partition(("A", "B", "C"), val)


def test_is_adjoint():
    A = jl.Dense(rand(0, (3, 4)), "M N", "N", "M")
    x, y = rand(1, (4,)), rand(2, (3,))
    assert bool(utils.is_adjoint(A, x, y))
    wrong = jl.Dense(rand(0, (3, 4)), "M N", "N", "M") + 0.1 * jl.Dense(
        jnp.ones((3, 4)), "M N", "N", "M"
    )
    broken = type("Broken", (), {"__call__": lambda self, v: wrong(v), "H": A.H})()
    assert not bool(utils.is_adjoint(broken, x, y))


@pytest.mark.parametrize("dim", [None, (-1,), (0, 2), 1])
def test_centered_ffts_as_torchlinops(dim):
    x = np.asarray(rand(3, (4, 5, 6)))
    tx = torch.from_numpy(x.copy())
    tdim = (dim,) if isinstance(dim, int) else dim
    for ours, theirs in ((utils.cfftn, tutils.cfftn), (utils.cifftn, tutils.cifftn)):
        np.testing.assert_allclose(ours(x, dim), theirs(tx, dim=tdim).numpy(), atol=1e-12)
    np.testing.assert_allclose(utils.cfft2(x), tutils.cfft2(tx).numpy(), atol=1e-12)
    np.testing.assert_allclose(utils.cifft(x), tutils.cifft(tx).numpy(), atol=1e-12)


def test_small_utils_as_torchlinops():
    assert utils.ceildiv(7, 3) == tutils.ceildiv(7, 3) == 3
    assert list(utils.batch_iterator(5, 2)) == list(tutils.batch_iterator(5, 2))
    grid = {"a": [1, 2], "b": [3, 4]}
    assert utils.dict_product(grid) == tutils.dict_product(grid)
    for vals in ((None, 2), (1, None), (1, 2, None), (1.0, 3)):
        assert utils.default_to(*vals) == tutils.default_to(*vals)
    assert utils.default_to(1.0, 3, typecast=True) == tutils.default_to(1.0, 3, typecast=True)


def test_config_flags_and_using():
    tconfig = tl.config
    for key in tconfig.ConfigContext.VALID_KEYS - {"log_device_transfers"}:
        assert getattr(config, key) == getattr(tconfig, key), key  # same defaults
    assert config.progress is None
    with config.using(reduce_identity_in_normal=False, shape_inference=True, progress=False):
        assert (config.reduce_identity_in_normal, config.shape_inference) == (False, True)
        assert config.progress is False
    assert (config.reduce_identity_in_normal, config.shape_inference) == (True, False)
    with pytest.raises(RuntimeError), config.using(nufft_backend="jax"):
        assert config.nufft_backend == "jax"
        raise RuntimeError
    assert config.nufft_backend == "auto"
    with pytest.raises(ValueError, match=r"`config.using`: Invalid config key 'verbose'"):
        config.using(verbose=True)
    with pytest.raises(TypeError, match=r"`config.using\(progress=...\)` expects a bool or None"):
        config.using(progress="yes")
    assert config.inner_not_relevant(None) and config.inner_not_relevant(jl.Identity("N"))
    with config.using(reduce_identity_in_normal=False):
        assert not config.inner_not_relevant(jl.Identity("N"))


def test_more_utils_as_torchlinops():
    x, y = np.asarray(rand(4, (3,))), np.asarray(rand(5, (3,)))
    want = tutils.inner(torch.from_numpy(x.copy()), torch.from_numpy(y.copy())).numpy()
    np.testing.assert_allclose(utils.inner(x=x, y=y), want, rtol=1e-12)
    dicts = ({"a": 1}, None, {"a": 2, "b": 3})
    assert utils.default_to_dict(*dicts) == tutils.default_to_dict(*dicts)
    a = np.arange(6.0).reshape(2, 3)
    want = tutils.end_pad_with_zeros(torch.from_numpy(a.copy()), 1, 2).numpy()
    np.testing.assert_array_equal(utils.end_pad_with_zeros(a, 1, 2), want)
    assert jl.cfftn is utils.cfftn and jl.default_to is utils.default_to
