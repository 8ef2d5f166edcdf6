"""The labs' boolean and categorical success criteria, computed from a lab's inputs.

``CHECKS`` maps the name a lab record gives in ``compute.check`` to a function of the lab's input
values (a dict) and a formula evaluator (``formula(fid, **given) -> value``); each returns a
:class:`CheckResult`. ``values`` of the result join the lab's value pool, so the formulas the record
lists after the check can read them (lab 2's two set bandwidths, lab 10's span times).
Wrong input raises ``InputError`` naming the input (``inputs.<name>``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.core.errors import InputError


@dataclass(frozen=True)
class CheckResult:
    check: str
    passed: bool  # the lab's criterion holds for these inputs
    verdict: str  # one sentence
    lines: list[str] = field(default_factory=list)  # the working, one finding a line
    values: dict = field(default_factory=dict)  # derived quantities the lab's formulas read

    def to_json(self) -> dict:
        return {"check": self.check, "passed": self.passed, "verdict": self.verdict, "lines": list(self.lines), "values": dict(self.values)}


def _need(values: dict, name: str, kind, what: str):
    if name not in values:
        raise InputError(f"inputs.{name}", f"missing; expected {what}")
    value = values[name]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise InputError(f"inputs.{name}", f"expected {what}, got {value!r}")
    return value


def _number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise InputError(name, f"expected a non-negative number, got {value!r}")
    return float(value)


# ---------------------------------------------------------------- lab 2: interconnect domain
# nvidia-smi topo -m link codes by tier, fastest first (its Legend; lab 2 step 1)
TIERS = ("nvlink", "pcie_switch", "pcie_host", "cross_numa")
CODE_TIER = {"PIX": "pcie_switch", "PXB": "pcie_switch", "PHB": "pcie_host", "NODE": "pcie_host", "SYS": "cross_numa"}


def link_tier(code: str, name: str = "inputs.topo_links") -> str:
    """The tier of one ``nvidia-smi topo -m`` cell: NV# is NVLink (the scale-up domain), PIX/PXB a
    PCIe switch, PHB/NODE the CPU's PCIe host bridges within one NUMA node, SYS across NUMA nodes."""
    text = str(code).strip().upper()
    if text.startswith("NV") and text[2:].isdigit() and int(text[2:]) > 0:
        return "nvlink"
    if text in CODE_TIER:
        return CODE_TIER[text]
    raise InputError(name, f"{code!r} is not an nvidia-smi topo link code (NV#, PIX, PXB, PHB, NODE, SYS)")


def _links(values: dict) -> dict[frozenset, str]:
    raw = _need(values, "topo_links", dict, "a mapping 'i-j' -> link code such as NV12 or SYS")
    out = {}
    for pair, code in raw.items():
        parts = str(pair).split("-")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts) or parts[0].strip() == parts[1].strip():
            raise InputError("inputs.topo_links", f"{pair!r} is not a GPU pair 'i-j' of two different indices")
        out[frozenset(int(p) for p in parts)] = link_tier(code, f"inputs.topo_links.{pair}")
    return out


def set_tier(links: dict[frozenset, str], gpus: list[int], name: str) -> str:
    """The lowest tier any pair of ``gpus`` crosses (the set runs at its slowest link, section 7.4.4)."""
    if len(set(gpus)) < 2:
        raise InputError(name, "expected at least two different GPU indices")
    worst = 0
    for i, a in enumerate(sorted(set(gpus))):
        for b in sorted(set(gpus))[i + 1:]:
            pair = frozenset((a, b))
            if pair not in links:
                raise InputError(name, f"no link given for GPUs {a}-{b} in inputs.topo_links")
            worst = max(worst, TIERS.index(links[pair]))
    return TIERS[worst]


def nvlink_domains(links: dict[frozenset, str]) -> list[list[int]]:
    """GPUs joined by NVLink, transitively (NVSwitch or bridges): each list one scale-up domain."""
    gpus = sorted({g for pair in links for g in pair})
    parent = {g: g for g in gpus}

    def root(g):
        while parent[g] != g:
            g = parent[g]
        return g

    for pair, tier in links.items():
        if tier == "nvlink":
            a, b = sorted(pair)
            parent[root(b)] = root(a)
    groups: dict[int, list[int]] = {}
    for g in gpus:
        groups.setdefault(root(g), []).append(g)
    return sorted(groups.values())


