"""Per-operation latency: HDR histograms, loader clocks (pacing, duration, warm-up), export."""
