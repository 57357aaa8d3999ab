"""`jaxlinops.io`: the ISMRMRD and fastMRI readers and the ISMRMRD writer.

The reference files are built here from known arrays with the `ismrmrd` package
(`Dataset.append_acquisition`, `ismrmrd.xsd`) and h5py, independently of
`write_ismrmrd`; the readers must return exactly what was written.
"""

import logging
import sys

import numpy as np
import pytest

from jaxlinops import io

ismrmrd = pytest.importorskip("ismrmrd")
h5py = pytest.importorskip("h5py")

X = ismrmrd.xsd


def _complex(rng, *shape):
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(np.complex64)


def _header(encoded, recon, encoded_fov, recon_fov, trajectory="cartesian", limits=None):
    """An ISMRMRD XML header with one encoding space (x, y, z per argument)."""

    def space(matrix, fov):
        return X.encodingSpaceType(
            matrixSize=X.matrixSizeType(x=matrix[0], y=matrix[1], z=matrix[2]),
            fieldOfView_mm=X.fieldOfViewMm(x=fov[0], y=fov[1], z=fov[2]),
        )

    encoding = X.encodingType(
        encodedSpace=space(encoded, encoded_fov),
        reconSpace=space(recon, recon_fov),
        encodingLimits=X.encodingLimitsType(**(limits or {})),
        trajectory=X.trajectoryType(trajectory),
    )
    conditions = X.experimentalConditionsType(H1resonanceFrequency_Hz=63_870_000)
    return X.ToXML(X.ismrmrdHeader(experimentalConditions=conditions, encoding=[encoding]))


def _acquisition(data, traj=None, flags=(), center=None, **idx):
    acq = ismrmrd.Acquisition.from_array(data, traj)
    acq.center_sample = data.shape[1] // 2 if center is None else center
    for flag in flags:
        acq.set_flag(flag)
    for name, value in idx.items():
        setattr(acq.idx, name, value)
    return acq


def _write(path, xml, acquisitions, dataset="dataset"):
    with ismrmrd.Dataset(str(path), dataset, create_if_needed=True) as ds:
        ds.write_xml_header(xml)
        for acq in acquisitions:
            ds.append_acquisition(acq)


def _radial(rng, spokes=6, samples=8, coils=3):
    """Normalised radial positions `(R, K, 2)` in [-0.5, 0.5) and data `(C, R, K)`."""
    angles = np.pi * np.arange(spokes) / spokes
    radius = np.arange(samples) / samples - 0.5
    traj = radius[None, :, None] * np.stack([np.cos(angles), np.sin(angles)], -1)[:, None]
    return traj.astype(np.float32), _complex(rng, coils, spokes, samples)


def test_radial_2d_with_noise(tmp_path, caplog):
    rng = np.random.default_rng(0)
    traj, data = _radial(rng)
    noise = _complex(rng, 3, 20)
    xml = _header((16, 16, 1), (16, 16, 1), (240, 240, 5), (240, 240, 5), "radial")
    acqs = [_acquisition(noise[:, :12], flags=[ismrmrd.ACQ_IS_NOISE_MEASUREMENT])]
    acqs.append(_acquisition(noise[:, 12:], flags=[ismrmrd.ACQ_IS_NOISE_MEASUREMENT]))
    acqs += [_acquisition(data[:, r], traj[r], kspace_encode_step_1=r) for r in range(6)]
    _write(tmp_path / "radial.h5", xml, acqs)
    with caplog.at_level(logging.INFO, logger="jaxlinops"):
        raw = io.read_ismrmrd(tmp_path / "radial.h5")
    assert raw.dims == ("C", "R", "K") and not raw.cartesian and raw.coils == 3
    np.testing.assert_array_equal(raw.kspace, data)
    assert raw.locs is not None and raw.locs.dtype == np.float32
    np.testing.assert_array_equal(raw.locs, traj * np.float32(16))
    np.testing.assert_array_equal(raw.noise, noise)
    assert raw.mask is None and raw.skipped == {}
    assert (raw.matrix, raw.encoded_matrix, raw.fov_mm) == ((16, 16), (16, 16), (240.0, 240.0))
    assert raw.source == "ismrmrd" and raw.header == xml
    assert "assumed normalised [-0.5, 0.5] units: scaled by (16.0, 16.0)" in caplog.text
    assert "R=6" in raw.summary() and "20 noise samples" in repr(raw)