def interconnect_domain(values: dict, formula) -> CheckResult:
    links = _links(values)
    bandwidths = _need(values, "tier_bandwidths", dict, "a mapping tier -> nominal per-direction bandwidth (nvlink, pcie_switch, pcie_host, cross_numa)")
    efficiency = values.get("bandwidth_efficiency", 0.7)
    domains = nvlink_domains(links)
    between = sorted({t for pair, t in links.items() if t != "nvlink" and not any(pair <= set(d) for d in domains)}, key=TIERS.index)
    lines = [f"{len(domains)} NVLink domain(s): " + "; ".join("{" + ", ".join(map(str, d)) + "}" for d in domains)
             + (f"; between domains: {', '.join(between)}" if between else "")]
    derived = {}
    for which in ("good_set", "bad_set"):
        gpus = _need(values, which, list, "a list of GPU indices")
        tier = set_tier(links, gpus, f"inputs.{which}")
        if tier not in bandwidths:
            raise InputError("inputs.tier_bandwidths", f"no bandwidth for tier {tier!r}, which {which} {sorted(set(gpus))} crosses")
        busbw = formula("FX1280", nominal_bandwidth=bandwidths[tier], bandwidth_efficiency=efficiency)
        derived[f"{which}_bandwidth"] = busbw
        inside = any(set(gpus) <= set(d) for d in domains)
        lines.append(f"{which.replace('_', ' ')} {sorted(set(gpus))}: lowest tier {tier}" + (" (one NVLink domain)" if inside else " (crosses a domain boundary)")
                     + f"; expected busbw {busbw / 1e9:.4g} GB/s (FX1280: {bandwidths[tier]} x {efficiency})")
    good, bad = derived["good_set_bandwidth"], derived["bad_set_bandwidth"]
    passed = good > bad
    verdict = (f"the good placement is {good / bad:.4g}x faster on the same collective" if passed
               else "the two placements cross the same tier: no good/bad difference on this machine")
    return CheckResult("interconnect_domain", passed, verdict, lines,
                       {"good_set_bandwidth": good, "bad_set_bandwidth": bad})


# ---------------------------------------------------------------- lab 4: gang admission
def _resources(value, name: str) -> dict[str, float]:
    if not isinstance(value, dict) or not value:
        raise InputError(name, f"expected a mapping resource -> amount, got {value!r}")
    return {str(r): _number(v, f"{name}.{r}") for r, v in value.items()}


