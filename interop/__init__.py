"""The PyTorch bridge for jaxlinops (reserved; built by the interop issue)."""
