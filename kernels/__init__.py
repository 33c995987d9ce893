"""jitguard.kernels: Triton kernels that compile one variant for every token count."""