def gang_admission(values: dict, formula) -> CheckResult:
    """Kueue-style admission, whole workloads in arrival order: a workload is admitted when every
    pod of it fits in the queue's quota (nominal plus what it may borrow) beside those already
    admitted, else it waits with no pod created (section 9.4.1's all-or-nothing)."""
    quota = _resources(_need(values, "quota", dict, "a mapping resource -> nominal quota"), "inputs.quota")
    borrow = _resources(values.get("borrowing_limit") or {r: 0 for r in quota}, "inputs.borrowing_limit")
    node = values.get("node_allocatable")
    workloads = _need(values, "workloads", list, "a list of {name, pods, requests} in arrival order")
    used = {r: 0.0 for r in quota}
    admitted, pending, lines, demands = [], [], [], []
    for i, w in enumerate(workloads):
        where = f"inputs.workloads[{i}]"
        if not isinstance(w, dict) or not {"name", "pods", "requests"} <= set(w):
            raise InputError(where, "expected {name, pods, requests}")
        pods = w["pods"]
        if isinstance(pods, bool) or not isinstance(pods, int) or pods < 1:
            raise InputError(f"{where}.pods", f"expected a positive whole number of pods, got {pods!r}")
        per_pod = _resources(w["requests"], f"{where}.requests")
        uncovered = sorted(set(per_pod) - set(quota))
        if uncovered:
            raise InputError(f"{where}.requests", f"{', '.join(uncovered)} not covered by inputs.quota")
        need = {r: pods * per_pod.get(r, 0.0) for r in quota}
        demands.append(need)
        fits = all(used[r] + need[r] <= quota[r] + borrow.get(r, 0.0) for r in quota)
        if fits:
            for r in quota:
                used[r] += need[r]
            admitted.append(w["name"])
            lines.append(f"{w['name']}: admitted, all {pods} pods created at once (" + ", ".join(f"{r} {need[r]:g}" for r in quota) + ")")
        else:
            pending.append(w["name"])
            lines.append(f"{w['name']}: pending, 0 of {pods} pods created (needs " + ", ".join(f"{r} {need[r]:g}" for r in quota)
                         + "; free " + ", ".join(f"{r} {quota[r] + borrow.get(r, 0.0) - used[r]:g}" for r in quota) + ")")
    borrowed = {r: max(0.0, used[r] - quota[r]) for r in quota}
    if any(borrowed.values()):
        lines.append("borrowed from the cohort: " + ", ".join(f"{r} {v:g}" for r, v in borrowed.items() if v))
    if node is not None:
        cap = _resources(node, "inputs.node_allocatable")
        alone = all(all(d.get(r, 0.0) <= cap.get(r, 0.0) for r in d) for d in demands)
        together = any(sum(d.get(r, 0.0) for d in demands) > cap.get(r, 0.0) for r in quota)
        lines.append("without gang admission: " + ("each job fits the node alone but not together (R < kG): a partial-start deadlock can occur"
                                                   if alone and together else "no partial-start deadlock on this node (R >= kG or a job never fits)"))
    passed = bool(admitted)
    verdict = (f"admitted: {', '.join(admitted)}" + (f"; waiting whole: {', '.join(pending)}" if pending else "")) if admitted else "nothing admitted: no workload fits the quota whole"
    return CheckResult("gang_admission", passed, verdict, lines, {})


# ---------------------------------------------------------------- lab 8: endpoint picking
EPP_SCORERS = ("queue", "kv_cache", "prefix")


def epp_scores(endpoints: list[dict], request_blocks: int, weights: dict) -> list[tuple[str, dict, float]]:
    """Each endpoint's scorer values in [0, 1] and their weighted sum: queue (max − q)/(max − min),
    1 when all queues are equal; KV cache 1 − utilisation; prefix the request's blocks cached there
    over the request's blocks."""
    queues = [e["queue_depth"] for e in endpoints]
    top, low = max(queues), min(queues)
    out = []
    for e in endpoints:
        s = {"queue": 1.0 if top == low else (top - e["queue_depth"]) / (top - low),
             "kv_cache": 1.0 - e["kv_cache_usage"],
             "prefix": min(1.0, e["prefix_blocks_cached"] / request_blocks)}
        out.append((e["name"], s, sum(weights[k] * min(1.0, max(0.0, s[k])) for k in EPP_SCORERS)))
    return out


def epp_pick(values: dict, formula) -> CheckResult:
    endpoints = _need(values, "endpoints", list, "a list of {name, queue_depth, kv_cache_usage, prefix_blocks_cached}")
    if not endpoints:
        raise InputError("inputs.endpoints", "expected at least one endpoint")
    for i, e in enumerate(endpoints):
        if not isinstance(e, dict) or not {"name", "queue_depth", "kv_cache_usage", "prefix_blocks_cached"} <= set(e):
            raise InputError(f"inputs.endpoints[{i}]", "expected {name, queue_depth, kv_cache_usage, prefix_blocks_cached}")
        for key in ("queue_depth", "kv_cache_usage", "prefix_blocks_cached"):
            _number(e[key], f"inputs.endpoints[{i}].{key}")
        if e["kv_cache_usage"] > 1:
            raise InputError(f"inputs.endpoints[{i}].kv_cache_usage", f"expected a fraction 0..1, got {e['kv_cache_usage']!r}")
    blocks = _need(values, "request_prefix_blocks", int, "the request's prompt length in prefix blocks (a positive whole number)")
    if blocks < 1:
        raise InputError("inputs.request_prefix_blocks", f"expected a positive whole number, got {blocks!r}")
    weights = _need(values, "scorer_weights", dict, "a mapping queue/kv_cache/prefix -> weight")
    if set(weights) != set(EPP_SCORERS):
        raise InputError("inputs.scorer_weights", f"expected weights for exactly {', '.join(EPP_SCORERS)}, got {', '.join(sorted(weights))}")
    for k in EPP_SCORERS:
        _number(weights[k], f"inputs.scorer_weights.{k}")
    scored = epp_scores(endpoints, blocks, weights)
    best = max(scored, key=lambda row: row[2])  # the first of equal scores (the reference picker breaks ties at random)
    lines = [f"{name}: queue {s['queue']:.4g}, kv_cache {s['kv_cache']:.4g}, prefix {s['prefix']:.4g} -> {total:.4g}" for name, s, total in scored]
    holder = max(endpoints, key=lambda e: e["prefix_blocks_cached"])
    affinity = best[0] == holder["name"]
    verdict = f"picks {best[0]} (score {best[2]:.4g})" + ("; the request stays with the instance holding its prefix" if affinity
                                                         else f"; load outweighs the prefix held by {holder['name']}")
    return CheckResult("epp_pick", affinity, verdict, lines, {})


