"""The tour `python -m jaxlinops.tour`: building, composing and applying operators."""

import pytest

from jaxlinops import tour


def test_tour_main_in_process(capsys):
    # Runs under this test session's settings: x64 enabled, strict dtype promotion.
    assert tour.main(["--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "adjoint test passed" in out
    assert "Chain((Nx, Ny) -> (C, Kx, Ky))" in out
    assert "FFT((C, Nx, Ny) -> (C, Kx, Ky))" in out
    assert "Chain((Nx, Ny) -> (Nx1, Ny1))" in out  # the normal renames its output dims
    assert "all checks passed" in out


def test_tour_rejects_unknown_arguments(capsys):
    with pytest.raises(SystemExit) as info:
        tour.main(["--no-such-flag"])
    assert info.value.code == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_tour_fails_loudly_when_a_check_fails(monkeypatch, capsys):
    monkeypatch.setattr(tour, "numpy_forward", lambda maps, mask, x: 2 * (mask * maps * x))
    with pytest.raises(AssertionError, match=r"A\(x\) vs numpy: relative difference .* exceeds"):
        tour.main([])
    capsys.readouterr()


def test_tour_help_shows_the_defaults(capsys):
    with pytest.raises(SystemExit) as info:
        tour.main(["--help"])
    assert info.value.code == 0
    assert "random seed (default: 0)" in capsys.readouterr().out
