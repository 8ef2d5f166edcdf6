"""The ``aiinfra`` command line (see ``engine.cli.main``)."""
