"""Parsing, units, ids, errors, files and the private cache: the bottom layer."""
