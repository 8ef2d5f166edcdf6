"""Measured truth (issue 26): measurement records run through the engine with their layouts pinned,
calibrated efficiencies fitted with whole sources held out, scores, the gate and the accuracy page."""
