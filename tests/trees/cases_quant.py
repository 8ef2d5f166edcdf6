"""Issue 30: the selection trees of the quant book's chapters 8, 9, 11 and 12, walked to every leaf.

Inputs come from the book's own worked examples (bojieli/ai-infra-book, read in the community
Traditional-Chinese translation book-zh-tw/chapterNN.md@182824e5, section named beside each case);
where the book gives no example for a leaf, the inputs are hand-picked and say so. Hand arithmetic
is written in the comments; nothing here was taken from running the trees.
"""

from __future__ import annotations

# §8.6.3: 16 long requests on an RTX PRO 6000, 12 GiB for KV and buffers, 256 outputs, 7 s deadline
CH8 = dict(kv_pool_limit="12GiB", outputs_per_request=256, request_deadline="7s")
CH8_SHARED = dict(CH8, common_prefix="yes", batch_kv_need="6048MiB", draft_memory="3188MiB", prefill_batch_time="2.04s",
                  decode_round_time="27.35ms", accepted_per_round=3)
CH8_INDEP = dict(CH8, common_prefix="no", batch_kv_need="19008MiB", prefill_batch_time="7.34s", decode_round_time="28.26ms")
# example 9.8: 3.5 requests/s, 1.125 GiB of KV over 25 GB/s (20.7 handoffs/s), 10 s start-up, 60 s drain target
CH9 = dict(qps=3.5, handoff_link_bandwidth="25GB/s", handoff_state_bytes="1.125GiB", startup_time="10s", drain_deadline="60s",
           context_recompute_time="0.856s")
# example 11-9: three rounds, 1 s tools, 24 s deadline, 10 tasks/s, 2 GiB environments, E2B prices
CH11 = dict(task_rounds=3, tool_time="1s", task_deadline="24s", task_rate=10, env_memory="2GiB", host_memory="358GiB",
            env_prep_time="2s", prep_cpu_time="0.1s", memory_price="0.0000045USD/GiB/s", cpu_price=0.000014)
# §12.5.2: remaining twenty rounds, 45 s deadline; §12.1.5: 12 GB phone, 4 GB reserve, q4_0 weights 4.61 GB, 8K KV 1.21 GB
CH12 = dict(device_memory="12GB", device_reserved="4GB", device_weight_bytes="4.61GB", context_kv_bytes="1.21GB",
            device_task_time="64s", edge_task_time="11s", cloud_task_time="31.6s", edge_task_energy="1.81kJ",
            cloud_task_energy="1.12kJ", task_deadline="45s")
# §12.2.3: 64 MiB over 80 Mbit/s + 1 s restore = 6.71 + 1 = 7.71 s; 0.4 s saved per round
MIG = dict(per_round_saving="0.4s", migration_state_bytes="64MiB", migration_link_bandwidth="80Mb/s", restore_time="1s")

