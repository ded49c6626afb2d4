"""Where loaded KV blocks come from: the modelled store (and real stores beside it)."""

from __future__ import annotations

from sim.native import enable as _enable_native

# The compiled core, when built from this source (sim.native): first on this path.
_enable_native(__name__, __path__)
