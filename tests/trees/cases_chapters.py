"""Issue 30: the selection trees of the infra chapters that had none, walked to every leaf.

Inputs come from the book's own examples where it gives them (the chapter files named in each
case's comment, cdavid817/AI-Infra); otherwise they are hand-picked, stated beside the case,
one on each side of every threshold. Hand arithmetic is written in the comments.
"""

from __future__ import annotations

H100 = dict(hbm_capacity="80GB", hbm_bandwidth="3.35TB/s")  # NVIDIA H100 SXM datasheet

# (tree, inputs, expected leaf); the comment says where the inputs come from
CASES = [
    # ---- tree:accelerator-scheduling (ch8 §8.7)
    ("accelerator-scheduling", dict(npu_in_cluster="yes"), "ascend-hccs"),  # §8.4.5: Ascend servers, HCCS groups
    ("accelerator-scheduling", dict(npu_in_cluster="no", main_workload="inference_or_dev"), "default-numa"),
    # §8.3: the single-node 8-card job on 8-card machines: 8 <= 8 stays in one node
    ("accelerator-scheduling", dict(npu_in_cluster="no", main_workload="multi_card_training", whole_node_jobs="dominant", job_gpus=8), "whole-node"),
    ("accelerator-scheduling", dict(npu_in_cluster="no", main_workload="multi_card_training", whole_node_jobs="dominant", job_gpus=16), "whole-node-nic"),
    ("accelerator-scheduling", dict(npu_in_cluster="no", main_workload="multi_card_training", whole_node_jobs="mixed", job_gpus=16), "ext-nic"),
    ("accelerator-scheduling", dict(npu_in_cluster="no", main_workload="multi_card_training", whole_node_jobs="mixed", job_gpus=8,
                                    domain_free_now="yes"), "scheduler-extension"),
    # §8.4.3: a 2-hour queue against a week-long run: 2 h <= 0.3 × 168 h = 50.4 h, so wait
    ("accelerator-scheduling", dict(npu_in_cluster="no", main_workload="multi_card_training", whole_node_jobs="mixed", job_gpus=8,
                                    domain_free_now="no", expected_queue_wait="2h", job_run_time="7d"), "wait-for-domain"),
    # hand-picked: a 4-hour run against a 2-hour wait: 2 h > 0.3 × 4 h = 1.2 h, start split
    ("accelerator-scheduling", dict(npu_in_cluster="no", main_workload="multi_card_training", whole_node_jobs="mixed", job_gpus=8,
                                    domain_free_now="no", expected_queue_wait="2h", job_run_time="4h"), "split-accepted"),
    # ---- tree:batch-scheduler (ch9 §9.8)
    ("batch-scheduler", dict(serves_inference="yes", placement_control="fine_placement"), "volcano"),
    ("batch-scheduler", dict(serves_inference="no", k8s_centric="yes", placement_control="quota_and_queue"), "kueue"),
    ("batch-scheduler", dict(serves_inference="no", k8s_centric="no", hpc_operations="yes"), "slurm"),
    ("batch-scheduler", dict(serves_inference="no", k8s_centric="no", hpc_operations="no"), "build-capability"),
    # ---- tree:gang-preemption (ch9 §9.4)
    ("gang-preemption", dict(quota_state="over_max"), "over-quota"),
    # §9.3: a 16-card job when 16 cards are free fits as one gang
    ("gang-preemption", dict(quota_state="within_quota", job_gpus=16, free_gpus=16), "admit-atomic"),
    ("gang-preemption", dict(quota_state="within_quota", job_gpus=16, free_gpus=8, may_preempt="no"), "queue-backfill"),
    # §9.4.2: victim 64 cards, 1 h interval, 20 min restart: 64 × (0.5 + 1/3) h = 53.33 GPU-h.
    # A 16-card job waiting 4 h loses 64 GPU-h > 53.33: preempt; waiting 3 h loses 48 GPU-h <= 53.33: wait
    ("gang-preemption", dict(quota_state="within_quota", job_gpus=16, free_gpus=8, may_preempt="yes", expected_queue_wait="4h",
                             checkpoint_interval="1h", restart_time="20min", victim_gpus=64), "preempt"),
    ("gang-preemption", dict(quota_state="within_quota", job_gpus=16, free_gpus=8, may_preempt="yes", expected_queue_wait="3h",
                             checkpoint_interval="1h", restart_time="20min", victim_gpus=64), "wait-cheaper"),
    # ---- tree:gpu-partitioning (ch10 §10.7)
    ("gpu-partitioning", dict(workload_kind="training"), "whole-card-training"),
    # §10.3: utilisation 31% before splitting: 0.31 > 0.30, keep whole; hand-picked cluster of 64 cards, f = 0.25
    ("gpu-partitioning", dict(workload_kind="inference_or_dev", whole_card_utilisation=0.31, cluster_cards=64, fragmentation_rate=0.25), "whole-card"),
    # hand-picked: 512 cards, f = 0.25 > 0.20 and 512 >= 100: pooling
    ("gpu-partitioning", dict(workload_kind="inference_or_dev", whole_card_utilisation=0.5, cluster_cards=512, fragmentation_rate=0.25), "pooling"),
    ("gpu-partitioning", dict(workload_kind="inference_or_dev", whole_card_utilisation=0.2, needs_fault_isolation="no"), "time-slicing"),
    # §10.3: 7 MIG instances of a 7B model (BF16 weights about 14 GB): 7 × 14 GB = 98 GB > 80 GB, do not split;
    # a 1.5B model (about 3 GB, hand-picked 3 GB + 2 GB KV) needing 300 GB/s: 7 × 5 = 35 GB <= 80, 7 × 0.3 = 2.1 TB/s <= 3.35
    ("gpu-partitioning", dict(workload_kind="inference_or_dev", whole_card_utilisation=0.2, needs_fault_isolation="yes", partitions=7,
                              instance_memory_need="14GB", instance_bandwidth_need="300GB/s", **H100), "do-not-split"),
    ("gpu-partitioning", dict(workload_kind="inference_or_dev", whole_card_utilisation=0.2, needs_fault_isolation="yes", partitions=7,
                              instance_memory_need="5GB", instance_bandwidth_need="300GB/s", **H100), "mig"),
    # ---- tree:utilisation-governance (ch11 §11.7 of the file @2132134b)
    # §11.3/§11.7 walk-through: allocation 85% against SM activity 62%: 0.23 > 0.15, left branch, concentrated in two groups
    ("utilisation-governance", dict(review_stage="classify", allocation_rate=0.85, sm_activity=0.62, gap_concentration="few_tenants"), "idle-reclaim"),
    ("utilisation-governance", dict(review_stage="classify", allocation_rate=0.85, sm_activity=0.62, gap_concentration="widespread"), "scheduling-mechanism"),
    # §11.7 walk-through: the MFU-19% job with data_time at 22%: 0.22 > 0.15 (hand-picked allocation 0.8 vs activity 0.7: 0.10 <= 0.15)
    ("utilisation-governance", dict(review_stage="classify", allocation_rate=0.8, sm_activity=0.7, data_wait_share=0.22), "data-wait"),
    ("utilisation-governance", dict(review_stage="classify", allocation_rate=0.8, sm_activity=0.7, data_wait_share=0.03, comm_vs_theory="far_above"), "comm-config"),
    ("utilisation-governance", dict(review_stage="classify", allocation_rate=0.8, sm_activity=0.7, data_wait_share=0.03, comm_vs_theory="near"), "code-inefficiency"),
    # hand-picked: 512 cards for a quarter (90 d × 24 h = 2160 h): 1105920 GPU-h at 2 USD; engineering 30000 USD (2 × = 60000).
    # ΔU 0.02: 0.02 × 2 × 1105920 = 44236.8 < 60000, stop; ΔU 0.05: 110592 >= 60000, next round
    ("utilisation-governance", dict(review_stage="after_round", utilisation_gain=0.02, gpu_hour_cost=2, affected_gpu_hours=1105920,
                                    engineering_cost=30000), "stop-optimising"),
    ("utilisation-governance", dict(review_stage="after_round", utilisation_gain=0.05, gpu_hour_cost=2, affected_gpu_hours=1105920,
                                    engineering_cost=30000), "next-round"),
    # ---- tree:agent-sandbox (ch28 §28.7)
    ("agent-sandbox", dict(managed_allowed="yes"), "managed-service"),
    ("agent-sandbox", dict(managed_allowed="no", code_trust="untrusted", pure_language_deps="yes_high_frequency_short"), "wasm"),
    ("agent-sandbox", dict(managed_allowed="no", code_trust="untrusted", pure_language_deps="no_full_ecosystem", virtualisation_ok="yes"), "microvm-pool"),
    ("agent-sandbox", dict(managed_allowed="no", code_trust="untrusted", pure_language_deps="no_full_ecosystem", virtualisation_ok="no"), "hardened-container"),
    # §28.4.2: λ = 10/s, container T_cold 2 s, headroom 2: 40 instances × 500 MB = 20 GB; a 32 GB budget holds it, 16 GB does not
    ("agent-sandbox", dict(managed_allowed="no", code_trust="internal_semi_trusted", container_review="passes", sandbox_arrival_rate=10,
                           sandbox_cold_start="2s", pool_headroom=2, sandbox_memory_floor="500MB", pool_memory_budget="32GB"), "container-warm-pool"),
    ("agent-sandbox", dict(managed_allowed="no", code_trust="internal_semi_trusted", container_review="passes", sandbox_arrival_rate=10,
                           sandbox_cold_start="2s", pool_headroom=2, sandbox_memory_floor="500MB", pool_memory_budget="16GB"), "microvm-pool"),
    ("agent-sandbox", dict(managed_allowed="no", code_trust="internal_semi_trusted", container_review="fails"), "microvm-pool"),
    # ---- tree:model-gateway (ch27 §27.7)
    ("model-gateway", dict(upstream_count=1, tenant_cost_control="no"), "thin-gateway"),
    ("model-gateway", dict(upstream_count=1, tenant_cost_control="yes"), "metering"),
    ("model-gateway", dict(upstream_count=3, outage_stops_product="no"), "metering"),
    # §27.5: two full-time engineers is the floor; one is below it
    ("model-gateway", dict(upstream_count=5, outage_stops_product="yes", semantic_cache_fit="yes", gateway_owners=2), "selfbuilt-cache"),
    ("model-gateway", dict(upstream_count=5, outage_stops_product="yes", semantic_cache_fit="no", gateway_owners=2), "selfbuilt-routing"),
    ("model-gateway", dict(upstream_count=5, outage_stops_product="yes", semantic_cache_fit="no", gateway_owners=1), "adopt-whole"),
    # ---- tree:runbook-gpu-xid-ecc (runbook 03, rb-03-gpu-xid-ecc.md@66915518); counts hand-picked on each side of 0 and 1
    ("runbook-gpu-xid-ecc", dict(containment="not_done", uncorrected_ecc_errors=1), "cordon-restart"),
    ("runbook-gpu-xid-ecc", dict(containment="not_done", uncorrected_ecc_errors=0, job_crashed="yes"), "cordon-restart"),
    ("runbook-gpu-xid-ecc", dict(containment="not_done", uncorrected_ecc_errors=0, job_crashed="no"), "cordon-run-to-checkpoint"),
    ("runbook-gpu-xid-ecc", dict(containment="done", error_cards=3), "batch-event"),
    ("runbook-gpu-xid-ecc", dict(containment="done", error_cards=1, uncorrected_ecc_errors=2), "isolate-now"),
    ("runbook-gpu-xid-ecc", dict(containment="done", error_cards=1, uncorrected_ecc_errors=0, xid_kind="hardware_fatal"), "isolate-now"),
    ("runbook-gpu-xid-ecc", dict(containment="done", error_cards=1, uncorrected_ecc_errors=0, xid_kind="software"), "software-recoverable"),
    ("runbook-gpu-xid-ecc", dict(containment="done", error_cards=1, uncorrected_ecc_errors=0, xid_kind="corrected_ecc_only",
                                 ecc_trend="accelerating"), "planned-isolation"),
    # branch B's 7 days: a repeat after 3 days (<= 7 d) escalates to C, after 30 days stays on the watch list
    ("runbook-gpu-xid-ecc", dict(containment="done", error_cards=1, uncorrected_ecc_errors=0, xid_kind="corrected_ecc_only",
                                 ecc_trend="gentle", days_since_last_trigger="3d"), "planned-isolation"),
    ("runbook-gpu-xid-ecc", dict(containment="done", error_cards=1, uncorrected_ecc_errors=0, xid_kind="corrected_ecc_only",
                                 ecc_trend="gentle", days_since_last_trigger="30d"), "watch-list"),
    # ---- tree:runbook-queue-explosion (runbook 07, rb-07-inference-queue-explosion.md@66915518)
    # the symptom's 50%: 0.3 s of a 4 s TTFT (7.5%, the normal single digits) is not an explosion; 3 s of 4 s (75%) is
    ("runbook-queue-explosion", dict(queue_time="0.3s", ttft="4s"), "not-queueing"),
    ("runbook-queue-explosion", dict(queue_time="3s", ttft="4s", containment="not_done"), "contain"),
    ("runbook-queue-explosion", dict(queue_time="3s", ttft="4s", containment="done", queue_scope="one_instance"), "one-instance"),
    ("runbook-queue-explosion", dict(queue_time="3s", ttft="4s", containment="done", queue_scope="many_models"), "platform-incident"),
    ("runbook-queue-explosion", dict(queue_time="3s", ttft="4s", containment="done", queue_scope="one_model", ingress_vs_baseline="clearly_up",
                                     surge_source="single_tenant"), "tenant-limit"),
    ("runbook-queue-explosion", dict(queue_time="3s", ttft="4s", containment="done", queue_scope="one_model", ingress_vs_baseline="clearly_up",
                                     surge_source="broad"), "scale-and-limit"),
    # hand-picked: 6 healthy of 8 planned instances is a collapse; 8 of 8 is not
    ("runbook-queue-explosion", dict(queue_time="3s", ttft="4s", containment="done", queue_scope="one_model", ingress_vs_baseline="flat",
                                     healthy_instances=6, planned_instances=8), "capacity-collapse"),
    ("runbook-queue-explosion", dict(queue_time="3s", ttft="4s", containment="done", queue_scope="one_model", ingress_vs_baseline="flat",
                                     healthy_instances=8, planned_instances=8, long_prompt_signals="yes", long_prompt_source="single_source"), "limit-source"),
    ("runbook-queue-explosion", dict(queue_time="3s", ttft="4s", containment="done", queue_scope="one_model", ingress_vs_baseline="flat",
                                     healthy_instances=8, planned_instances=8, long_prompt_signals="yes", long_prompt_source="spread"), "chunked-prefill"),
    ("runbook-queue-explosion", dict(queue_time="3s", ttft="4s", containment="done", queue_scope="one_model", ingress_vs_baseline="flat",
                                     healthy_instances=8, planned_instances=8, long_prompt_signals="no"), "admission-mismatch"),
    # ---- tree:runbook-kv-thrash (runbook 08, rb-08-kv-cache-thrashing.md@66915518)
    ("runbook-kv-thrash", dict(preemption_rate=0), "no-thrash"),
    ("runbook-kv-thrash", dict(preemption_rate=0.5, containment="not_done"), "contain"),
    ("runbook-kv-thrash", dict(preemption_rate=0.5, containment="done", running_vs_baseline="clearly_up", concurrency_cause="traffic_growth"), "scale-recompute"),
    ("runbook-kv-thrash", dict(preemption_rate=0.5, containment="done", running_vs_baseline="clearly_up", concurrency_cause="config_change"), "rollback-admission"),
    # Qwen3-8B: F8 = 2 × 36 × 8 × 128 × 2 = 147456 B per token (its config.json). A 32768-token request holds
    # 147456 × 32768 = 4831838208 B > 10% of a 40 GB pool (4e9 B); an 8192-token one holds 1207959552 B <= 4e9
    ("runbook-kv-thrash", dict(preemption_rate=0.5, containment="done", running_vs_baseline="flat", top_request_kv_bytes=147456 * 32768,
                               kv_pool_total="40GB", long_request_legitimate="yes"), "isolate-long-context"),
    ("runbook-kv-thrash", dict(preemption_rate=0.5, containment="done", running_vs_baseline="flat", top_request_kv_bytes=147456 * 32768,
                               kv_pool_total="40GB", long_request_legitimate="no"), "cap-context"),
    ("runbook-kv-thrash", dict(preemption_rate=0.5, containment="done", running_vs_baseline="flat", top_request_kv_bytes=147456 * 8192,
                               kv_pool_total="40GB", prefix_squeeze="yes", squeeze_source="routing_scatter"), "fix-routing"),
    ("runbook-kv-thrash", dict(preemption_rate=0.5, containment="done", running_vs_baseline="flat", top_request_kv_bytes=147456 * 8192,
                               kv_pool_total="40GB", prefix_squeeze="yes", squeeze_source="new_common_prefix"), "pin-prefix"),
    ("runbook-kv-thrash", dict(preemption_rate=0.5, containment="done", running_vs_baseline="flat", top_request_kv_bytes=147456 * 8192,
                               kv_pool_total="40GB", prefix_squeeze="no"), "ledger-changed"),
    # ---- tree:vector-index (ch15 §15.7, figure 15-2; 第15章-向量与检索基础设施.md@108da486)
    # §15.3: the knowledge base launched with 8 million 1024-dimension FP32 vectors: 8e6 < 1e7, no new system
    ("vector-index", dict(vector_count=8e6, vector_dim=1024), "embedded"),
    # hand-picked: 2 billion vectors > 1e9 go straight to IVF+PQ on shards
    ("vector-index", dict(vector_count=2e9, vector_dim=1024), "quantise-shard"),
    # §15.3: 80 million vectors on the 512 GB big-memory machine; FX1130: 8e7 x 1024 x 4 x 1.15 x 1.3 = 4.898816e11 B
    # <= 5.12e11 B (§15.4.4: "at the cliff edge"). Hand-picked recall 0.95 and P99 8 ms (< 10 ms): latency and recall
    # first; hand-picked 500 queries/s against 1000 per replica fit one replica
    ("vector-index", dict(vector_count=8e7, vector_dim=1024, recall_target=0.95, p99_latency_target="8ms", machine_memory="512GB",
                          qps=500, replica_qps=1000), "hnsw"),
    # §15.4.1: 100 million 1024-dimension FP32 vectors: 1e8 x 6123.52 B = 6.12352e11 B > 5.12e11 B: does not fit
    ("vector-index", dict(vector_count=1e8, vector_dim=1024, recall_target=0.95, p99_latency_target="8ms", machine_memory="512GB"),
     "quantise-shard"),
    # cost first: recall 0.90 < 0.95; or recall 0.95 but a P99 target of 50 ms >= 10 ms (both hand-picked)
    ("vector-index", dict(vector_count=8e7, vector_dim=1024, recall_target=0.90, p99_latency_target="8ms", qps=500, replica_qps=1000), "ivf"),
    ("vector-index", dict(vector_count=8e7, vector_dim=1024, recall_target=0.95, p99_latency_target="50ms", qps=500, replica_qps=1000), "ivf"),
    # FX1131: hand-picked 2500 queries/s over 1000 per replica = 3 replicas; 3 x 4.898816e11 = 1.4696448e12 B:
    # a 2 TB budget pays (<=), a 1 TB budget does not (>): quantise first
    ("vector-index", dict(vector_count=8e7, vector_dim=1024, recall_target=0.95, p99_latency_target="8ms", machine_memory="512GB",
                          qps=2500, replica_qps=1000, memory_budget="2TB"), "replicate"),
    ("vector-index", dict(vector_count=8e7, vector_dim=1024, recall_target=0.95, p99_latency_target="8ms", machine_memory="512GB",
                          qps=2500, replica_qps=1000, memory_budget="1TB"), "quantise-shard"),
    ("vector-index", dict(vector_count=8e7, vector_dim=1024, recall_target=0.90, p99_latency_target="8ms",
                          qps=2500, replica_qps=1000, memory_budget="2TB"), "replicate"),
    # ---- tree:training-runtime (ch18 §18.7, figure 18-3; 第18章-并行运行时剖析.md@108da486)
    ("training-runtime", dict(target_hardware="ascend", pytorch_assets="yes"), "route-torch-npu"),
    ("training-runtime", dict(target_hardware="ascend", pytorch_assets="no"), "route-mindspore"),
    # §18.4.7: RL post-training alternating generation and training is a non-standard step
    ("training-runtime", dict(target_hardware="other", training_step="non_standard"), "own-loop"),
    # §18.3: a 30B dense model on 32 cards of 64 GB already needs TP 8 x PP 2
    ("training-runtime", dict(target_hardware="other", training_step="standard", needs_tp_pp="yes", max_mfu_invasive="yes"), "megatron"),
    ("training-runtime", dict(target_hardware="other", training_step="standard", needs_tp_pp="yes", max_mfu_invasive="no"), "fsdp2-tp-pp"),
    ("training-runtime", dict(target_hardware="other", training_step="standard", needs_tp_pp="no", memory_plan="single_owner"), "dp-sharding"),
    # §18.3/§18.4.5: stacking another runtime's ZeRO-3 and CPU offload is the forbidden shortcut
    ("training-runtime", dict(target_hardware="other", training_step="standard", needs_tp_pp="no", memory_plan="stack_runtimes"), "no-stacking"),
]
