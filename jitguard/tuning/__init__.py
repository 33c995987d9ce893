"""Autotuning: bucketed autotune keys, tuning records, pre-tuning from a plan."""
