"""Where loaded KV blocks come from: the modelled store (and real stores beside it)."""
