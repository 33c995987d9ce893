"""A tiny kernel package for the jitguard pytest example: `stock` as first written, `fixed` after `jitguard fix`."""
