"""Issue 30, continued: runbooks 10 (model quality regression), 11 (agent credential leak) and
12 (sandbox escape or policy failure) as diagnosis trees, the chapter 30 trees (model-lifecycle,
model-rollout), the chapter 29 tree (observability-eval) and the chapter 1 and 2 trees
(reading-start, problem-location), walked to every leaf.

Inputs come from the book's own examples where it gives them (the runbook or chapter file named in
each case's comment, cdavid817/AI-Infra); otherwise they are hand-picked, stated beside the case,
one on each side of every threshold. Hand arithmetic is written in the comments.
"""

from __future__ import annotations

QR = dict(containment="done", ruler_changed="no")
CL = dict(containment="done")
SB = dict(containment="done")
# chapter 30 section 30.4.3's canary: 3% refusal baseline, detect 5% (delta 0.02), refund questions 8% of 20 QPS, 5% canary
BOOK_CANARY = dict(baseline_rate=0.03, detectable_shift=0.02, request_rate=20, segment_share=0.08, canary_share=0.05)

# (tree, inputs, expected leaf); the comment says where the inputs come from
CASES = [
    # ---- tree:runbook-quality-regression (runbook 10, rb-10-model-quality-regression.md@66915518)
    ("runbook-quality-regression", dict(containment="not_done"), "contain"),
    ("runbook-quality-regression", dict(containment="done", ruler_changed="yes"), "ruler-changed"),
    # hand-picked: 3 models degraded together (> 1) is the shared-runtime reading of 影响范围; 1 model goes on
    ("runbook-quality-regression", dict(QR, degraded_models=3), "shared-runtime"),
    ("runbook-quality-regression", dict(QR, degraded_models=1, onset_matches_release="yes", replay_differs="yes", same_weights="yes"),
     "optimisation"),
    ("runbook-quality-regression", dict(QR, degraded_models=1, onset_matches_release="yes", replay_differs="yes", same_weights="no",
                                        regression_eval_passed="yes"), "eval-blind-spot"),
    ("runbook-quality-regression", dict(QR, degraded_models=1, onset_matches_release="yes", replay_differs="yes", same_weights="no",
                                        regression_eval_passed="no"), "new-version"),
    ("runbook-quality-regression", dict(QR, degraded_models=1, onset_matches_release="yes", replay_differs="no"), "not-model-side"),
    ("runbook-quality-regression", dict(QR, degraded_models=1, onset_matches_release="no", input_drift="yes"), "data-drift"),
    ("runbook-quality-regression", dict(QR, degraded_models=1, onset_matches_release="no", input_drift="no"), "not-model-side"),
    # ---- tree:runbook-credential-leak (runbook 11, rb-11-agent-credential-leak.md@66915518); defensive only
    ("runbook-credential-leak", dict(containment="not_done"), "contain"),
    # hand-picked audit counts: 0 unexplained calls in the window (not > 0) is exposed-not-misused; 2 (> 0) is an intrusion
    ("runbook-credential-leak", dict(CL, exposure_medium="prompt_or_session", suspicious_calls=0), "model-channel"),
    ("runbook-credential-leak", dict(CL, exposure_medium="prompt_or_session", suspicious_calls=2), "intrusion"),
    ("runbook-credential-leak", dict(CL, exposure_medium="logs_or_traces", suspicious_calls=0), "telemetry"),
    ("runbook-credential-leak", dict(CL, exposure_medium="logs_or_traces", suspicious_calls=1), "intrusion"),
    ("runbook-credential-leak", dict(CL, exposure_medium="code_or_config", suspicious_calls=0), "static-config"),
    ("runbook-credential-leak", dict(CL, exposure_medium="code_or_config", suspicious_calls=5), "intrusion"),
    ("runbook-credential-leak", dict(CL, exposure_medium="third_party_tool", suspicious_calls=0), "tool-boundary"),
    ("runbook-credential-leak", dict(CL, exposure_medium="third_party_tool", suspicious_calls=1), "intrusion"),
    ("runbook-credential-leak", dict(CL, exposure_medium="none_of_these"), "downstream-side"),
    # ---- tree:runbook-sandbox-escape (runbook 12, rb-12-sandbox-escape-response.md@66915518); response only
    ("runbook-sandbox-escape", dict(containment="not_done"), "contain"),
    ("runbook-sandbox-escape", dict(SB, host_unattributed_activity="yes", pool_same_exposure="yes"), "pool-upgrade"),
    ("runbook-sandbox-escape", dict(SB, host_unattributed_activity="yes", pool_same_exposure="no"), "node-intrusion"),
    ("runbook-sandbox-escape", dict(SB, host_unattributed_activity="no", violation_allowed="yes", allow_reason="rule_error"), "policy-config"),
    ("runbook-sandbox-escape", dict(SB, host_unattributed_activity="no", violation_allowed="yes", allow_reason="enforcement_bypassed"),
     "enforcement-bypass"),
    # hand-picked: 1 connection outside the allow-list (> 0, the runbook's zero tolerance) is a missing limit; 0 is a false alarm
    ("runbook-sandbox-escape", dict(SB, host_unattributed_activity="no", violation_allowed="no", off_list_egress=1), "limits-missing"),
    ("runbook-sandbox-escape", dict(SB, host_unattributed_activity="no", violation_allowed="no", off_list_egress=0), "false-positive"),
    # ---- tree:model-lifecycle (chapter 30 section 30.7, figure 30-3; 第30章-模型生命周期管理.md@3312a816)
    ("model-lifecycle", dict(production_models="no"), "convention"),
    # five-minute budget = 300 s: section 30.3's night of archaeology (hours, here 30 min = 1800 s > 300) closes gaps first;
    # a registry lookup of 2 min = 120 s <= 300 goes on
    ("model-lifecycle", dict(production_models="yes", five_tuple_answer_time="30min"), "close-gaps"),
    # "more than 5 releases a month": 5 is not more than 5 (low frequency), 3 is low, 12 is high
    ("model-lifecycle", dict(production_models="yes", five_tuple_answer_time="2min", monthly_releases=5, reflux_into_training="no"), "devops"),
    ("model-lifecycle", dict(production_models="yes", five_tuple_answer_time="2min", monthly_releases=3, reflux_into_training="yes"),
     "devops-with-reflux"),
    ("model-lifecycle", dict(production_models="yes", five_tuple_answer_time="2min", monthly_releases=12, platform_staff_and_no_bypass="no",
                             reflux_into_training="no"), "devops"),
    ("model-lifecycle", dict(production_models="yes", five_tuple_answer_time="2min", monthly_releases=12, platform_staff_and_no_bypass="yes",
                             reflux_into_training="no"), "platform"),
    ("model-lifecycle", dict(production_models="yes", five_tuple_answer_time="2min", monthly_releases=12, platform_staff_and_no_bypass="yes",
                             reflux_into_training="yes"), "platform-with-reflux"),
    # ---- tree:model-rollout (chapter 30 sections 30.4.3 and 30.4.4; 第30章-模型生命周期管理.md@3312a816)
    # FX1110, the book's account: 200 GB x 40 instances / 10 GB/s = 800 s > 300 s (five-minute rollback): stage the last good version
    ("model-rollout", dict(last_good_resident="no", weight_package_bytes="200GB", pull_instances=40, source_bandwidth="10GB/s"),
     "stage-last-good"),
    # the edge itself: 75 GB x 40 / 10 GB/s = 300 s <= 300 s fits; then the book's canary (below) against a 6 h wait
    ("model-rollout", dict(BOOK_CANARY, last_good_resident="no", weight_package_bytes="75GB", pull_instances=40, source_bandwidth="10GB/s",
                           max_observation_window="6h"), "canary"),
    # the book's canary: n = 16 x 0.03 x 0.97 / 0.02^2 = 1164 (the book's ~1200); window = 1164 / (20 x 0.08 x 0.05) = 14550 s = 4.04 h.
    # a 6 h wait (21600 s) fits: canary; a 2 h wait (7200 s) does not, but shadow at 100% is 14550 x 0.05 = 727.5 s (the book's
    # ~13 min) <= 7200: shadow first; a 10 min wait (600 s) is shorter even than 727.5 s: widen the share or coarsen the metric
    ("model-rollout", dict(BOOK_CANARY, last_good_resident="yes", max_observation_window="6h"), "canary"),
    ("model-rollout", dict(BOOK_CANARY, last_good_resident="yes", max_observation_window="2h"), "shadow-first"),
    ("model-rollout", dict(BOOK_CANARY, last_good_resident="yes", max_observation_window="10min"), "widen-or-coarsen"),
    # ---- tree:observability-eval (chapter 29 section 29.5, figure 29-5; 第29章-可观测性与评测流水线.md@8e80088d)
    ("observability-eval", dict(external_commitment="no", missed_regression="no"), "l1"),
    # section 29.1's scenario: a regression monitoring missed for eleven days goes to L2 even on an internal platform
    ("observability-eval", dict(external_commitment="no", missed_regression="yes", multi_engine="no"), "l2-keep"),
    # "more than 3 tenants": 3 is not more than 3, so back to the missed-regression question
    ("observability-eval", dict(external_commitment="yes", sharing_tenants=3, missed_regression="yes", multi_engine="yes"), "l2-otel-map"),
    # weekly = 7 x 86400 = 604800 s: 5 tenants changing every 90 days (7776000 s > 604800, quarterly) stay at L2;
    # every 7 days (604800 <= 604800) is weekly: L3
    ("observability-eval", dict(external_commitment="yes", sharing_tenants=5, change_interval="90d", multi_engine="no"), "l2-keep"),
    ("observability-eval", dict(external_commitment="yes", sharing_tenants=5, change_interval="7d", multi_engine="no"), "l3-keep"),
    ("observability-eval", dict(external_commitment="yes", sharing_tenants=5, change_interval="7d", multi_engine="yes"), "l3-otel-map"),
    # ---- tree:reading-start (chapter 1 section 1.7, figure 1-6; 第01章-从大数据基础设施到AI基础设施.md@66915518)
    ("reading-start", dict(reader_situation="selection_only"), "selection"),
    ("reading-start", dict(reader_situation="new_owner", follows_algorithm_terms="no"), "translation"),
    # "crosses machines": more cards than one node's 8; 64 > 8 crosses, 8 (one full node) does not
    ("reading-start", dict(reader_situation="new_owner", follows_algorithm_terms="yes", largest_job_gpus=64), "part-one"),
    ("reading-start", dict(reader_situation="new_owner", follows_algorithm_terms="yes", largest_job_gpus=8), "platform-first"),
    ("reading-start", dict(reader_situation="burning_problem", problem_side="training"), "training-side"),
    ("reading-start", dict(reader_situation="burning_problem", problem_side="inference"), "inference-side"),
    ("reading-start", dict(reader_situation="burning_problem", problem_side="unclear"), "place-on-thread"),
    # ---- tree:problem-location (chapter 2 section 2.7, figure 2-4; 第02章-两条主线解剖与框架地图.md@894df91a)
    ("problem-location", dict(problem_thread="training_job", training_symptom="waiting_for_data"), "data-segment"),
    ("problem-location", dict(problem_thread="training_job", training_symptom="out_of_memory"), "compute-segment"),
    ("problem-location", dict(problem_thread="training_job", training_symptom="no_scaling"), "sync-segment"),
    ("problem-location", dict(problem_thread="training_job", training_symptom="periodic_stall"), "checkpoint-segment"),
    ("problem-location", dict(problem_thread="training_job", training_symptom="interruptions"), "cross-segment"),
    # runbook 07's edge, half of TTFT: with a 2 s TTFT, 1.5 s of queueing (> 0.5 x 2 = 1 s) is long; 0.2 s (<= 1 s) is short
    ("problem-location", dict(problem_thread="online_request", broken_metric="ttft", queue_time="1.5s", ttft="2s"), "queue-segment"),
    ("problem-location", dict(problem_thread="online_request", broken_metric="ttft", queue_time="0.2s", ttft="2s"), "prefill-segment"),
    ("problem-location", dict(problem_thread="online_request", broken_metric="tpot"), "decode-segment"),
    ("problem-location", dict(problem_thread="online_request", broken_metric="tenant_throttling"), "gateway-segment"),
]
