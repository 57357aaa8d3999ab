"""The module path `torchlinops.linops.array_to_blocks` of torchlinops:
`from jaxlinops.linops.array_to_blocks import ArrayToBlocks`."""

from . import ArrayToBlocks as ArrayToBlocks, BlocksToArray as BlocksToArray

__all__ = ["ArrayToBlocks", "BlocksToArray"]
