"""The ISMRMRD XML header, read and written through the `ismrmrd` package's schema
classes (`ismrmrd.xsd`): the one encoding space the readers support, as an `Encoding`."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

AXES = ("x", "y", "z")


@dataclass(frozen=True)
class Encoding:
    """An encoding space, per axis x, y, z.

    - `encoded`, `recon`: the encoded and reconstruction matrix sizes.
    - `encoded_fov`, `recon_fov`: their fields of view in mm.
    - `centers`: `encodingLimits` `kspace_encoding_step_1` and `_2` centres (the encode
      step of k = 0), None where the header gives no limits.
    - `trajectory`: `"cartesian"`, `"radial"`, ... (the header's `trajectory`).
    """

    encoded: tuple[int, ...]
    recon: tuple[int, ...]
    encoded_fov: tuple[float, ...]
    recon_fov: tuple[float, ...]
    centers: tuple[int | None, int | None] = (None, None)
    trajectory: str = "cartesian"

    @property
    def ndim(self) -> int:
        """3 when the encoded matrix has more than one z step, else 2."""
        return 3 if self.encoded[2] > 1 else 2


def parse_header(ismrmrd: ModuleType, xml: bytes | str, where: str) -> Encoding:
    """The one encoding space of the XML header `xml` (read from `where`, named in errors)."""
    try:
        header = ismrmrd.xsd.CreateFromDocument(xml)
    except (ValueError, TypeError) as error:  # xsdata's ParserError is a ValueError
        raise ValueError(f"ISMRMRD XML header ({where}) does not parse: {error}") from error
    if len(header.encoding) != 1:
        raise ValueError(
            f"ISMRMRD header ({where}) has {len(header.encoding)} encoding spaces (encoding); "
            "read_ismrmrd reads files with one."
        )
    enc = header.encoding[0]
    limits = enc.encodingLimits
    steps = (limits.kspace_encoding_step_1, limits.kspace_encoding_step_2)
    return Encoding(
        encoded=_sizes(enc.encodedSpace.matrixSize),
        recon=_sizes(enc.reconSpace.matrixSize),
        encoded_fov=_sizes(enc.encodedSpace.fieldOfView_mm, float),
        recon_fov=_sizes(enc.reconSpace.fieldOfView_mm, float),
        centers=(_center(steps[0]), _center(steps[1])),
        trajectory=enc.trajectory.value,
    )


def _sizes(space, kind: type = int) -> tuple:
    return tuple(kind(getattr(space, axis)) for axis in AXES)


def _center(limit) -> int | None:
    return None if limit is None else int(limit.center)


def build_header(ismrmrd: ModuleType, encoding: Encoding, lines: tuple[int, int]) -> str:
    """The XML header of a file with the one encoding space `encoding`; `lines` are the
    numbers of encode steps 1 and 2 (their limits run from 0, centred at half)."""
    x = ismrmrd.xsd

    def space(matrix, fov):
        return x.encodingSpaceType(
            matrixSize=x.matrixSizeType(**dict(zip(AXES, matrix))),
            fieldOfView_mm=x.fieldOfViewMm(**dict(zip(AXES, fov))),
        )

    step1, step2 = (x.limitType(minimum=0, maximum=n - 1, center=n // 2) for n in lines)
    limits = x.encodingLimitsType(
        kspace_encoding_step_1=step1,
        kspace_encoding_step_2=step2,
        slice=x.limitType(minimum=0, maximum=0, center=0),
    )
    header = x.ismrmrdHeader(
        # a placeholder: the files written here are synthetic (3 T, 1H)
        experimentalConditions=x.experimentalConditionsType(H1resonanceFrequency_Hz=127_740_000),
        encoding=[
            x.encodingType(
                encodedSpace=space(encoding.encoded, encoding.encoded_fov),
                reconSpace=space(encoding.recon, encoding.recon_fov),
                encodingLimits=limits,
                trajectory=x.trajectoryType(encoding.trajectory),
            )
        ],
    )
    return x.ToXML(header)
