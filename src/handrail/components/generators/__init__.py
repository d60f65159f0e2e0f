"""Chat generators (model backends)."""
