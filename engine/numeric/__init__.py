"""The compiled formula module, evaluation, solving and calculators."""
