"""What a watched process runs: Triton hooks, sinks, call capture, the offline backend, the `jitguard run` bootstrap."""
