"""Guards over compiles: `no_recompiles`, variant sweeps and the pytest plugin."""
