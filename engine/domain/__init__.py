"""Models, hardware, the forward ledger, roofline, collectives, presets and reference architectures."""
