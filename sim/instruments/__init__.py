"""Instruments that run beside a point: the GIL meter, probes, the noise floor, the engine loop."""
