"""What a demotion costs: compile a kernel both ways and compare the generated code."""
