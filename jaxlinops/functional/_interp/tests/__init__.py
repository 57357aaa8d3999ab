"""Test helpers at torchlinops' module path `torchlinops.functional._interp.tests`."""
