"""Issue 30, continued: runbooks 01, 02, 04, 05, 06 and 09 as diagnosis trees and the chapter 5
selection tree (profiling-triage), walked to every leaf.

Inputs come from the book's own examples where it gives them (the runbook or chapter file named in
each case's comment, cdavid817/AI-Infra); otherwise they are hand-picked, stated beside the case,
one on each side of every threshold. Hand arithmetic is written in the comments.
"""

from __future__ import annotations

NCCL_DONE = dict(containment="done", all_ranks_entered="yes")
HANG = dict(time_since_last_step="20min", train_step_time=6)  # runbook 01: hand-picked 20-minute stall of a 6 s step
HANG_IDLE = dict(HANG, watchdog_fired="no", device_activity="all_idle")
STRAG = dict(slowest_rank_step_time=1.15, median_rank_step_time=1.0)  # runbook 04: one card 15% slow

# (tree, inputs, expected leaf); the comment says where the inputs come from
CASES = [
    # ---- tree:runbook-nccl-timeout (runbook 02, rb-02-nccl-hccl-timeout.md@8ecd367c)
    ("runbook-nccl-timeout", dict(containment="not_done"), "contain"),
    ("runbook-nccl-timeout", dict(containment="done", all_ranks_entered="no"), "rank-not-entered"),
    # hand-picked counters: 12 new errors on 1 node -> F; on 3 nodes behind one switch -> G
    ("runbook-nccl-timeout", dict(NCCL_DONE, port_error_increase=12, error_nodes=1), "node-link"),
    ("runbook-nccl-timeout", dict(NCCL_DONE, port_error_increase=12, error_nodes=3), "switch"),
    # clean counters; 10% tolerance (recovery verification): baseline 50 GB/s, so the edge is 0.9 × 50 = 45 GB/s.
    # 25 GB/s (a 400G port negotiated down to 200G) < 45: topology; 46 GB/s >= 45: software
    ("runbook-nccl-timeout", dict(NCCL_DONE, port_error_increase=0, worst_link_bandwidth="25GB/s", baseline_link_bandwidth="50GB/s"), "topology"),
    ("runbook-nccl-timeout", dict(NCCL_DONE, port_error_increase=0, worst_link_bandwidth="46GB/s", baseline_link_bandwidth="50GB/s"), "software"),
    # ---- tree:runbook-straggler (runbook 04, rb-04-straggler.md@8ecd367c)
    # 1.02 s against a 1.00 s median: 2% <= 3%, no straggler; 1.15 s (runbook's 15% card) > 1.03 s: suspect
    ("runbook-straggler", dict(slowest_rank_step_time=1.02, median_rank_step_time=1.0), "no-straggler"),
    ("runbook-straggler", dict(STRAG, containment="not_done", hot_spare="yes"), "kick-and-swap"),
    # no spare: 1.04 s is 4% <= 5% run degraded; 1.08 s is 8%, between 5% and 10%; 1.15 s is 15% >= 10% shrink
    ("runbook-straggler", dict(slowest_rank_step_time=1.04, median_rank_step_time=1.0, containment="not_done", hot_spare="no"), "run-degraded"),
    ("runbook-straggler", dict(slowest_rank_step_time=1.08, median_rank_step_time=1.0, containment="not_done", hot_spare="no"), "weigh-shrink"),
    ("runbook-straggler", dict(STRAG, containment="not_done", hot_spare="no"), "shrink"),
    ("runbook-straggler", dict(STRAG, containment="done", time_goes_to="compute", throttle_reason="thermal"), "thermal-throttle"),
    ("runbook-straggler", dict(STRAG, containment="done", time_goes_to="compute", throttle_reason="power"), "card-degraded"),
    # no throttling; hand-picked GEMM results against a healthy 700 TFLOP/s: edge 0.97 × 700 = 679.
    # 650 < 679: the card itself is degraded; 690 >= 679: the hardware passes, the work is uneven (data skew)
    ("runbook-straggler", dict(STRAG, containment="done", time_goes_to="compute", throttle_reason="none",
                               suspect_benchmark="650TFLOP/s", healthy_benchmark="700TFLOP/s"), "card-degraded"),
    ("runbook-straggler", dict(STRAG, containment="done", time_goes_to="compute", throttle_reason="none",
                               suspect_benchmark="690TFLOP/s", healthy_benchmark="700TFLOP/s"), "data-skew"),
    ("runbook-straggler", dict(STRAG, containment="done", time_goes_to="communication"), "network"),
    ("runbook-straggler", dict(STRAG, containment="done", time_goes_to="data"), "data-skew"),
    # ---- tree:runbook-checkpoint-stall (runbook 05, rb-05-checkpoint-stall.md@669155188)
    ("runbook-checkpoint-stall", dict(containment="not_done", save_progress="advancing"), "throttle-stretch"),
    ("runbook-checkpoint-stall", dict(containment="not_done", save_progress="no_progress"), "abort-generation"),
    ("runbook-checkpoint-stall", dict(containment="done", write_flow="zero"), "save-path-hung"),
    # FX1107: a 70B model's 16N = 1.12e12 B every 30 min needs 1.12e12 / 1800 = 622 MB/s; an upload of 400 MB/s
    # backs up (400 < 622), one of 800 MB/s keeps up (800 >= 622) and the stall is in the save's stages
    ("runbook-checkpoint-stall", dict(containment="done", write_flow="moving", checkpoint_mode="async", upload_throughput="400MB/s",
                                      checkpoint_bytes="1.12TB", checkpoint_interval="30min"), "upload-backlog"),
    ("runbook-checkpoint-stall", dict(containment="done", write_flow="moving", checkpoint_mode="async", upload_throughput="800MB/s",
                                      checkpoint_bytes="1.12TB", checkpoint_interval="30min", critical_stage="metadata"), "metadata-storm"),
    # sync, 1% budget (the book's red line) of a 30-min interval = 18 s: chapter 14's 70 s synchronous save is over
    # (70 > 18); a 10 s save is within (10 <= 18)
    ("runbook-checkpoint-stall", dict(containment="done", write_flow="moving", checkpoint_mode="sync", checkpoint_stall=10,
                                      checkpoint_interval="30min"), "within-budget"),
    ("runbook-checkpoint-stall", dict(containment="done", write_flow="moving", checkpoint_mode="sync", checkpoint_stall=70,
                                      checkpoint_interval="30min", critical_stage="data_bandwidth", windows_overlap="yes"), "stagger-windows"),
    ("runbook-checkpoint-stall", dict(containment="done", write_flow="moving", checkpoint_mode="sync", checkpoint_stall=70,
                                      checkpoint_interval="30min", critical_stage="data_bandwidth", windows_overlap="no",
                                      saturated_side="client"), "client-nic"),
    ("runbook-checkpoint-stall", dict(containment="done", write_flow="moving", checkpoint_mode="sync", checkpoint_stall=70,
                                      checkpoint_interval="30min", critical_stage="data_bandwidth", windows_overlap="no",
                                      saturated_side="storage"), "storage-side"),
    # ---- tree:runbook-oom (runbook 06, rb-06-oom-fragmentation.md@669155188)
    ("runbook-oom", dict(containment="not_done"), "contain"),
    # early usage against the 1 GB floor: 3 GB > 1 GB and not in the ledger is E; 3 GB that the ledger explains,
    # or 0.5 GB <= 1 GB, go on to the fragmentation test
    ("runbook-oom", dict(containment="done", preexisting_usage="3GB", ledger_explains_usage="no"), "external-reserve"),
    # hand-picked error numbers: reserved 78 GB, allocated 70 GB leaves 8 GB unused; a 2 GB request fits (2 <= 8): fragmentation
    ("runbook-oom", dict(containment="done", preexisting_usage="3GB", ledger_explains_usage="yes", oom_requested_bytes="2GB",
                         reserved_bytes="78GB", allocated_bytes="70GB"), "fragmentation"),
    # reserved 78 GB, allocated 77.5 GB leaves 0.5 GB; the 2 GB request does not fit (2 > 0.5): go by the curve
    ("runbook-oom", dict(containment="done", preexisting_usage="0.5GB", oom_requested_bytes="2GB", reserved_bytes="78GB",
                         allocated_bytes="77.5GB", allocated_curve="monotonic_rise"), "leak"),
    ("runbook-oom", dict(containment="done", preexisting_usage="0.5GB", oom_requested_bytes="2GB", reserved_bytes="78GB",
                         allocated_bytes="77.5GB", allocated_curve="plateau_with_peaks", oom_timing="at_start"), "model-states"),
    ("runbook-oom", dict(containment="done", preexisting_usage="0.5GB", oom_requested_bytes="2GB", reserved_bytes="78GB",
                         allocated_bytes="77.5GB", allocated_curve="plateau_with_peaks", oom_timing="backward"), "activation-peak"),
    ("runbook-oom", dict(containment="done", preexisting_usage="0.5GB", oom_requested_bytes="2GB", reserved_bytes="78GB",
                         allocated_bytes="77.5GB", allocated_curve="plateau_with_peaks", oom_timing="sporadic"), "peak-spike"),
    # ---- tree:profiling-triage (ch5 §5.7, figure 5-4; 第05章@8e80088d)
    ("profiling-triage", dict(runs_normally="wont_start"), "version-check"),
    ("profiling-triage", dict(runs_normally="crashes_oom"), "oom-attribution"),
    ("profiling-triage", dict(runs_normally="slow", device_bubble="head"), "data-pipeline"),
    # §5.1.3: decode kernels of a few microseconds; hand-picked t_exec = 5 us. An issue interval of 17 us
    # leaves 17 - 5 = 12 us idle per kernel (the chapter's 12-us gap): launch-bound. 4 us <= 5 us: no launch gap
    ("profiling-triage", dict(runs_normally="slow", device_bubble="gaps", kernel_issue_interval="17us", kernel_exec_time="5us"), "graph-mode"),
    ("profiling-triage", dict(runs_normally="slow", device_bubble="gaps", kernel_issue_interval="4us", kernel_exec_time="5us"), "other-gaps"),
    ("profiling-triage", dict(runs_normally="slow", device_bubble="tail"), "communication-tail"),
    ("profiling-triage", dict(runs_normally="slow", device_bubble="none", roofline_position="near_ceiling"), "scale-out"),
    ("profiling-triage", dict(runs_normally="slow", device_bubble="none", roofline_position="far_below"), "occupancy"),
    # ---- tree:runbook-gateway-upstream (runbook 09, rb-09-gateway-provider-outage.md@77d445ee)
    ("runbook-gateway-upstream", dict(containment="not_done"), "contain"),
    # hand-picked: 3 upstreams failing (> 1) is the multi-upstream branch; 1 is single
    ("runbook-gateway-upstream", dict(containment="done", failing_upstreams=3, common_dependency="yes"), "regional"),
    ("runbook-gateway-upstream", dict(containment="done", failing_upstreams=3, common_dependency="no"), "rollback-gateway"),
    # hand-picked: 120 shifted requests/s onto a backup with 50/s of headroom overruns it (120 > 50): self-harm;
    # 20/s within 50/s is not ours: raise quota
    ("runbook-gateway-upstream", dict(containment="done", failing_upstreams=1, error_class="quota_429", failover_request_rate=120,
                                      upstream_quota_rate=50), "self-inflicted"),
    ("runbook-gateway-upstream", dict(containment="done", failing_upstreams=1, error_class="quota_429", failover_request_rate=20,
                                      upstream_quota_rate=50), "raise-quota"),
    ("runbook-gateway-upstream", dict(containment="done", failing_upstreams=1, error_class="server_5xx", failure_point="before_first_token"),
     "transparent-failover"),
    ("runbook-gateway-upstream", dict(containment="done", failing_upstreams=1, error_class="server_5xx", failure_point="mid_stream"), "in-stream-error"),
    ("runbook-gateway-upstream", dict(containment="done", failing_upstreams=1, error_class="egress_only"), "egress-self"),
    # ---- tree:runbook-training-hang (runbook 01, rb-01-training-hang.md@669155188)
    # hand-picked 6 s normal step (FX1106's example): the heartbeat threshold is 3 x 6 = 18 s; 12 s < 18 s is not yet a
    # hang, 20 minutes (1200 s >= 18 s) is
    ("runbook-training-hang", dict(time_since_last_step=12, train_step_time=6), "below-threshold"),
    ("runbook-training-hang", dict(HANG, watchdog_fired="yes"), "watchdog-timeout"),
    ("runbook-training-hang", dict(HANG, watchdog_fired="no", device_activity="computing"), "still-computing"),
    # the 5-minute evidence budget (300 s): 2 minutes spent (120 < 300) keep collecting, 5 minutes (300 >= 300) stop now
    ("runbook-training-hang", dict(HANG_IDLE, evidence="not_collected", evidence_elapsed="2min"), "collect-evidence"),
    ("runbook-training-hang", dict(HANG_IDLE, evidence="not_collected", evidence_elapsed="5min"), "stop-restart"),
    ("runbook-training-hang", dict(HANG_IDLE, evidence="collected", rank_state="all_in_collective"), "branch-a"),
    ("runbook-training-hang", dict(HANG_IDLE, evidence="collected", rank_state="minority_outside", minority_stack="data_loading"), "b-data"),
    ("runbook-training-hang", dict(HANG_IDLE, evidence="collected", rank_state="minority_outside", minority_stack="checkpoint_write"), "b-storage"),
    ("runbook-training-hang", dict(HANG_IDLE, evidence="collected", rank_state="minority_outside", minority_stack="compute_kernel"), "b-hardware"),
    ("runbook-training-hang", dict(HANG_IDLE, evidence="collected", rank_state="minority_outside", minority_stack="lock_wait"), "b-deadlock"),
    ("runbook-training-hang", dict(HANG_IDLE, evidence="collected", rank_state="steps_differ"), "branch-c"),
    ("runbook-training-hang", dict(HANG_IDLE, evidence="collected", rank_state="node_unreachable"), "branch-d"),
]
