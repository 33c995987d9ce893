"""Start-up without compiles on the request path: warm-up plans (pure), their replay."""
