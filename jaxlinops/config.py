"""Global settings of jaxlinops.

- `nufft_backend` (default `"auto"`): the backend of a `NUFFT` (and `nufft_plan`) built
  without one: `"auto"`, `"jax"`, `"pallas"` or `"finufft"` (see
  `jaxlinops.functional.nufft_plan`). Set `"jax"` to keep torchlinops' kernel everywhere.
- `log_device_transfers` (default False): when True, building a batched operator logs its
  plan (which tiles each device holds, the collectives it uses) and each compiled
  application logs the bytes it moves, on the `"jaxlinops"` logger at INFO level.
"""

log_device_transfers: bool = False
nufft_backend: str = "auto"
