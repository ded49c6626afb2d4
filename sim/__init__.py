"""kvsim: real threads, a SimPy clock, and the GIL between them."""

__version__ = "0.1.0"