def test_trajectory_units(tmp_path, caplog):
    """Cycles-per-FOV files are judged by their range; units can be forced."""
    rng = np.random.default_rng(1)
    traj, data = _radial(rng)
    cycles = traj * np.float32(16)
    xml = _header((16, 16, 1), (16, 16, 1), (200, 200, 5), (200, 200, 5), "radial")
    _write(tmp_path / "c.h5", xml, [_acquisition(data[:, r], cycles[r]) for r in range(6)])
    with caplog.at_level(logging.INFO, logger="jaxlinops"):
        raw = io.read_ismrmrd(tmp_path / "c.h5")
    assert "assumed cycles-per-FOV units: scaled by (1.0, 1.0)" in caplog.text
    assert raw.locs is not None
    np.testing.assert_array_equal(raw.locs, cycles)
    caplog.clear()
    forced = io.read_ismrmrd(tmp_path / "c.h5", trajectory_units="normalized")
    assert forced.locs is not None and caplog.text == ""
    np.testing.assert_array_equal(forced.locs, cycles * np.float32(16))
    with pytest.raises(ValueError, match="trajectory_units must be one of"):
        io.read_ismrmrd(tmp_path / "c.h5", trajectory_units="cm")


def test_normalised_units_follow_the_encoded_space(tmp_path):
    """Normalised positions are fractions of the encoded extent: the readout
    oversampling cancels, a lower-resolution reconstruction space does not."""
    rng = np.random.default_rng(2)
    traj, data = _radial(rng)
    xml = _header((32, 16, 1), (16, 8, 1), (400, 200, 5), (200, 200, 5), "radial")
    _write(tmp_path / "o.h5", xml, [_acquisition(data[:, r], traj[r]) for r in range(6)])
    raw = io.read_ismrmrd(tmp_path / "o.h5", trajectory_units="normalized")
    assert raw.locs is not None and raw.matrix == (16, 8)
    np.testing.assert_array_equal(raw.locs, traj * np.float32([16, 16]))


def _cartesian_file(path, rng, slices_lines, samples=16, center=None, limits=None):
    """Cartesian readouts (C=2, K=`samples`) per slice at the encode steps given;
    returns the readouts by (slice, step)."""
    xml = _header((16, 8, 1), (8, 8, 1), (400, 200, 6), (200, 200, 6), limits=limits)
    readouts, acqs = {}, []
    for s, lines in enumerate(slices_lines):
        for step in lines:
            readouts[s, step] = _complex(rng, 2, samples)
            acqs.append(
                _acquisition(readouts[s, step], center=center, kspace_encode_step_1=step, slice=s)
            )
    _write(path, xml, acqs)
    return readouts


@pytest.mark.parametrize("same_lines", [True, False])
def test_cartesian_2d_two_slices(tmp_path, same_lines):
    rng = np.random.default_rng(3)
    lines = [[0, 1, 3, 4, 5, 6], [0, 1, 3, 4, 5, 6] if same_lines else [1, 2, 4, 6]]
    limits = {"kspace_encoding_step_1": X.limitType(minimum=0, maximum=7, center=4)}
    readouts = _cartesian_file(tmp_path / "c.h5", rng, lines, limits=limits)
    raw = io.read_ismrmrd(tmp_path / "c.h5")
    assert raw.dims == ("S", "C", "Kx", "Ky") and raw.kspace.shape == (2, 2, 16, 8)
    expected = np.zeros((2, 2, 16, 8), np.complex64)
    for (s, step), readout in readouts.items():
        expected[s, :, :, step] = readout
    np.testing.assert_array_equal(raw.kspace, expected)
    assert raw.mask is not None
    sampled = np.zeros((2, 16, 8), bool)
    for s, step in readouts:
        sampled[s, :, step] = True
    np.testing.assert_array_equal(raw.mask, sampled[0] if same_lines else sampled)
    assert (raw.matrix, raw.encoded_matrix, raw.fov_mm) == ((8, 8), (16, 8), (200.0, 200.0))
    assert raw.noise is None and raw.locs is None and raw.cartesian


