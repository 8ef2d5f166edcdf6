"""Records, schemas and the Knowledge loader."""
