"""jitguard's bootstrap: `jitguard run` puts this file's directory first on PYTHONPATH.

Python imports `sitecustomize` at start-up in every interpreter it launches (subprocesses,
multiprocessing spawn and forkserver children, torch.multiprocessing workers). With JITGUARD=1
this arms a watcher that starts the jitguard monitor on the process's first `import triton`
(see triton_hook.py next to this file); then it runs the user's own sitecustomize, if one is
further down sys.path, so nothing of theirs is lost. It imports nothing heavy: a process that
never imports Triton stays as cheap as before.
"""

import os
import sys


def _arm_triton_watcher() -> None:
    name = "jitguard.runtime.bootstrap.triton_hook"
    module = sys.modules.get(name)
    if module is None:
        from importlib.util import module_from_spec, spec_from_file_location

        # Loaded by path under its package name: the jitguard package itself is imported only
        # once Triton is, and the vLLM plugin later finds this same module (one watcher, one state).
        spec = spec_from_file_location(name, os.path.join(os.path.dirname(os.path.abspath(__file__)), "triton_hook.py"))
        if spec is None or spec.loader is None:
            return
        module = module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    module.install_import_hook()


def _run_user_sitecustomize() -> None:
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    others = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
    spec = PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module  # `import sitecustomize` now means theirs, as without jitguard
    spec.loader.exec_module(module)


if os.environ.get("JITGUARD") == "1":
    try:
        _arm_triton_watcher()
    except Exception as _exc:
        sys.stderr.write(f"[jitguard] bootstrap failed, this process is not watched: {type(_exc).__name__}: {_exc}\n")

try:
    _run_user_sitecustomize()
except Exception as _exc:
    sys.stderr.write(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(_exc).__name__}: {_exc}\n")
