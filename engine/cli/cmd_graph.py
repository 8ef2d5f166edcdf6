"""``aiinfra graph stats`` and ``aiinfra graph export --to graphml|json [--out FILE]``."""

from __future__ import annotations

import io
import json

from engine.cli.common import emit, root_of, write_atomic
from engine.cli.render import table, to_json
from engine.kb.knowledge import Knowledge


def stats(args) -> int:
    graph = Knowledge.load(root_of(args)).graph()
    s = graph.stats()
    if args.format == "json":
        emit(to_json(s))
        return 0
    rows = [dict(what="nodes", kind="all", count=s["nodes"]), dict(what="edges", kind="all", count=s["edges"])]
    rows += [dict(what="nodes", kind=k, count=v) for k, v in s["nodes_by_kind"].items()]
    rows += [dict(what="edges", kind=k, count=v) for k, v in s["edges_by_rel"].items()]
    rows.append(dict(what="components", kind="weakly connected", count=s["weakly_connected_components"]))
    emit(table(rows, [("what", "what"), ("kind", "kind"), ("count", "count")], args.format))
    return 0


def export(args) -> int:
    import networkx as nx

    graph = Knowledge.load(root_of(args)).graph()
    g = graph.g.copy()
    for _, data in g.nodes(data=True):  # GraphML takes scalars only
        for key, value in list(data.items()):
            if value is None:
                del data[key]
    if args.to == "json":
        text = json.dumps(nx.node_link_data(g, edges="edges"), indent=2, ensure_ascii=False, sort_keys=True)
    else:
        buf = io.BytesIO()
        nx.write_graphml(g, buf, encoding="utf-8")
        text = buf.getvalue().decode("utf-8")
    if args.out is not None:
        write_atomic(args.out, text if text.endswith("\n") else text + "\n")
    else:
        emit(text)
    return 0
