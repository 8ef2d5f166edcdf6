"""Decision trees: the numeric walk, symbolic regions and their proofs."""
