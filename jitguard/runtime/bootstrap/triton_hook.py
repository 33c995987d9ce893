"""Start the jitguard monitor in a process the moment it first imports Triton, and not before.

`jitguard run`'s sitecustomize (and the vLLM plugin) call `install_import_hook()`. If Triton is
already imported the monitor starts at once; otherwise a finder at the front of `sys.meta_path`
waits for `import triton` and starts the monitor right after Triton's own `__init__` has run. A
process that never imports Triton (a resource tracker, a tokenizer worker) pays one string
comparison per import and nothing else.

Only `os` and `sys` are imported here: the sitecustomize loads this file at every interpreter
start, by path, without importing the jitguard package.
"""

from __future__ import annotations

import os
import sys


class _HookState:
    """What the bootstrap keeps in a process until (and after) the monitor starts: one instance."""

    def __init__(self) -> None:
        self.activated_pid: int | None = None
        self.failed = False  # a start-up problem was reported (once)
        self.waiting_for_compat = False  # Triton is imported; the monitor waits for jitguard.triton_compat
        self.pending_process_info: dict = {}  # role, rank, phase to apply when the monitor starts
        self.pending_listeners: dict = {}  # key -> listener, subscribed when the monitor starts
        self.pending_name_source = None  # () -> (role, rank) | None, asked at each compile (monitor.set_name_source)
        self.attached_monitor: object = None  # the monitor the listeners below are subscribed to
        self.attached_listeners: dict = {}  # key -> (listener, its unsubscribe)
        self.child_namer = _default_child_namer


def _default_child_namer(process_name: str) -> None:
    set_pending_process_info(role=process_name)


_STATE = _HookState()


class _ActivatingLoader:
    """Wraps Triton's loader for one import: runs it, then starts the monitor."""

    def __init__(self, loader, spec, watcher) -> None:  # type: ignore[no-untyped-def]
        self._loader = loader
        self._spec = spec
        self._watcher = watcher

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module) -> None:  # type: ignore[no-untyped-def]
        # Put the real loader back first, so Triton (and importlib.resources) never see this wrapper.
        self._spec.loader = self._loader
        try:
            module.__loader__ = self._loader
        except AttributeError:
            pass
        self._loader.exec_module(module)
        self._watcher.triton_imported()

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._loader, name)


def find_spec_with_other_finders(watcher: object, fullname: str, path=None, target=None):  # type: ignore[no-untyped-def]
    """The spec the rest of `sys.meta_path` finds for `fullname` (a watcher asks everyone but itself)."""
    for finder in list(sys.meta_path):
        find = getattr(finder, "find_spec", None)
        if finder is watcher or find is None:
            continue
        spec = find(fullname, path, target)
        if spec is not None:
            return spec
    return None


class TritonImportWatcher:
    """A `sys.meta_path` finder that answers only for `triton`, by asking the other finders."""

    jitguard_triton_watcher = True

    def find_spec(self, fullname: str, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname != "triton":
            return None
        spec = find_spec_with_other_finders(self, fullname, path, target)
        if spec is None:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _ActivatingLoader(spec.loader, spec, self)
        return spec

    def triton_imported(self) -> None:
        remove_import_hook()
        if "jitguard.triton_compat" in sys.modules:
            # Triton's first import came from the top of jitguard.triton_compat (jitguard.install()
            # or offline() before `import triton`): start once that module is complete.
            _STATE.waiting_for_compat = True
            return
        activate_monitor()


def triton_compat_imported() -> None:
    """Called by jitguard.triton_compat at the end of its import: start a monitor that waited for it."""
    if _STATE.waiting_for_compat:
        _STATE.waiting_for_compat = False
        activate_monitor()


def _watchers() -> list:
    return [finder for finder in sys.meta_path if getattr(finder, "jitguard_triton_watcher", False)]


def install_import_hook() -> None:
    """Start the monitor now if Triton is imported, else when it first is (idempotent)."""
    if "triton" in sys.modules:
        activate_monitor()
    elif not _watchers():
        sys.meta_path.insert(0, TritonImportWatcher())


def remove_import_hook() -> None:
    """Take the watcher out of `sys.meta_path` (the monitor, if started, stays)."""
    for finder in _watchers():
        sys.meta_path.remove(finder)


def _running_monitor():  # type: ignore[no-untyped-def]
    module = sys.modules.get("jitguard.runtime.monitor")
    return module.current() if module is not None else None


def set_pending_process_info(role: str | None = None, rank: int | None = None) -> None:
    """Name this process's role and rank: now if the monitor runs (a fork inherits it), else when it starts."""
    if role is not None:
        _STATE.pending_process_info["role"] = role
    if rank is not None:
        _STATE.pending_process_info["rank"] = rank
    if _running_monitor() is not None:
        from jitguard.runtime import monitor
        monitor.set_process_info(role=role, rank=rank)


def set_pending_name_source(source) -> None:  # type: ignore[no-untyped-def]
    """Ask `source()` for this process's (role, rank) at each compile, from when the monitor starts (now if it runs)."""
    _STATE.pending_name_source = source
    if _running_monitor() is not None:
        from jitguard.runtime import monitor
        monitor.set_name_source(source)


def set_pending_phase(phase: str) -> None:
    """Enter `phase` ("serving") when the monitor starts in this process (now, if it runs)."""
    _STATE.pending_process_info["phase"] = phase
    if _running_monitor() is not None:
        _apply_phase(phase)


def _apply_phase(phase: str) -> None:
    from jitguard.runtime import monitor
    if phase == "serving":
        monitor.mark_serving()
    else:
        monitor.mark_warmup()


def add_listener(listener, key: str) -> None:  # type: ignore[no-untyped-def]
    """Call `listener(event)` for every compile, from when the monitor starts (one listener per key)."""
    _STATE.pending_listeners[key] = listener
    running = _running_monitor()
    if running is not None:
        _attach_listeners(running)


def _attach_listeners(running) -> None:  # type: ignore[no-untyped-def]
    if _STATE.attached_monitor is not running:
        _STATE.attached_monitor, _STATE.attached_listeners = running, {}
    attached = _STATE.attached_listeners
    for key, listener in _STATE.pending_listeners.items():
        previous = attached.get(key)
        if previous is None or previous[0] is not listener:
            if previous is not None:
                previous[1]()
            attached[key] = (listener, running.subscribe(listener))


def _make_jitguard_importable() -> None:
    try:
        import jitguard  # noqa: F401
    except ImportError:
        # Another interpreter than the one jitguard is installed in: use the copy this file belongs to.
        root = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, os.pardir))
        if root not in sys.path:
            sys.path.append(root)


