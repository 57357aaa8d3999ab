"""The operator catalogue; every name here is re-exported from `jaxlinops`."""

from ._add import Add as Add
from ._adjoint import Adjoint as Adjoint
from ._chain import Chain as Chain
from ._dense import Dense as Dense
from ._diagonal import Diagonal as Diagonal
from ._identity import Identity as Identity, ShapeSpec as ShapeSpec, Zero as Zero
from ._scalar import Scalar as Scalar
