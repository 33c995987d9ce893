"""Replaying a recorded variant: find the kernel the watched process compiled, rebuild arguments of
the recorded classes. Shared by the warm-up (jitguard.startup) and the price check (jitguard.price)."""