# ---------------------------------------------------------------- lab 10: span tree
MODEL_OPERATIONS = ("chat", "text_completion", "generate_content")
CONTENT_ATTRIBUTES = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.prompt", "gen_ai.completion")
USAGE_ATTRIBUTES = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")


def span_tree(values: dict, formula) -> CheckResult:
    """Lab 10's trace: one invoke_agent root, model-call and execute_tool children inside it on the
    time axis, token usage on every model call, no prompt or completion text unless opted in."""
    spans = _need(values, "spans", list, "a list of {name, operation, parent, start, end, attributes}")
    opt_in = values.get("content_opt_in", False)
    by_name, problems = {}, []
    for i, s in enumerate(spans):
        if not isinstance(s, dict) or not {"name", "operation", "start", "end"} <= set(s):
            raise InputError(f"inputs.spans[{i}]", "expected {name, operation, parent, start, end, attributes}")
        if _number(s["end"], f"inputs.spans[{i}].end") < _number(s["start"], f"inputs.spans[{i}].start"):
            raise InputError(f"inputs.spans[{i}].end", "ends before it starts")
        by_name[s["name"]] = s
    roots = [s for s in spans if not s.get("parent")]
    if len(roots) != 1 or roots[0]["operation"] != "invoke_agent":
        problems.append(f"expected one root span of operation invoke_agent, found {len(roots)} root(s)")
    root = roots[0] if roots else spans[0]
    model = [s for s in spans if s["operation"] in MODEL_OPERATIONS]
    tools = [s for s in spans if s["operation"] == "execute_tool"]
    for s in spans:
        parent = by_name.get(s.get("parent")) if s.get("parent") else None
        if s.get("parent") and parent is None:
            problems.append(f"{s['name']}: parent {s['parent']!r} is not a span of the trace")
        elif parent is not None and not (parent["start"] <= s["start"] and s["end"] <= parent["end"]):
            problems.append(f"{s['name']}: lies outside its parent {parent['name']} on the time axis")
    for s in model:
        missing = [a for a in USAGE_ATTRIBUTES if a not in (s.get("attributes") or {})]
        if missing:
            problems.append(f"{s['name']}: no {', '.join(missing)}")
    if not opt_in:
        for s in spans:
            leaked = [a for a in CONTENT_ATTRIBUTES if a in (s.get("attributes") or {})]
            if leaked:
                problems.append(f"{s['name']}: carries {', '.join(leaked)} with content capture off")
    if not model or not tools:
        problems.append(f"expected model-call and execute_tool spans, found {len(model)} and {len(tools)}")
    agent = root["end"] - root["start"]
    model_t = sum(s["end"] - s["start"] for s in model)
    tool_t = sum(s["end"] - s["start"] for s in tools)
    lines = [f"root {root['name']} ({root['operation']}): {agent:g} s; model calls {len(model)}, {model_t:g} s; tools {len(tools)}, {tool_t:g} s",
             *problems] if problems else [f"root {root['name']} ({root['operation']}): {agent:g} s; model calls {len(model)}, {model_t:g} s; tools {len(tools)}, {tool_t:g} s",
                                          "nesting, usage attributes and content capture as the lab expects"]
    verdict = "the trace has the shape of figure 29-3" if not problems else f"{len(problems)} problem(s) with the trace"
    return CheckResult("span_tree", not problems, verdict, lines,
                       {"agent_span_time": agent, "model_span_time": model_t, "tool_span_time": tool_t})


