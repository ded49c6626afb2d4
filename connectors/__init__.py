"""The code under test: address-computation and index-build variants."""
