"""Bad inputs of `plan_batches`: not an operator, memory limits that are not a positive
number of bytes, devices that are not a sequence of distinct jax devices, an input `x`
that is not an array or does not fit the operator, an operator whose input sizes only `x`
could give, and an operator with no dim that can be split."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxlinops as jl

from . import Raises

A = jl.Dense(jnp.ones((4, 3), jnp.complex64), "C N", "N", "C")  # splittable along C
FFT = jl.FFT(2, grid_shapes=("Nx Ny", "Kx Ky"))  # sizes fixed only by the input
LIMIT = r"`plan_batches\(memory_limit=\.\.\.\)`"
DEVICES = r"`plan_batches\(devices=\.\.\.\)`"


def plan(op=A, **kwargs):
    return jl.plan_batches(op, **kwargs)


CASES = [
    Raises(
        "planner_not_a_linop",
        lambda: plan(np.eye(3)),
        TypeError,
        r"`plan_batches`.*NamedLinop.*ndarray",
    ),
    Raises(
        "planner_memory_limit_zero",
        lambda: plan(memory_limit=0),
        ValueError,
        LIMIT + r".*at least 1.*0",
    ),
    Raises(
        "planner_memory_limit_negative",
        lambda: plan(memory_limit=-1e9),
        ValueError,
        LIMIT + r".*at least 1",
    ),
    Raises(
        "planner_memory_limit_fraction",
        lambda: plan(memory_limit=0.5e3 + 0.25),
        ValueError,
        LIMIT + r".*not integral",
    ),
    Raises(
        "planner_memory_limit_text", lambda: plan(memory_limit="8GB"), TypeError, LIMIT + r".*'8GB'"
    ),
    Raises(
        "planner_devices_one_device",
        lambda: plan(devices=jax.devices()[0]),
        TypeError,
        DEVICES + r".*sequence of jax.Device.*Cpu",
    ),
    Raises(
        "planner_devices_text",
        lambda: plan(devices="cpu"),
        TypeError,
        DEVICES + r".*sequence of jax.Device.*str",
    ),
    Raises(
        "planner_devices_not_devices",
        lambda: plan(devices=[0, 1]),
        TypeError,
        DEVICES + r".*jax.Device entries.*int",
    ),
    Raises(
        "planner_devices_repeated",
        lambda: plan(devices=[jax.devices()[0]] * 2),
        ValueError,
        DEVICES + r".*only once",
    ),
    Raises("planner_devices_empty", lambda: plan(devices=[]), ValueError, DEVICES + r".*empty"),
    Raises(
        "planner_x_not_an_array",
        lambda: plan(x=[1.0, 2.0, 3.0]),
        TypeError,
        r"`plan_batches\(x=\.\.\.\)`.*array.*list",
    ),
    Raises(
        "planner_x_wrong_size",
        lambda: plan(x=jnp.ones(5, jnp.complex64)),
        ValueError,
        r"`plan_batches\(x=\.\.\.\)`.*dim N with size 3.*\(5,\)",
    ),
    Raises(
        "planner_input_sizes_unknown",
        lambda: plan(FFT),
        ValueError,
        r"`plan_batches`: FFT.*does not fix the size.*'Nx', 'Ny'\].*pass `x=`",
    ),
    Raises(
        "planner_nothing_to_split",
        lambda: plan(FFT, x=jnp.ones((4, 4), jnp.complex64)),
        ValueError,
        r"`plan_batches`: FFT.*no dim that can be split",
    ),
]
