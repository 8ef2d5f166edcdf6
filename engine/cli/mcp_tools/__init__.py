"""``aiinfra mcp``: the engine as Model Context Protocol tools, served over stdio.

- :mod:`engine.cli.mcp_tools.tools`: the tool table (name, description, JSON schema, the CLI line
  a call becomes), generated from the calculator records, the formula table and the CLI's own
  parsers; imports no MCP code, so ``llms.txt`` and the tests read it without the SDK;
- :mod:`engine.cli.mcp_tools.invoke`: a call run as the CLI would run it, in-process, with its
  stdout (the ``--format json`` contract) and its one-line error captured;
- :mod:`engine.cli.mcp_tools.server`: the wiring to the official ``mcp`` SDK (the ``mcp`` extra);
- :mod:`engine.cli.mcp_tools.llms_txt`: the site's ``llms.txt``, describing the same tools.
"""
