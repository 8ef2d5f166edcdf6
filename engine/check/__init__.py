"""Integrity: every family's rules over a loaded root, reported together."""
