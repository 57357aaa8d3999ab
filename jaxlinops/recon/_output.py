"""Writing the command's results: the image as NIfTI (nibabel) or `.npy`, and a PNG
(matplotlib) of its magnitude."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._steps import Say

FORMATS = (".nii", ".nii.gz", ".npy")


def image_format(path: Path) -> str:
    """The format `path` names by its suffix, one of `FORMATS`; a ValueError otherwise."""
    name = path.name.lower()
    for suffix in FORMATS:
        if name.endswith(suffix):
            return suffix
    raise ValueError(f"jaxlinops-recon: `-o` must end in one of {FORMATS}; got {str(path)!r}.")


def write_image(path: Path, image: np.ndarray, fov_mm: tuple[float, ...], magnitude: bool) -> None:
    r"""`image` `(S, Nx, Ny[, Nz])` to `path`: complex64 (or its magnitude, float32). NIfTI
    stores `(Nx, Ny, S)` (2-D slices) or `(Nx, Ny, Nz)` with voxel sizes $\mathrm{FOV} / N$
    in mm; `.npy` stores the array as it is."""
    data = np.abs(image).astype(np.float32) if magnitude else image.astype(np.complex64)
    path.parent.mkdir(parents=True, exist_ok=True)
    if image_format(path) == ".npy":
        np.save(path, data)
        return
    try:
        import nibabel
    except ImportError as error:
        raise ImportError(
            "jaxlinops-recon: writing NIfTI needs nibabel: pip install 'jaxlinops[io]', or "
            "write `.npy`."
        ) from error
    volume = data[0] if data.shape[0] == 1 and data.ndim == 4 else np.moveaxis(data, 0, -1)
    voxels = [f / n for f, n in zip(fov_mm, image.shape[1:], strict=False)]
    voxels += [1.0] * (3 - len(voxels))
    nibabel.save(nibabel.Nifti1Image(volume, np.diag([*voxels, 1.0])), str(path))


def write_png(path: Path, image: np.ndarray, title: str, say: Say) -> bool:
    """The magnitude of `image` `(S, Nx, Ny[, Nz])` as a PNG: every slice of a 2-D scan
    (up to 16), or the centre slice along each axis of a 3-D one; False (with one line
    said) when matplotlib is not installed."""
    try:
        from matplotlib.figure import Figure  # no pyplot: no global state
    except ImportError:
        say("    no PNG: matplotlib is not installed (pip install 'jaxlinops[demo]')")
        return False
    panels = _panels(np.abs(image))
    fig = Figure(figsize=(max(4, 3 * len(panels)), 3.6), layout="constrained")
    top = max(float(p.max()) for _, p in panels)
    for ax, (name, panel) in zip(fig.subplots(1, len(panels), squeeze=False)[0], panels):
        ax.imshow(panel, cmap="gray", vmin=0, vmax=top)
        ax.set_title(name, fontsize=9)
        ax.set_axis_off()
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=100)
    return True


def _panels(magnitude: np.ndarray) -> list[tuple[str, np.ndarray]]:
    if magnitude.ndim == 4:  # one 3-D volume: its three centre slices
        volume = magnitude[0]
        return [
            (f"{axis} = {n // 2}", np.take(volume, n // 2, axis=i))
            for i, (axis, n) in enumerate(zip("xyz", volume.shape, strict=True))
        ]
    step = max(1, -(-len(magnitude) // 16))
    return [(f"slice {s}", magnitude[s]) for s in range(0, len(magnitude), step)]
