"""engine.domain.lab_checks: the labs' yes/no criteria on hand-built inputs. Every number is the
book's (lab file cited on the line) or hand arithmetic written in the test; the formula evaluator
is replaced by the hand formula it stands for (FX1280 = nominal × efficiency)."""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.domain import lab_checks as lc


def fx1280(fid, nominal_bandwidth, bandwidth_efficiency):
    assert fid == "FX1280"
    units = {"GB/s": 1e9}
    value = nominal_bandwidth
    for suffix, scale in units.items():
        if isinstance(value, str) and value.endswith(suffix):
            value = float(value[: -len(suffix)]) * scale
    return value * bandwidth_efficiency


# ------------------------------------------------------------------ lab 2
TOPO = {"0-1": "NV12", "2-3": "NV12", "0-2": "NODE", "0-3": "NODE", "1-2": "NODE", "1-3": "NODE"}


@pytest.mark.parametrize("code, tier", [("NV12", "nvlink"), ("NV1", "nvlink"), ("PIX", "pcie_switch"), ("PXB", "pcie_switch"),
                                        ("PHB", "pcie_host"), ("NODE", "pcie_host"), ("SYS", "cross_numa")])
def test_link_codes_of_the_nvidia_smi_legend(code, tier):
    # lab 02 第一步: NV# NVLink; PIX same switch; PXB several bridges; PHB the host bridge; NODE across host bridges; SYS across NUMA
    assert lc.link_tier(code) == tier


def test_unknown_link_code_names_the_pair():
    with pytest.raises(InputError) as e:
        lc.interconnect_domain({"topo_links": {"0-1": "QPI"}, "tier_bandwidths": {}, "good_set": [0, 1], "bad_set": [0, 1]}, fx1280)
    assert e.value.field == "inputs.topo_links.0-1"


def test_two_nvlink_pairs_over_the_host_bridge():
    r = lc.interconnect_domain({"topo_links": TOPO, "tier_bandwidths": {"nvlink": "300GB/s", "pcie_host": "64GB/s"},
                                "good_set": [0, 1], "bad_set": [1, 2], "bandwidth_efficiency": 0.7}, fx1280)
    assert lc.nvlink_domains(lc._links({"topo_links": TOPO})) == [[0, 1], [2, 3]]
    # hand arithmetic: 300e9 × 0.7 = 2.1e11 inside the pair; 64e9 × 0.7 = 4.48e10 across the host bridge
    assert r.values["good_set_bandwidth"] == pytest.approx(2.1e11)
    assert r.values["bad_set_bandwidth"] == pytest.approx(4.48e10)
    assert r.passed and "4.688x" in r.verdict  # 210 / 44.8 = 4.6875
    assert r.lines[0] == "2 NVLink domain(s): {0, 1}; {2, 3}; between domains: pcie_host"


def test_a_set_runs_at_its_slowest_pair():
    # section 7.4.4's 短板效应: {0, 1, 2} has the NVLink pair 0-1 but crosses NODE for 0-2 and 1-2
    assert lc.set_tier(lc._links({"topo_links": TOPO}), [0, 1, 2], "x") == "pcie_host"
    links = lc._links({"topo_links": {**TOPO, "1-3": "SYS"}})
    assert lc.set_tier(links, [0, 1, 3], "x") == "cross_numa"


def test_missing_tier_bandwidth_names_the_field():
    with pytest.raises(InputError) as e:
        lc.interconnect_domain({"topo_links": {**TOPO, "1-2": "SYS"}, "tier_bandwidths": {"nvlink": "300GB/s"},
                                "good_set": [0, 1], "bad_set": [1, 2]}, fx1280)
    assert e.value.field == "inputs.tier_bandwidths" and "cross_numa" in e.value.message


# ------------------------------------------------------------------ lab 4
JOBS = [{"name": "train-a", "pods": 6, "requests": {"cpu": 1}}, {"name": "train-b", "pods": 6, "requests": {"cpu": 1}}]


def test_quota_for_one_job_admits_it_whole_and_the_other_waits_with_no_pod():
    # lab 04 第四步: nominalQuota 6, two jobs of 6 × 1 CPU: 6 ≤ 6 admitted; then 6 + 6 = 12 > 6, pending, 0 pods
    r = lc.gang_admission({"quota": {"cpu": 6}, "workloads": JOBS, "node_allocatable": {"cpu": 8}}, None)
    assert r.passed and r.verdict == "admitted: train-a; waiting whole: train-b"
    assert r.lines[0] == "train-a: admitted, all 6 pods created at once (cpu 6)"
    assert r.lines[1] == "train-b: pending, 0 of 6 pods created (needs cpu 6; free cpu 0)"
    # lab 04 第二步: 8 allocatable CPUs hold one job (6 ≤ 8) but not both (12 > 8): R < kG
    assert "R < kG" in r.lines[2]