# ---------------------------------------------------------------- lab 11: ML-BOM admission
def _bom_fields(bom: dict) -> tuple[list[str], str | None]:
    """The required parts of a minimal CycloneDX ML-BOM that are missing, and the model's weight digest."""
    missing = []
    if bom.get("bomFormat") != "CycloneDX":
        missing.append("bomFormat: CycloneDX")
    if not bom.get("specVersion"):
        missing.append("specVersion")
    components = bom.get("components") or []
    models = [c for c in components if isinstance(c, dict) and c.get("type") == "machine-learning-model"]
    libraries = [c for c in components if isinstance(c, dict) and c.get("type") in ("library", "framework")]
    digest = None
    if not models:
        missing.append("components[type=machine-learning-model]")
    else:
        m = models[0]
        missing += [f"model.{key}" for key in ("name", "version") if not m.get(key)]
        hashes = [h for h in m.get("hashes") or [] if isinstance(h, dict) and h.get("alg") == "SHA-256" and h.get("content")]
        if hashes:
            digest = hashes[0]["content"]
        else:
            missing.append("model.hashes[alg=SHA-256]")
        params = (m.get("modelCard") or {}).get("modelParameters") or {}
        if not params.get("datasets"):
            missing.append("model.modelCard.modelParameters.datasets")
        if not (params.get("approach") or {}).get("type"):
            missing.append("model.modelCard.modelParameters.approach.type")
    if not libraries:
        missing.append("components[type=library] (the serving framework)")
    return missing, digest


def mlbom_admission(values: dict, formula) -> CheckResult:
    """Lab 11's admission gate: (a) the manifest's signature verifies and its signer is allowed,
    (b) every member's digest matches the manifest, (c) the ML-BOM has its required fields and its
    weight digest matches the manifest. Any failure rejects."""
    bom = _need(values, "bom", dict, "a CycloneDX ML-BOM as a mapping")
    manifest = _need(values, "manifest", dict, "a mapping member file -> SHA-256 digest")
    actual = _need(values, "member_digests", dict, "a mapping member file -> the SHA-256 digest computed now")
    signature = _need(values, "signature", dict, "{verified, identity, issuer}")
    allowed = _need(values, "allowed_signers", list, "a list of {identity, issuer}")
    weights = values.get("weights_member", "weights.bin")
    reasons = []
    if not signature.get("verified"):
        reasons.append("(a) the manifest's signature does not verify")
    elif not any(a.get("identity") == signature.get("identity") and a.get("issuer") == signature.get("issuer") for a in allowed):
        reasons.append(f"(a) signer {signature.get('identity')} ({signature.get('issuer')}) is not on the allow list")
    for member, digest in sorted(manifest.items()):
        if actual.get(member) != digest:
            reasons.append(f"(b) {member}: digest {actual.get(member, 'missing')} differs from the manifest's {digest}")
    missing, bom_digest = _bom_fields(bom)
    reasons += [f"(c) ML-BOM lacks {m}" for m in missing]
    if bom_digest is not None and bom_digest != manifest.get(weights):
        reasons.append(f"(c) the ML-BOM's weight digest {bom_digest} differs from the manifest's {weights}")
    lines = reasons or ["(a) signature verified, signer allowed", "(b) every member matches the manifest", "(c) ML-BOM complete and bound to the weights"]
    verdict = "admitted to the releasable state" if not reasons else f"rejected: {len(reasons)} check(s) failed"
    return CheckResult("mlbom_admission", not reasons, verdict, lines, {})


CHECKS = {"interconnect_domain": interconnect_domain, "gang_admission": gang_admission, "epp_pick": epp_pick,
          "span_tree": span_tree, "mlbom_admission": mlbom_admission}