def _multiprocessing_name() -> str | None:
    # A spawn or forkserver child otherwise shows only its parent's argv: name it by its Process name.
    mp = sys.modules.get("multiprocessing")
    if mp is None:
        return None
    try:
        name = mp.current_process().name
    except Exception:
        return None
    return None if name == "MainProcess" else name


def name_multiprocessing_children(namer=None) -> None:  # type: ignore[no-untyped-def]
    """Name each multiprocessing child (fork ones too) as it starts: `namer(process_name)` runs first thing
    in the child; by default the role becomes the Process name ("ForkProcess-2").

    A forked child otherwise keeps its parent's role. Idempotent; a later `namer` replaces the earlier.
    """
    if namer is not None:
        _STATE.child_namer = namer
    from multiprocessing import process as mp_process

    original = vars(mp_process.BaseProcess)["_bootstrap"]  # private: where every child starts
    if getattr(original, "_jitguard_names_children", False):
        return

    def _bootstrap(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if os.environ.get("JITGUARD") == "1":
            try:
                _STATE.child_namer(self.name)
            except Exception as exc:
                sys.stderr.write(f"[jitguard] could not name process {os.getpid()}: {type(exc).__name__}: {exc}\n")
        return original(self, *args, **kwargs)

    _bootstrap._jitguard_names_children = True  # type: ignore[attr-defined]
    _bootstrap.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(mp_process.BaseProcess, "_bootstrap", _bootstrap)  # noqa: B010 - a private attribute


def activate_monitor() -> bool:
    """Start the monitor in this process (offline backend first, if JITGUARD_OFFLINE asks); True if running.

    Never raises: a failure is reported once on stderr and the program goes on unwatched.
    """
    if _STATE.activated_pid == os.getpid():
        return True
    try:
        _make_jitguard_importable()
        from jitguard.runtime import monitor
        from jitguard.runtime.offline_backend import activate_from_env
    except Exception as exc:
        _report_once(f"could not start the monitor in pid {os.getpid()}: {type(exc).__name__}: {exc}")
        return False
    try:
        activate_from_env(os.environ.get("JITGUARD_OFFLINE"))
    except Exception as exc:
        _report_once(f"could not activate the offline backend (JITGUARD_OFFLINE={os.environ.get('JITGUARD_OFFLINE')}) "
                     f"in pid {os.getpid()}: {type(exc).__name__}: {exc}")
    try:  # before any compile: JITGUARD_BUNDLE's entries go into this process's Triton cache
        from jitguard.runtime.bundle_install import install_bundle_from_env
        install_bundle_from_env(lambda line: sys.stderr.write(line + "\n"))
    except Exception as exc:
        _report_once(f"could not install JITGUARD_BUNDLE in pid {os.getpid()}: {type(exc).__name__}: {exc}")
    try:
        installed = monitor.install()
    except Exception as exc:
        _report_once(f"could not start the monitor in pid {os.getpid()}: {type(exc).__name__}: {exc}")
        return False
    _STATE.activated_pid = os.getpid()
    try:
        role = _STATE.pending_process_info.get("role") or _multiprocessing_name()
        if role is not None or _STATE.pending_process_info.get("rank") is not None:
            monitor.set_process_info(role=role, rank=_STATE.pending_process_info.get("rank"))
        _attach_listeners(installed)
        if _STATE.pending_name_source is not None:
            monitor.set_name_source(_STATE.pending_name_source)
        if "multiprocessing.process" in sys.modules:  # fork children would otherwise keep this role
            name_multiprocessing_children()
        if _STATE.pending_process_info.get("phase"):
            _apply_phase(_STATE.pending_process_info["phase"])
        if installed.sink is not None:
            installed.sink.write_process_record()
    except Exception as exc:
        _report_once(f"the monitor runs in pid {os.getpid()}, but naming the process or its listeners failed: "
                     f"{type(exc).__name__}: {exc}")
    return True


def _report_once(message: str) -> None:
    if not _STATE.failed:
        _STATE.failed = True
        sys.stderr.write(f"[jitguard] {message}\n")