def test_no_deadlock_when_the_node_holds_both():
    # 12 allocatable CPUs: 6 + 6 = 12 ≤ 12, so R ≥ kG (lab 04 排查 1: the deadlock needs R < kG)
    r = lc.gang_admission({"quota": {"cpu": 6}, "workloads": JOBS, "node_allocatable": {"cpu": 12}}, None)
    assert "no partial-start deadlock" in r.lines[-1]


def test_borrowing_admits_beyond_nominal_quota():
    # lab 04 第五步: team-a's nominal 4 plus a borrowing limit of 4 from the cohort admits a 6-CPU job (6 ≤ 4 + 4), borrowing 2
    r = lc.gang_admission({"quota": {"cpu": 4}, "borrowing_limit": {"cpu": 4}, "workloads": JOBS[:1]}, None)
    assert r.passed and r.lines[-1] == "borrowed from the cohort: cpu 2"


def test_nothing_fits():
    r = lc.gang_admission({"quota": {"cpu": 5}, "workloads": JOBS}, None)  # 6 > 5 for both
    assert not r.passed and r.verdict == "nothing admitted: no workload fits the quota whole"


def test_uncovered_resource_names_the_workload():
    with pytest.raises(InputError) as e:
        lc.gang_admission({"quota": {"cpu": 6}, "workloads": [{"name": "x", "pods": 1, "requests": {"memory": 1}}]}, None)
    assert e.value.field == "inputs.workloads[0].requests"


# ------------------------------------------------------------------ lab 8
PODS = [{"name": "pod-a", "queue_depth": 3, "kv_cache_usage": 0.6, "prefix_blocks_cached": 8},
        {"name": "pod-b", "queue_depth": 1, "kv_cache_usage": 0.3, "prefix_blocks_cached": 0}]
WEIGHTS = {"queue": 2, "kv_cache": 2, "prefix": 3}  # the EPP's default profile: queue 2, KV-cache utilisation 2, prefix cache 3


def test_prefix_outweighs_a_longer_queue():
    r = lc.epp_pick({"endpoints": PODS, "request_prefix_blocks": 8, "scorer_weights": WEIGHTS}, None)
    # hand arithmetic: pod-a 2·(3−3)/(3−1) + 2·(1−0.6) + 3·8/8 = 0 + 0.8 + 3 = 3.8; pod-b 2·1 + 2·0.7 + 0 = 3.4
    assert r.lines == ["pod-a: queue 0, kv_cache 0.4, prefix 1 -> 3.8", "pod-b: queue 1, kv_cache 0.7, prefix 0 -> 3.4"]
    assert r.passed and r.verdict.startswith("picks pod-a (score 3.8)")


def test_a_full_kv_cache_moves_the_request():
    pods = [{**PODS[0], "kv_cache_usage": 0.95}, PODS[1]]
    r = lc.epp_pick({"endpoints": pods, "request_prefix_blocks": 8, "scorer_weights": WEIGHTS}, None)
    # pod-a 0 + 2·0.05 + 3 = 3.1 < pod-b 3.4: load outweighs the prefix
    assert not r.passed and r.verdict.startswith("picks pod-b (score 3.4)")


def test_equal_queues_score_one_each():
    pods = [{**PODS[0], "queue_depth": 2}, {**PODS[1], "queue_depth": 2}]
    scored = lc.epp_scores(pods, 8, WEIGHTS)
    assert [s["queue"] for _, s, _ in scored] == [1.0, 1.0]


def test_weights_must_name_the_three_scorers():
    with pytest.raises(InputError) as e:
        lc.epp_pick({"endpoints": PODS, "request_prefix_blocks": 8, "scorer_weights": {"queue": 1}}, None)
    assert e.value.field == "inputs.scorer_weights"