def test_cartesian_centring(tmp_path):
    """k = 0 lands at index N // 2: the readout's center_sample (an asymmetric echo of
    12 samples, centre 4) and the encoding limits' centre (partial Fourier, steps 0..5
    with centre 3)."""
    rng = np.random.default_rng(4)
    limits = {"kspace_encoding_step_1": X.limitType(minimum=0, maximum=5, center=3)}
    readouts = _cartesian_file(
        tmp_path / "pf.h5", rng, [range(6)], samples=12, center=4, limits=limits
    )
    raw = io.read_ismrmrd(tmp_path / "pf.h5")
    assert raw.dims == ("C", "Kx", "Ky") and raw.mask is not None
    np.testing.assert_array_equal(raw.kspace[:, 8, 4], readouts[0, 3][:, 4])  # DC
    for step in range(6):
        np.testing.assert_array_equal(raw.kspace[:, 4:16, step + 1], readouts[0, step])
    assert raw.mask.sum() == 12 * 6 and raw.mask[4:, 1:7].all()
    assert not raw.mask[:4].any() and not raw.mask[:, [0, 7]].any()


def test_cartesian_3d(tmp_path):
    rng = np.random.default_rng(5)
    xml = _header((4, 4, 2), (4, 4, 2), (40, 40, 20), (40, 40, 20))
    kspace = _complex(rng, 2, 4, 4, 2)
    lines = [(y, z) for y in range(4) for z in range(2) if (y, z) != (1, 0)]
    acqs = [
        _acquisition(kspace[:, :, y, z], kspace_encode_step_1=y, kspace_encode_step_2=z)
        for y, z in lines
    ]
    _write(tmp_path / "3d.h5", xml, acqs)
    raw = io.read_ismrmrd(tmp_path / "3d.h5")
    assert raw.dims == ("C", "Kx", "Ky", "Kz") and raw.matrix == (4, 4, 2)
    assert raw.fov_mm == (40.0, 40.0, 20.0)
    expected = kspace.copy()
    expected[:, :, 1, 0] = 0
    np.testing.assert_array_equal(raw.kspace, expected)
    assert raw.mask is not None and raw.mask.sum() == 4 * 7 and not raw.mask[:, 1, 0].any()


def test_skipped_acquisitions(tmp_path, caplog):
    """Navigators and calibration-only lines are left out, counted and logged; lines for
    calibration and imaging are kept."""
    rng = np.random.default_rng(6)
    xml = _header((4, 4, 1), (4, 4, 1), (40, 40, 5), (40, 40, 5))
    kspace = _complex(rng, 2, 4, 4)
    both = [ismrmrd.ACQ_IS_PARALLEL_CALIBRATION, ismrmrd.ACQ_IS_PARALLEL_CALIBRATION_AND_IMAGING]
    acqs = [
        _acquisition(kspace[:, :, y], flags=both if y == 2 else (), kspace_encode_step_1=y)
        for y in range(4)
    ]
    junk = _complex(rng, 2, 4)
    acqs.append(_acquisition(junk, flags=[ismrmrd.ACQ_IS_NAVIGATION_DATA]))
    acqs.append(_acquisition(junk, flags=[ismrmrd.ACQ_IS_NAVIGATION_DATA]))
    acqs.append(_acquisition(junk, flags=[ismrmrd.ACQ_IS_PARALLEL_CALIBRATION]))
    _write(tmp_path / "s.h5", xml, acqs)
    with caplog.at_level(logging.INFO, logger="jaxlinops"):
        raw = io.read_ismrmrd(tmp_path / "s.h5")
    np.testing.assert_array_equal(raw.kspace, kspace)
    assert raw.skipped == {"ACQ_IS_PARALLEL_CALIBRATION": 1, "ACQ_IS_NAVIGATION_DATA": 2}
    assert "left out 3 acquisitions (ACQ_IS_PARALLEL_CALIBRATION 1, ACQ_IS_NAVIGATION" in (
        caplog.text
    )
    assert "skipped ACQ_IS_PARALLEL_CALIBRATION 1" in raw.summary()


