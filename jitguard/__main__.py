"""`python -m jitguard` is the `jitguard` command."""

from jitguard.cli import main

main()