# ------------------------------------------------------------------ lab 10
def spans(**changes):
    usage = {"gen_ai.usage.input_tokens": 412, "gen_ai.usage.output_tokens": 38}
    out = [{"name": "agent", "operation": "invoke_agent", "parent": None, "start": 0.0, "end": 2.0, "attributes": {}},
           {"name": "chat-1", "operation": "chat", "parent": "agent", "start": 0.0, "end": 1.2, "attributes": dict(usage)},
           {"name": "tool", "operation": "execute_tool", "parent": "agent", "start": 1.2, "end": 1.45, "attributes": {}},
           {"name": "chat-2", "operation": "chat", "parent": "agent", "start": 1.45, "end": 1.95, "attributes": dict(usage)}]
    for name, fields in changes.items():
        next(s for s in out if s["name"] == name.replace("_", "-")).update(fields)
    return out


def test_the_lab_shape_passes_and_gives_the_span_times():
    r = lc.span_tree({"spans": spans(), "content_opt_in": False}, None)
    assert r.passed
    # hand arithmetic: model 1.2 + (1.95 − 1.45) = 1.7 s; tool 1.45 − 1.2 = 0.25 s; root 2.0 s
    assert r.values["agent_span_time"] == 2.0
    assert r.values["model_span_time"] == pytest.approx(1.7)
    assert r.values["tool_span_time"] == pytest.approx(0.25)


def test_a_child_outside_its_parent_breaks_the_nesting():
    r = lc.span_tree({"spans": spans(chat_2={"end": 2.1})}, None)
    assert not r.passed and "chat-2: lies outside its parent agent on the time axis" in r.lines


def test_content_without_opt_in_is_a_problem_and_with_it_is_not():
    leaked = spans(chat_1={"attributes": {"gen_ai.usage.input_tokens": 1, "gen_ai.usage.output_tokens": 1, "gen_ai.input.messages": "hi"}})
    assert "chat-1: carries gen_ai.input.messages with content capture off" in lc.span_tree({"spans": leaked}, None).lines
    assert lc.span_tree({"spans": leaked, "content_opt_in": True}, None).passed


def test_missing_usage_is_named():
    r = lc.span_tree({"spans": spans(chat_2={"attributes": {}})}, None)
    assert "chat-2: no gen_ai.usage.input_tokens, gen_ai.usage.output_tokens" in r.lines


# ------------------------------------------------------------------ lab 11
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  # SHA-256 of the empty message (FIPS 180-4)
SIGNER = {"identity": "release-bot@example.com", "issuer": "https://accounts.example.com"}


def package(**changes):
    bom = {"bomFormat": "CycloneDX", "specVersion": "1.5",
           "components": [{"type": "machine-learning-model", "name": "m", "version": "1", "hashes": [{"alg": "SHA-256", "content": EMPTY}],
                           "modelCard": {"modelParameters": {"approach": {"type": "supervised"}, "datasets": [{"type": "dataset", "name": "d"}]}}},
                          {"type": "library", "name": "vllm", "version": "0.6.0"}]}
    values = {"bom": bom, "manifest": {"weights.bin": EMPTY}, "member_digests": {"weights.bin": EMPTY},
              "signature": {"verified": True, **SIGNER}, "allowed_signers": [SIGNER]}
    values.update(changes)
    return values


def test_untouched_package_is_admitted():
    assert lc.mlbom_admission(package(), None).passed


@pytest.mark.parametrize("change, reason", [
    # lab 11 第 7 步 (a): one byte of weights.bin changed
    ({"member_digests": {"weights.bin": "sha256:00"}}, f"(b) weights.bin: digest sha256:00 differs from the manifest's {EMPTY}"),
    # (b): manifest.json changed, its signature no longer verifies
    ({"signature": {"verified": False, **SIGNER}}, "(a) the manifest's signature does not verify"),
    # (c): re-signed by an identity not on the allow list
    ({"signature": {"verified": True, "identity": "eve@example.com", "issuer": SIGNER["issuer"]}},
     "(a) signer eve@example.com (https://accounts.example.com) is not on the allow list"),
])
def test_each_tampering_is_rejected_with_its_reason(change, reason):
    r = lc.mlbom_admission(package(**change), None)
    assert not r.passed and r.lines == [reason]


def test_a_bom_with_a_required_field_removed_is_caught():
    # lab 11 第 5 步: delete a required field and the check must catch it
    bom = package()["bom"]
    del bom["components"][0]["modelCard"]["modelParameters"]["datasets"]
    r = lc.mlbom_admission(package(bom=bom), None)
    assert r.lines == ["(c) ML-BOM lacks model.modelCard.modelParameters.datasets"]