def test_round_trip_noncartesian(tmp_path):
    rng = np.random.default_rng(7)
    C, R, K = 4, 10, 12
    kspace, noise = _complex(rng, C, R, K), _complex(rng, C, 30)
    locs = rng.uniform(-6, 6, size=(R, K, 2)).astype(np.float32)
    path = tmp_path / "w.h5"
    for units in ("normalized", "cycles"):
        io.write_ismrmrd(
            path,
            kspace,
            locs=locs,
            noise=noise,
            matrix=(12, 12),
            fov_mm=(180.0, 180.0),
            trajectory_units=units,
        )
        raw = io.read_ismrmrd(path, trajectory_units=units)
        np.testing.assert_array_equal(raw.kspace, kspace)
        np.testing.assert_array_equal(raw.noise, noise)
        assert raw.locs is not None
        np.testing.assert_allclose(raw.locs, locs, rtol=0, atol=1e-5)
        assert (raw.matrix, raw.fov_mm, raw.dims) == ((12, 12), (180.0, 180.0), ("C", "R", "K"))
    # the ismrmrd package reads the file: the noise first, then one readout per row
    with ismrmrd.Dataset(str(path), "dataset", create_if_needed=False) as ds:
        assert ds.number_of_acquisitions() == 1 + R
        assert ds.read_acquisition(0).is_flag_set(ismrmrd.ACQ_IS_NOISE_MEASUREMENT)
        acq = ds.read_acquisition(3)
        np.testing.assert_array_equal(acq.data, kspace[:, 2])
        np.testing.assert_array_equal(acq.traj, locs[2])
        assert acq.idx.kspace_encode_step_1 == 2 and acq.isChannelActive(3)
        header = X.CreateFromDocument(ds.read_xml_header())
    assert header.encoding[0].trajectory == X.trajectoryType.OTHER


def test_round_trip_cartesian(tmp_path):
    rng = np.random.default_rng(8)
    kspace = _complex(rng, 3, 8, 6, 4)
    mask = rng.uniform(size=(6, 4)) < 0.6
    path = tmp_path / "w.h5"
    io.write_ismrmrd(path, kspace, mask=mask, matrix=(4, 6, 4), fov_mm=(100.0, 150.0, 40.0))
    raw = io.read_ismrmrd(path)
    np.testing.assert_array_equal(raw.kspace, kspace * mask)
    assert raw.mask is not None
    np.testing.assert_array_equal(raw.mask, np.broadcast_to(mask, (8, 6, 4)))
    assert (raw.matrix, raw.encoded_matrix) == ((4, 6, 4), (8, 6, 4))
    assert raw.fov_mm == (100.0, 150.0, 40.0)
    io.write_ismrmrd(path, kspace[..., 0], matrix=(8, 6))  # replaces the file
    raw = io.read_ismrmrd(path)
    np.testing.assert_array_equal(raw.kspace, kspace[..., 0])
    assert raw.fov_mm == (8.0, 6.0) and raw.mask is not None and raw.mask.all()


def test_write_errors(tmp_path):
    rng = np.random.default_rng(9)
    kspace = _complex(rng, 2, 3, 4)
    locs = np.full((3, 4, 2), 5.0, np.float32)
    with pytest.raises(ValueError, match="normalised positions would pass 0.5"):
        io.write_ismrmrd(tmp_path / "e.h5", kspace, locs=locs, matrix=(8, 8))
    with pytest.raises(ValueError, match=r"locs \(R, K, D\)"):
        io.write_ismrmrd(tmp_path / "e.h5", kspace, locs=locs[..., :1], matrix=(8, 8))
    with pytest.raises(ValueError, match=r"mask must be bool \(Ky\[, Kz\]\)"):
        io.write_ismrmrd(tmp_path / "e.h5", kspace, mask=np.ones(3), matrix=(3, 4))
    with pytest.raises(ValueError, match="0 readouts of 3 samples; it writes at least one"):
        io.write_ismrmrd(tmp_path / "e.h5", kspace, mask=np.zeros(4, bool), matrix=(3, 4))
    with pytest.raises(ValueError, match=r"noise must be \(C, N\) with C = 2"):
        io.write_ismrmrd(tmp_path / "e.h5", kspace, noise=kspace[0], matrix=(3, 4))


