"""`ToDevice`: move arrays between devices; `DeviceSpec`, torchlinops' device record."""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax

from .._arrays import Device, as_device
from .._core import Identity, NamedLinop, SameDims, Tiling, dims_field
from .._dims import Dims, DimsLike, as_dims, fmt


def resolve_device(device: object, what: str) -> Device:
    """`device` as a `jax.Device`, as torchlinops' `resolve_device` makes a torch device.

    Accepts a `jax.Device`, a [`DeviceSpec`][] or a device string: `"cpu"`, `"gpu"`,
    `"tpu"` (JAX's first device of that platform) or `"<platform>:<n>"` (its `n`-th);
    torch's `"cuda"` names JAX's `"gpu"` platform. A platform JAX does not have (`"cuda:0"`
    on a machine without a GPU) raises a ValueError; `what` names the argument in errors.
    """
    return as_device(device, what)


@dataclasses.dataclass
class DeviceSpec:
    """torchlinops' record of a device and its CUDA streams: `DeviceSpec(jax.devices()[1])`
    or `DeviceSpec("cpu")`.

    **Fields:**

    - `device`: a `jax.Device` or a device string (see `resolve_device`; default:
      JAX's default device), stored as the `jax.Device`.
    - `compute_stream`, `transfer_stream`: torch CUDA streams; accepted and ignored (XLA
      schedules computation and transfers itself).
    """

    device: Device = dataclasses.field(default_factory=lambda: jax.devices()[0])
    compute_stream: object = None
    transfer_stream: object = None

    def __post_init__(self):
        if isinstance(self.device, DeviceSpec):
            raise TypeError("`DeviceSpec(device=...)` expects a device; got a DeviceSpec.")
        self.device = resolve_device(self.device, "`DeviceSpec(device=...)`")

    def p2p_setup(self, other_device: Device) -> None:
        """Does nothing: torchlinops creates CUDA streams for peer-to-peer copies here."""

    @property
    def type(self) -> str:
        """The device's platform (`"cpu"`, `"gpu"`, `"tpu"`), as torch's `device.type`."""
        return self.device.platform


class ToDevice(SameDims):
    r"""$y = x$, transferred from `idevice` to `odevice`: `ioshape -> ioshape`.

    The adjoint transfers back; the normal is the `Identity`. A device of `None` is JAX's
    default device. Inside `jax.jit` one program runs on one set of devices, so there the
    transfer leaves the placement to the compiler (the values are unchanged); to run
    across several devices in one program, use sharding.
    """

    idevice: Device | None = eqx.field(static=True)
    odevice: Device | None = eqx.field(static=True)
    ioshape: Dims = dims_field()

    def __init__(
        self,
        idevice: Device | DeviceSpec | None,
        odevice: Device | DeviceSpec | None,
        ioshape: DimsLike = None,
    ):
        """**Arguments:**

        - `idevice`: the device of the input, a `jax.Device` or a `DeviceSpec` (`None`:
          the default device).
        - `odevice`: the device of the output, likewise.
        - `ioshape`: dims of input and output (default `"..."`).
        """
        self.idevice = idevice.device if isinstance(idevice, DeviceSpec) else idevice
        self.odevice = odevice.device if isinstance(odevice, DeviceSpec) else odevice
        self.ioshape = as_dims(ioshape, "...")

    def __check_init__(self):
        for arg, device in (("idevice", self.idevice), ("odevice", self.odevice)):
            if device is not None and not isinstance(device, Device):
                raise TypeError(
                    f"`ToDevice({arg}=...)` expects a jax.Device (e.g. `jax.devices()[0]`) or "
                    f"None; got {type(device).__name__} {device!r}."
                )

    @property
    def ispec(self) -> DeviceSpec:
        """torchlinops' `ispec`: the input device (resolved) as a `DeviceSpec`."""
        return DeviceSpec(_resolve(self.idevice))

    @property
    def ospec(self) -> DeviceSpec:
        """torchlinops' `ospec`: the output device (resolved) as a `DeviceSpec`."""
        return DeviceSpec(_resolve(self.odevice))

    def __repr__(self) -> str:
        """`ToDevice((N) -> (N), cpu:0 -> cpu:1)`; `default` for a device of None."""
        devices = " -> ".join(
            "default" if d is None else str(d) for d in (self.idevice, self.odevice)
        )
        return f"{self.name}({fmt(self.ishape)} -> {fmt(self.oshape)}, {devices})"

    def tiling(self) -> Tiling:
        return Tiling(batch=self.ioshape)

    def apply(self, x: jax.Array) -> jax.Array:
        return jax.device_put(x, _resolve(self.odevice))

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return jax.device_put(y, _resolve(self.idevice))

    def adjoint(self) -> NamedLinop:
        return ToDevice(self.odevice, self.idevice, self.ioshape)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        return Identity(self.ioshape) if inner is None else None


def _resolve(device: Device | None) -> Device:
    """`device`, or JAX's default device for None (`jax.default_device` or the first)."""
    if device is not None:
        return device
    # jax registers its flags at run time, so pyright cannot see `jax_default_device`
    default = jax.config.jax_default_device  # pyright: ignore[reportAttributeAccessIssue]
    if isinstance(default, Device):
        return default
    return jax.devices(default)[0] if default else jax.devices()[0]
