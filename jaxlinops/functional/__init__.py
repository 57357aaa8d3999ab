"""Pure array kernels used by the operators (no Modules): `import jaxlinops.functional as F`."""
