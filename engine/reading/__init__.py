"""Reading paths through the chapters."""