def test_bad_ismrmrd_files(tmp_path):
    rng = np.random.default_rng(10)
    xml = _header((4, 4, 1), (4, 4, 1), (40, 40, 5), (40, 40, 5))
    path = tmp_path / "bad.h5"
    _write(path, xml, [_acquisition(_complex(rng, 2, 4))])
    with pytest.raises(ValueError, match="no ISMRMRD dataset 'other'; the file holds"):
        io.read_ismrmrd(path, dataset="other")

    def bad(acqs, match, header=xml):
        path.unlink()
        _write(path, header, acqs)
        with pytest.raises(ValueError, match=match):
            io.read_ismrmrd(path)

    data = _complex(rng, 2, 4)
    bad(
        [_acquisition(data), _acquisition(data[:, :2], kspace_encode_step_1=1)],
        "acquisition 1 has number_of_samples = 2 but acquisition 0 has 4",
    )
    bad(
        [_acquisition(data), _acquisition(data, kspace_encode_step_1=1, repetition=1)],
        r"2 values of idx.repetition \(\[0, 1\]\)",
    )
    bad(
        [_acquisition(data), _acquisition(data)],
        r"acquisitions 0 and 1 both sample \(slice, Ky\[, Kz\]\) = \(0, 0\)",
    )
    bad(
        [_acquisition(data, kspace_encode_step_1=4)],
        "idx.kspace_encode_step_1 = 4 .* outside the encoded matrix y = 4",
    )
    bad([_acquisition(data, center=0)], "center_sample 0 reach Kx 2..5, outside")
    bad([_acquisition(data, flags=[ismrmrd.ACQ_IS_REVERSE])], "has ACQ_IS_REVERSE set")
    bad([_acquisition(data, flags=[ismrmrd.ACQ_IS_NOISE_MEASUREMENT])], "no image acquisitions")
    traj3 = np.zeros((4, 3), np.float32)
    bad([_acquisition(data, traj3)], "trajectory_dimensions is 3 but the encoding is 2-D")
    parsed = X.CreateFromDocument(xml)
    parsed.encoding *= 2
    two = X.ToXML(parsed)
    bad([_acquisition(data)], r"has 2 encoding spaces \(encoding\)", header=two)
    bad([_acquisition(data)], r"header \(dataset/xml\) does not parse", header="<nope/>")
    radial = xml.replace("<trajectory>cartesian<", "<trajectory>radial<")
    bad([_acquisition(data)], "trajectory is 'radial' but the acquisitions carry no", radial)
    with h5py.File(path, "w") as file:
        file.create_group("dataset").create_dataset("xml", data=[xml.encode()])
    with pytest.raises(ValueError, match="the ISMRMRD dataset has no dataset/data"):
        io.read_ismrmrd(path)


def _fastmri_file(path, kspace, header=None, mask=None):
    with h5py.File(path, "w") as file:
        file.create_dataset("kspace", data=kspace)
        if header is not None:
            file.create_dataset("ismrmrd_header", data=header)
        if mask is not None:
            file.create_dataset("mask", data=mask)
        file.attrs.update(acquisition="CORPD_FBK", max=np.float64(0.5), patient_id="abc")


FASTMRI_HEADER = """<?xml version="1.0" encoding="utf-8"?>
<ismrmrdHeader xmlns="http://www.ismrm.org/ISMRMRD"><encoding>
<encodedSpace><matrixSize><x>8</x><y>6</y><z>1</z></matrixSize>
<fieldOfView_mm><x>280.0</x><y>140.5</y><z>4.5</z></fieldOfView_mm></encodedSpace>
<reconSpace><matrixSize><x>4</x><y>4</y><z>1</z></matrixSize>
<fieldOfView_mm><x>140.0</x><y>140.5</y><z>3.0</z></fieldOfView_mm></reconSpace>
<encodingLimits><kspace_encoding_step_1><minimum>0</minimum><maximum>4</maximum>
<center>3</center></kspace_encoding_step_1></encodingLimits>
<trajectory>cartesian</trajectory></encoding></ismrmrdHeader>"""


