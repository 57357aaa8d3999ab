"""Global settings of jaxlinops.

- `log_device_transfers` (default False): when True, building a batched operator logs its
  plan (which tiles each device holds, the collectives it uses) and each compiled
  application logs the bytes it moves, on the `"jaxlinops"` logger at INFO level.
"""

log_device_transfers: bool = False
