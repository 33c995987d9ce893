"""Kernels launched from another file: what those launches pass, handed to the file that defines the kernel.

A wrapper module often launches kernels it imports (`from .kernels import loss_kernel`, then
`loss_kernel[grid](x, n_valid)`). Each file's scan records such launches by position
(`FileScan.launches_elsewhere`: module ref, kernel name, `launch_sites.by_position` facts); once every
file of a run is scanned, each file that defines one of those kernels (`cross_file_helpers.defines`) is
scanned again with them, so a run-time count, a float or a flag passed in the wrapper file is judged as
if the launch were in the kernel's own file. Launches through a module attribute (`kernels.k[grid]`)
and names re-exported through a package's ``__init__`` are not followed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from jitguard.codemod.cross_file_helpers import defines, module_stem
from jitguard.codemod.launch_sites import LaunchFacts
from jitguard.codemod.scan import FileScan

# (a scan, kernel name -> (launching file, facts by position)) -> the file scanned again with those launches
Rescan = Callable[[FileScan, Mapping[str, Sequence[tuple[str, LaunchFacts]]]], FileScan]


def with_launches_elsewhere(scans: list[FileScan], rescan: Rescan) -> list[FileScan]:
    """`scans`, each file that defines a kernel another scanned file launches replaced by `rescan(scan, launches)`
    (kernel name -> (launching file, facts by position) of those launches)."""
    by_name: dict[str, list[tuple[str, str, LaunchFacts]]] = {}
    for scan in scans:
        for ref, name, facts in scan.launches_elsewhere:
            by_name.setdefault(name, []).append((scan.path, ref, facts))
    if not by_name:
        return scans
    result = []
    for scan in scans:
        elsewhere = _launches_of(scan, by_name) if scan.module_path and scan.kernel_names else {}
        result.append(rescan(scan, elsewhere) if elsewhere else scan)
    return result


def _launches_of(scan: FileScan, by_name: Mapping[str, list[tuple[str, str, LaunchFacts]]]) -> dict[
        str, list[tuple[str, LaunchFacts]]]:
    stem = module_stem(scan.module_path)
    found: dict[str, list[tuple[str, LaunchFacts]]] = {}
    for name in sorted(scan.kernel_names & set(by_name)):
        for path, ref, facts in by_name[name]:
            if path != scan.path and defines(stem, ref):
                found.setdefault(name, []).append((path, facts))
    return found
