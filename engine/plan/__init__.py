"""Parallelism planning: searches over TP x PP x DP (x EP) x micro-batch x ZeRO x recompute,
ranked by step time from the compiled formulas, run serially, on a process pool or on Dask."""
