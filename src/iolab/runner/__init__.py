"""Running workloads as recorded runs: plan, isolation, resume (later), and the one-cell path."""
