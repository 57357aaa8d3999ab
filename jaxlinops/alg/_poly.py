"""`polynomial_preconditioner`: $P = p(T) \approx T^{-1}$, coefficients from numpy."""

from __future__ import annotations

from math import comb

import numpy as np
from numpy.polynomial import chebyshev, legendre, polynomial

from .._arrays import as_size
from .._core import NamedLinop
from ..linops import Identity, Scalar
from ._common import as_real

NORMS = ("l_2", "l_inf", "ifista")


def polynomial_coefficients(
    degree: int, norm: str = "l_2", lower_eig: float = 0.0, upper_eig: float = 1.0
) -> np.ndarray:
    r"""The coefficients $c_0, \dots, c_d$ of $p(x) = \sum_k c_k x^k \approx 1/x$ on the
    eigenvalue interval $[l, u]$ (in float64):

    - `"l_2"`: minimise $\int_l^u (1 - x\,p(x))^2\,dx$ (least squares on Gauss–Legendre
      nodes, exact for this polynomial integrand);
    - `"l_inf"`: minimise $\max_{[l,u]} |1 - x\,p(x)|$, the Chebyshev polynomial
      $1 - x p(x) = T_{d+1}\big(\frac{u+l-2x}{u-l}\big) / T_{d+1}\big(\frac{u+l}{u-l}\big)$;
    - `"ifista"`: $c_k = \binom{d+1}{k+1} (-1)^k$ (for $T$ scaled to $[0, 1]$), so that
      $1 - x p(x) = (1 - x)^{d+1}$.

    A preconditioner must be positive on the interval: a polynomial that is not is an error.
    """
    name = "polynomial_coefficients"
    degree = as_size(degree, f"`{name}(degree=...)`", 0)
    lower_eig = as_real(lower_eig, f"`{name}(lower_eig=...)`")
    upper_eig = as_real(upper_eig, f"`{name}(upper_eig=...)`")
    if norm not in NORMS:
        raise ValueError(f"`{name}`: norm must be one of {NORMS}; got {norm!r}.")
    if not 0 <= lower_eig < upper_eig:
        raise ValueError(
            f"`{name}`: need 0 <= lower_eig < upper_eig; got {lower_eig} and {upper_eig}."
        )
    d = degree
    if norm == "ifista":
        c = np.array([comb(d + 1, k + 1) * (-1.0) ** k for k in range(d + 1)])
    elif norm == "l_2":
        nodes, weights = legendre.leggauss(d + 2)
        x = lower_eig + (nodes + 1) * (upper_eig - lower_eig) / 2
        w = np.sqrt(weights)[:, None]
        c = np.linalg.lstsq(w * x[:, None] ** np.arange(1, d + 2), w[:, 0], rcond=None)[0]
    else:
        # 1 - x p(x) = T_{d+1}(a - b x) / T_{d+1}(a): a polynomial in x that is 1 at 0
        a, b = (upper_eig + lower_eig) / (upper_eig - lower_eig), 2 / (upper_eig - lower_eig)
        t = chebyshev.Chebyshev.basis(d + 1).convert(kind=polynomial.Polynomial)
        q = t(polynomial.Polynomial([a, -b])) / t(a)
        c = -(q.coef[1:])
        c = np.pad(c, (0, d + 1 - len(c)))
    grid = np.linspace(lower_eig, upper_eig, 256)
    if np.any(polynomial.polyval(grid, c) <= 0):
        raise ValueError(
            f"`{name}`: the degree-{d} {norm} polynomial is not positive on "
            f"[{lower_eig}, {upper_eig}], so it is no preconditioner; try another degree or norm."
        )
    return c


def polynomial_preconditioner(
    T: NamedLinop,
    degree: int,
    norm: str = "l_2",
    lower_eig: float = 0.0,
    upper_eig: float = 1.0,
) -> NamedLinop:
    r"""$P = p(T) = \sum_{k=0}^{d} c_k T^k$, a preconditioner for CG on $T$ (Hermitian,
    eigenvalues in `[lower_eig, upper_eig]`; scale $T$ first, e.g. by the `power_method`
    eigenvalue). Coefficients from `polynomial_coefficients`; built in Horner form
    $c_0 + T(c_1 + T(c_2 + \dots))$, so applying $P$ costs `degree` applications of $T$.
    $T$'s output dims are renamed to its input dims (`T.N` renames them), so $P$ maps
    `T.ishape` to itself. `degree < 0` gives the identity.
    """
    if not isinstance(T, NamedLinop):
        raise TypeError(
            f"`polynomial_preconditioner` needs a NamedLinop T; got {type(T).__name__}."
        )
    if as_size(degree, "`polynomial_preconditioner(degree=...)`", None) < 0:
        return Identity(T.ishape)
    c = polynomial_coefficients(degree, norm, lower_eig, upper_eig)
    square = T if T.oshape == T.ishape else Identity(T.oshape, T.ishape) @ T
    P = Scalar(float(c[-1]), T.ishape)
    for ck in c[-2::-1]:
        P = Scalar(float(ck), T.ishape) + square @ P
    return P