@pytest.mark.parametrize("with_extras", [False, True])
def test_fastmri(tmp_path, with_extras):
    rng = np.random.default_rng(11)
    kspace = _complex(rng, 2, 3, 8, 6)
    kspace[..., [0, 4]] = 0  # a zero-padded column and an unsampled one
    mask = np.array([0, 1, 1, 0, 0, 1], np.float32) if with_extras else None
    header = FASTMRI_HEADER if with_extras else None
    _fastmri_file(tmp_path / "f.h5", kspace, header, mask)
    raw = io.read_fastmri(tmp_path / "f.h5")
    assert raw.dims == ("S", "C", "Kx", "Ky") and raw.source == "fastmri"
    np.testing.assert_array_equal(raw.kspace, kspace)
    columns = [0, 1, 1, 0, 0, 1] if with_extras else [0, 1, 1, 1, 0, 1]
    assert raw.mask is not None
    np.testing.assert_array_equal(raw.mask, np.broadcast_to(np.array(columns, bool), (8, 6)))
    assert raw.encoded_matrix == (8, 6) and raw.noise is None and raw.coils == 3
    if with_extras:
        assert raw.matrix == (4, 4) and raw.fov_mm == (140.0, 140.5)
        assert raw.header == FASTMRI_HEADER
    else:
        assert raw.matrix == (8, 6) and raw.fov_mm == () and raw.header == ""
    assert raw.attrs == {"acquisition": "CORPD_FBK", "max": 0.5, "patient_id": "abc"}


def test_fastmri_single_coil_and_errors(tmp_path):
    rng = np.random.default_rng(12)
    kspace = _complex(rng, 2, 4, 6)
    _fastmri_file(tmp_path / "s.h5", kspace)
    raw = io.read_fastmri(tmp_path / "s.h5")
    assert raw.kspace.shape == (2, 1, 4, 6) and raw.coils == 1
    np.testing.assert_array_equal(raw.kspace[:, 0], kspace)
    _fastmri_file(tmp_path / "m.h5", kspace, mask=np.ones(4))
    with pytest.raises(ValueError, match=r"`mask` has shape \(4,\); it needs one entry per"):
        io.read_fastmri(tmp_path / "m.h5")
    _fastmri_file(tmp_path / "r.h5", kspace.real)
    with pytest.raises(ValueError, match="`kspace` must be complex"):
        io.read_fastmri(tmp_path / "r.h5")
    _fastmri_file(tmp_path / "h.h5", kspace, header="<ismrmrdHeader/>")
    with pytest.raises(ValueError, match="has no encoding/reconSpace/matrixSize/x"):
        io.read_fastmri(tmp_path / "h.h5")
    with h5py.File(tmp_path / "n.h5", "w") as file:
        file.create_dataset("image", data=np.zeros(3))
    with pytest.raises(ValueError, match=r"no `kspace` dataset .* holds \['image'\]"):
        io.read_fastmri(tmp_path / "n.h5")
    with pytest.raises(ValueError, match="a fastMRI file\\? read_fastmri reads those"):
        io.read_ismrmrd(tmp_path / "s.h5")


def test_rawdata_checks():
    kspace = np.zeros((2, 3, 4), np.complex64)
    locs = np.zeros((3, 4, 2), np.float32)
    with pytest.raises(ValueError, match=r"RawData.dims: \('C', 'R'\) names 2 dims"):
        io.RawData(kspace=kspace, dims=("C", "R"), locs=locs, matrix=(8, 8), encoded_matrix=(8, 8))
    with pytest.raises(ValueError, match=r"RawData.locs: must be float32 of shape"):
        io.RawData(
            kspace=kspace, dims=("C", "R", "K"), locs=locs[:2], matrix=(8, 8), encoded_matrix=(8, 8)
        )
    with pytest.raises(ValueError, match="RawData.kspace must be a complex64"):
        io.RawData(
            kspace=kspace.real,
            dims=("C", "Kx", "Ky"),
            mask=np.ones((3, 4), bool),
            matrix=(3, 4),
            encoded_matrix=(3, 4),
        )
    with pytest.raises(ValueError, match="RawData.mask: Cartesian data needs a bool mask"):
        io.RawData(kspace=kspace, dims=("C", "Kx", "Ky"), matrix=(3, 4), encoded_matrix=(3, 4))
    with pytest.raises(ValueError, match=r"RawData.noise: must be complex64 \(C, N\) with C = 2"):
        io.RawData(
            kspace=kspace,
            dims=("C", "R", "K"),
            locs=locs,
            noise=kspace[0],
            matrix=(8, 8),
            encoded_matrix=(8, 8),
        )


def test_missing_dependency(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ismrmrd", None)
    with pytest.raises(ImportError, match=r"read_ismrmrd needs the `ismrmrd` package: pip"):
        io.read_ismrmrd(tmp_path / "any.h5")
