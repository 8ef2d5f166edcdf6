"""``aiinfra collective ring|tree|all-to-all``: options with units, every format, bad input.

Numbers are hand arithmetic written beside them; the latency default is FX50's, from the
book's comm calculator (calculators comm.collective_time @a98dbf79: latency_us = 20).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.cli.main import main

RING = ["collective", "ring", "--op", "allreduce", "--ranks", "4", "--bytes", "1GiB"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def as_json(argv, capsys):
    code, out, err = run([*argv, "--format", "json"], capsys)
    assert code == 0, err
    return json.loads(out)


def test_ring_allreduce_json_by_hand(capsys):
    data = as_json([*RING, "--bandwidth", "50GB/s"], capsys)
    out = {k: v["value"] for k, v in data["outputs"].items()}
    # 2 × (3/4) × 2^30 = 1610612736 B per rank; 6 rounds; 2(P − 1)·M = 6 × 2^30 = 6442450944 B on the network
    assert out["collective_wire_bytes"] == 1610612736
    assert out["max_rank_send_bytes"] == 1610612736
    assert out["network_bytes"] == 6442450944
    assert out["critical_path_steps"] == 6
    # 6 × 20e-6 + 1610612736 / 50e9 = 1.2e-4 + 0.03221225472 = 0.03233225472 s
    assert out["collective_time"] == pytest.approx(0.03233225472, rel=1e-12)
    # algbw = 2^30 / 0.03233225472; busbw = algbw × 2 × 3/4 (nccl-tests PERFORMANCE.md)
    assert out["alg_bandwidth"] == pytest.approx(2**30 / 0.03233225472, rel=1e-12)
    assert out["bus_bandwidth"] == pytest.approx(1.5 * 2**30 / 0.03233225472, rel=1e-12)
    assert data["inputs"]["step_latency"]["source"].startswith("default: Book calculators comm.collective_time (@a98dbf79)")
    assert data["inputs"]["eff_bandwidth"]["value"] == 50e9
    assert len(data["schedule"]["rounds"]) == 6
    assert data["schedule"]["rounds"][0]["transfers"][0] == {"src": 0, "dst": 1, "chunk": 3, "bytes": 268435456.0}
    assert data["schedule"]["chunk_bytes"] == 268435456
    assert data["formulas"] == ["FX1", "FX50", "FX51", "FX52"]
    assert data["crossover"]["msg_bytes"] == pytest.approx(8e5, rel=1e-9)  # 2αβ/2.5 = 2 × 20e-6 × 50e9 / 2.5


def test_json_carries_all_rounds_whatever_show_rounds(capsys):
    data = as_json(["collective", "ring", "--op", "allreduce", "--ranks", "16", "--bytes", "1MiB", "--show-rounds", "1"], capsys)
    assert len(data["schedule"]["rounds"]) == 30  # 2 × (16 − 1)
    assert len(data["per_rank"]) == 16


def test_gb_and_gib_are_not_mixed(capsys):
    # 1GB = 1e9 B; 1GiB = 2^30 B = 1073741824 B: per-rank ring allreduce bytes 1.5e9 vs 1610612736
    gb = as_json(["collective", "ring", "--op", "allreduce", "--ranks", "4", "--bytes", "1GB"], capsys)
    gib = as_json(RING, capsys)
    assert gb["outputs"]["max_rank_send_bytes"]["value"] == 1.5e9
    assert gib["outputs"]["max_rank_send_bytes"]["value"] == 1610612736


def test_bits_per_second_and_microseconds_are_converted(capsys):
    # 400Gb/s = 400e9 / 8 = 5e10 B/s; 20us = 2e-5 s, the default: both runs give the same time
    a = as_json([*RING, "--bandwidth", "400Gb/s", "--latency", "20us"], capsys)
    b = as_json([*RING, "--bandwidth", "50GB/s"], capsys)
    assert a["inputs"]["eff_bandwidth"]["value"] == 5e10
    assert a["inputs"]["step_latency"]["value"] == pytest.approx(2e-5, rel=1e-12)
    assert a["inputs"]["step_latency"]["source"] == "given"
    assert a["outputs"]["collective_time"]["value"] == pytest.approx(b["outputs"]["collective_time"]["value"], rel=1e-12)


def test_text_shows_summary_first_rounds_ranks_and_crossover(capsys):
    code, out, _ = run([*RING, "--bandwidth", "50GB/s", "--show-rounds", "2"], capsys)
    assert code == 0
    assert out.startswith("collective ring · allreduce · 4 ranks · M = 1.074e9 B (1 GiB = 1.074 GB)")
    assert "Rounds (2 of 6; all in --format json or csv)" in out
    assert "0→1 c3, 1→2 c0, 2→3 c1, 3→0 c2" in out  # reduce-scatter step 0: rank r sends chunk r − 1
    assert "0→1 c2, 1→2 c3" in out and "0→1 c1, 1→2 c2" not in out  # round 2 shown, round 3 not
    assert "Ring vs tree allreduce at 4 ranks" in out
    assert "crossover" in out


def test_markdown_has_headings_and_tables(capsys):
    code, out, _ = run(["collective", "tree", "--op", "allreduce", "--ranks", "5", "--bytes", "1MiB", "--bandwidth", "50GB/s", "--format", "md"], capsys)
    assert code == 0
    assert out.startswith("## collective tree · allreduce · 5 ranks")
    assert "| 1 | reduce | 1 | 1→0, 3→2 |" in out  # stride 1: rank 4 has no partner 5
    assert "### Assumptions" in out


def test_csv_is_the_rounds_table_one_row_per_transfer(capsys):
    code, out, _ = run([*RING, "--format", "csv"], capsys)
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "round,phase,step,src,dst,chunk,bytes,round_time"
    assert len(lines) == 1 + 6 * 4  # 6 rounds × 4 transfers
    assert lines[1] == "1,reduce-scatter,1,0,1,3,268435456.0,"  # no bandwidth: no round time


def test_tree_non_power_of_two(capsys):
    data = as_json(["collective", "tree", "--op", "allreduce", "--ranks", "6", "--bytes", "1MB", "--bandwidth", "1GB/s", "--latency", "0"], capsys)
    # 2·⌈log2 6⌉ = 6 rounds of the whole 1e6 B message at 1e9 B/s: 6 × 1e-3 = 6e-3 s
    assert data["outputs"]["critical_path_steps"]["value"] == 6
    assert data["outputs"]["collective_time"]["value"] == pytest.approx(6e-3, rel=1e-12)
    # root 0 gets partners 1, 2, 4: three receives and three sends of 1e6 B
    assert data["per_rank"][0] == {"rank": 0, "send_bytes": 3e6, "recv_bytes": 3e6, "local_bytes": None}
    assert data["outputs"]["network_bytes"]["value"] == 1e7  # 2(P − 1)·M = 10 × 1e6


def test_all_to_all_with_a_matrix_file(tmp_path, capsys):
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps([[0, 1, 2], [3, 0, 1], [1, 1, 0]]))
    data = as_json(["collective", "all-to-all", "--op", "alltoall", "--ranks", "3", "--bytes", "6", "--routing", str(path)], capsys)
    # entries sum to 9 over 3 ranks (average row 3); --bytes 6 doubles each: row sends 6, 8, 4
    assert [r["send_bytes"] for r in data["per_rank"]] == [6, 8, 4]
    assert data["traffic_matrix"] == [[0, 2, 4], [6, 0, 2], [2, 2, 0]]
    assert data["inputs"]["routing"]["value"] == str(path)


def test_hotspot_factor_option(capsys):
    data = as_json(["collective", "all-to-all", "--op", "alltoall", "--ranks", "3", "--bytes", "10", "--routing", "hotspot:8"], capsys)
    # weights 8, 1, 1 per source (10 shares of 1 B): rank 0 receives 8 from each of 2 sources = 16 B
    assert data["per_rank"][0]["recv_bytes"] == 16
    assert data["traffic_matrix"][1] == [8, 1, 1]


def _matrix_file(tmp_path, text):
    path = tmp_path / "m.json"
    path.write_text(text)
    return str(path)


A2A = ["collective", "all-to-all", "--op", "alltoall", "--ranks", "3", "--bytes", "3MiB", "--routing"]

BAD = {
    "ring alltoall": (["collective", "ring", "--op", "alltoall", "--ranks", "4", "--bytes", "1GB"],
                      "aiinfra: error: --op: alltoall is not a ring collective (every rank needs a different block from every other); use `aiinfra collective all-to-all --op alltoall`"),
    "tree reducescatter": (["collective", "tree", "--op", "reducescatter", "--ranks", "4", "--bytes", "1GB"],
                           "aiinfra: error: --op: tree runs allreduce only (reduce to rank 0, then broadcast); use `aiinfra collective ring --op reducescatter`"),
    "bytes in seconds": ([*RING[:-1], "1s"], "aiinfra: error: --bytes: '1s' has unit s (s), expected a quantity in B (B)"),
    "bytes not a number": ([*RING[:-1], "lots"], "aiinfra: error: --bytes: 'lots' is not a number with an optional unit (expected e.g. 80GiB, 3.35TB/s, 1h..3h, 40±10%)"),
    "bytes range": ([*RING[:-1], "1..2GB"], "aiinfra: error: --bytes: '1..2GB' is a range; give one value (e.g. 1GB or 256MiB)"),
    "negative bytes": ([*RING[:-2], "--bytes=-1GB"], "aiinfra: error: --bytes: expected a number >= 0, got -1e+09"),
    "bandwidth in bytes": ([*RING, "--bandwidth", "50GB"], "aiinfra: error: --bandwidth: '50GB' has unit GB (B), expected a quantity in B/s (B/s)"),
    "zero bandwidth": ([*RING, "--bandwidth", "0"], "aiinfra: error: --bandwidth: expected a bandwidth > 0, got 0 B/s"),
    "latency in bytes": ([*RING, "--latency", "2MB"], "aiinfra: error: --latency: '2MB' has unit MB (B), expected a quantity in s (s)"),
    "zero ranks": (["collective", "ring", "--op", "allreduce", "--ranks", "0", "--bytes", "1GB"],
                   "aiinfra: error: --ranks: expected a whole number from 2 to 512, got 0 (a collective needs at least 2 ranks; schedules list every transfer, so for larger groups evaluate FX1 and FX50 with `aiinfra formula eval`)"),
    "one rank": (["collective", "ring", "--op", "allreduce", "--ranks", "1", "--bytes", "1GiB", "--bandwidth", "50GB/s"],
                 "aiinfra: error: --ranks: expected a whole number from 2 to 512, got 1 (a collective needs at least 2 ranks; schedules list every transfer, so for larger groups evaluate FX1 and FX50 with `aiinfra formula eval`)"),
    "negative show-rounds": ([*RING, "--show-rounds", "-1"], "aiinfra: error: --show-rounds: expected a whole number >= 0, got -1"),
    "routing on a ring": ([*RING, "--routing", "hotspot"], "aiinfra: error: --routing: applies to all-to-all only"),
    "missing matrix file": ([*A2A, "/nonexistent/m.json"],
                            "aiinfra: error: --routing: '/nonexistent/m.json' does not exist (expected balanced, hotspot, hotspot:F or a matrix .json file)"),
    "bad hotspot factor": ([*A2A, "hotspot:x"], "aiinfra: error: --routing: 'hotspot:x': the hotspot factor must be a number >= 1 (e.g. hotspot:8)"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_one_exact_line_and_exit_2(name, capsys):
    argv, message = BAD[name]
    code, out, err = run(argv, capsys)
    assert code == 2, (out, err)
    assert err.strip() == message
    assert out == ""


@pytest.mark.parametrize(
    "text, message",
    [
        ("[[0, 1", "is not JSON"),
        ("[[0, 1], [1, 0]]", "--routing: the matrix must be 3 x 3 for --ranks 3 (found 2 rows of lengths [2])"),
        ("[[0, -1, 1], [1, 0, 1], [1, 1, 0]]", "--routing: entry [0][1] is -1 (expected a number >= 0)"),
        ('[[0, 1, 1], [1, 0, "x"], [1, 1, 0]]', "--routing: entry [1][2] is 'x' (expected a number >= 0)"),
        ("[[0, 0, 0], [0, 0, 0], [0, 0, 0]]", "--routing: every entry of the matrix is 0 (nothing to exchange)"),
        ('{"matrix": []}', "--routing: the matrix must be a JSON list of rows (one list of numbers per source rank)"),
    ],
)
def test_bad_matrix_files_are_one_line_exit_2(text, message, tmp_path, capsys):
    code, out, err = run([*A2A, _matrix_file(tmp_path, text)], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err


def test_root_without_the_collective_formulas_is_refused(capsys):
    from pathlib import Path

    good = Path(__file__).parent.parent / "fixtures" / "roots" / "good"
    code, _, err = run([*RING, "--root", str(good)], capsys)
    assert code == 2
    assert err.strip() == "aiinfra: error: --root: the knowledge root has no formula FX50 (collective needs FX1, FX50, FX51, FX52)"


def test_numeric_path_does_not_import_sympy(capsys):
    assert run([*RING, "--bandwidth", "50GB/s"], capsys)[0] == 0  # fills the compiled cache
    probe = ("import sys; from engine.cli.main import main; "
             "code = main(['collective', 'tree', '--op', 'allreduce', '--ranks', '8', '--bytes', '1GiB', '--bandwidth', '50GB/s', '--format', 'json']); "
             "sys.stdout.flush(); sys.stderr.write(str(code) + ' ' + str('sympy' in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert proc.stderr.strip() == "0 False", proc.stderr