CASES = [
    # ---- tree:quant-inference-config (quant ch8 §8.6.3)
    # D: B takes 2.04 + 255 × 0.02735 = 9.01 s > 7; 6048 + 3188 = 9236 MiB <= 12288; 2.04 × 1.094 + 85 × 0.02735 = 4.56 s <= 7
    ("quant-inference-config", CH8_SHARED, "shared-speculative"),
    # 6 GiB: 6048 <= 6144 MiB but 9.01 s > 7 and 9236 > 6144 MiB: no configuration (the book's 6 GiB case)
    ("quant-inference-config", dict(CH8_SHARED, kv_pool_limit="6GiB"), "none-feasible"),
    # 16 outputs: 2.04 + 15 × 0.02735 = 2.45 s <= 7: B (the book: D only 0.08 s faster)
    ("quant-inference-config", dict(CH8_SHARED, outputs_per_request=16), "shared-prefix"),
    # hand-picked: a 5 GiB pool, 6048 > 5120 MiB
    ("quant-inference-config", dict(CH8_SHARED, kv_pool_limit="5GiB"), "none-feasible"),
    # hand-picked: 1.2 tokens per round: 2.23176 + 255/1.2 × 0.02735 = 8.04 s > 7
    ("quant-inference-config", dict(CH8_SHARED, accepted_per_round=1.2), "none-feasible"),
    # A and C: 19008 MiB > 12288; q8_0 19008 × 34/64 = 10098 <= 12288; 7.34 + 255 × 0.02826 = 14.55 s > 7
    ("quant-inference-config", CH8_INDEP, "none-feasible"),
    # hand-picked 20 s deadline: 14.55 <= 20: C
    ("quant-inference-config", dict(CH8_INDEP, request_deadline="20s"), "q8-kv"),
    # hand-picked: 30000 MiB × 34/64 = 15937.5 > 12288
    ("quant-inference-config", dict(CH8_INDEP, batch_kv_need="30000MiB", request_deadline="20s"), "none-feasible"),
    # hand-picked 24 GiB and 20 s: 19008 <= 24576; A's rounds 29.63 ms: 7.34 + 255 × 0.02963 = 14.90 s <= 20
    ("quant-inference-config", dict(CH8_INDEP, kv_pool_limit="24GiB", decode_round_time="29.63ms", request_deadline="20s"), "independent-bf16"),
    ("quant-inference-config", dict(CH8_INDEP, kv_pool_limit="24GiB", decode_round_time="29.63ms"), "none-feasible"),  # 14.90 > 7
    # ---- tree:quant-pd-placement (quant ch9 §9.2.3, §9.7.2, §9.7.3)
    # example 9.8: min(4.55, 20.7) = 4.55 > 3.02; (4.55 - 3.5) × 50 = 52.5 >= 3.5 × 10 = 35; nothing reused: direct
    ("quant-pd-placement", dict(CH9, cluster_kind="heterogeneous", colocated_rate=3.02, pd_pool_rate=4.55, later_reuse="no"), "pd-direct"),
    # §9.7.3: one later reuse: 2 × 1.125 GiB / 25 GB/s = 96.6 ms < 856 ms
    ("quant-pd-placement", dict(CH9, cluster_kind="heterogeneous", colocated_rate=3.02, pd_pool_rate=4.55, later_reuse="yes"), "pd-shared-pool"),
    # hand-picked 50 ms recompute: 96.6 ms >= 50 ms
    ("quant-pd-placement", dict(CH9, cluster_kind="heterogeneous", colocated_rate=3.02, pd_pool_rate=4.55, later_reuse="yes",
                                context_recompute_time="50ms"), "pd-direct"),
    # §9.7.2: kernels at 90% of the assumed efficiency: D pool 4.10: (4.10 - 3.5) × 50 = 30 < 35 (drain at 68.5 s)
    ("quant-pd-placement", dict(CH9, cluster_kind="heterogeneous", colocated_rate=3.02, pd_pool_rate=4.10), "scale-out"),
    # §9.2.4 129 outputs: colocated 5.84, split 6.33: 6.33 > 5.84; (6.33 - 3.5) × 50 = 141.5 >= 35
    ("quant-pd-placement", dict(CH9, cluster_kind="heterogeneous", colocated_rate=5.84, pd_pool_rate=6.33, later_reuse="no"), "pd-direct"),
    # §9.7.3 prefix hit: colocated 4.90, two A100 for P and six cards for D 5.69: 5.69 > 4.90, (5.69 - 3.5) × 50 = 109.5 >= 35
    ("quant-pd-placement", dict(CH9, cluster_kind="heterogeneous", colocated_rate=4.90, pd_pool_rate=5.69, later_reuse="no"), "pd-direct"),
    # exercise 9-2: a 1.21 GB/s link carries 1.21e9 / 1.2079596e9 = 1.0017 handoffs/s <= 3.02: colocated 3.02 < 3.5
    ("quant-pd-placement", dict(CH9, cluster_kind="heterogeneous", colocated_rate=3.02, pd_pool_rate=4.55, handoff_link_bandwidth="1.21GB/s"),
     "scale-out"),
    # §9.2.3: eight A100s colocated 3.05 requests/s at 2.5 requests/s: (3.05 - 2.5) × 50 = 27.5 >= 2.5 × 10 = 25
    ("quant-pd-placement", dict(CH9, cluster_kind="homogeneous", colocated_rate=3.05, pd_pool_rate=2.83, qps=2.5), "colocated"),
    # the same eight A100s at 3.5 requests/s: 3.05 < 3.5
    ("quant-pd-placement", dict(CH9, cluster_kind="homogeneous", colocated_rate=3.05, pd_pool_rate=2.83), "scale-out"),
    # ---- tree:quant-agent-environment (quant ch11 §11.5.3)
    # normal service: 3 × (9 + 1) = 30 > 24 and 3 × 9 = 27 >= 24: only a faster model helps
    ("quant-agent-environment", dict(CH11, model_call_time="9s"), "faster-model"),
    # fast service: 3 × 7 = 21 <= 24; 10 × 2 GiB × 21 s = 420 GiB > 358 GiB: rebuild each round
    ("quant-agent-environment", dict(CH11, model_call_time="6s"), "rebuild-per-round"),
    # hand-picked 512 GiB host: 420 <= 512; keep 2 × 6 × 4.5e-6 = 5.4e-5 > rebuild 2 × 2 × 4.5e-6 + 0.1 × 1.4e-5 = 1.94e-5 USD
    ("quant-agent-environment", dict(CH11, model_call_time="6s", host_memory="512GiB"), "rebuild-per-round"),
    # the book's 2 s wait (512 GiB host): 3 × 3 = 9 <= 24; 10 × 2 × 9 = 180 <= 512; keep 2 × 2 × 4.5e-6 = 1.8e-5 <= 1.94e-5
    ("quant-agent-environment", dict(CH11, model_call_time="2s", host_memory="512GiB"), "keep-resident"),
    # hand-picked: 7 s calls, 2 s tools: 3 × 9 = 27 > 24 but 3 × 7 = 21 < 24
    ("quant-agent-environment", dict(CH11, model_call_time="7s", tool_time="2s"), "faster-tools"),
    # ---- tree:quant-edge-cloud (quant ch12 §12.1.5, §12.5.2-12.5.3)
    # 4.61 + 1.21 = 5.82 <= 12 - 4 = 8 GB; 64.0 > 45; both remote in time, 1.12 <= 1.81 kJ: the cloud
    ("quant-edge-cloud", CH12, "cloud"),
    # uplink 3.5 Mbit/s: the cloud takes 48.2 s > 45, the workstation 11.0 s: edge
    ("quant-edge-cloud", dict(CH12, cloud_task_time="48.2s"), "edge"),
    # hand-picked: the workstation at 1.0 kJ < 1.12 kJ, both in time
    ("quant-edge-cloud", dict(CH12, edge_task_energy="1.0kJ"), "edge"),
    # hand-picked 10 s deadline: 11.0 > 10 and 31.6 > 10
    ("quant-edge-cloud", dict(CH12, task_deadline="10s"), "none-in-time"),
    # hand-picked: the workstation at 50 s > 45, the cloud 31.6 <= 45
    ("quant-edge-cloud", dict(CH12, edge_task_time="50s"), "cloud"),
    # §12.1.5: BF16 16.38 GB + 1.21 GB = 17.59 > 8 GB on the 12 GB phone: remote
    ("quant-edge-cloud", dict(CH12, device_weight_bytes="16.38GB"), "cloud"),
    # 24 GB phone: 17.59 <= 20 GB; hand-picked device time 40 s <= 45
    ("quant-edge-cloud", dict(CH12, device_memory="24GB", device_weight_bytes="16.38GB", device_task_time="40s"), "device"),
    # ---- tree:quant-session-migration (quant ch12 §12.2.3)
    ("quant-session-migration", dict(MIG, remaining_rounds=20), "migrate"),  # 20 × 0.4 = 8 > 7.71
    ("quant-session-migration", dict(MIG, remaining_rounds=10), "stay"),  # 4 <= 7.71 (net loss 3.7 s)
    ("quant-session-migration", dict(MIG, remaining_rounds=20, restore_time="2s"), "stay"),  # 8 <= 8.71
    ("quant-session-migration", dict(MIG, remaining_rounds=22, restore_time="2s"), "migrate"),  # 8.8 > 8.71: payback at 22
]
