"""Pure array kernels used by the operators (no Modules): `import jaxlinops.functional as F`."""

from ._index import index as index, index_adjoint as index_adjoint
from ._pad import center_crop as center_crop, center_pad as center_pad
