"""A failed job's storage tiers that are out of space, named with what the storage plan expected.

Tools that die of a full disk often do not say so (bamsort aborts with SIGABRT and a stack
trace). So every job's shell, when the job fails, runs this (workflow/scripts/job-shell.sh)
before the job's work directory is removed: it measures the file system of each tier's place
and prints one line per file system that is (nearly) full, e.g.

    genomon-smk: no space left on shared_tmp (/scratch/run): 0 B free of 1.0 MiB when the job
    failed; the storage plan expected about 8.1 MiB on shared_tmp at its peak

Nothing is printed when every tier has room: the job failed for another reason.

    python -m genomon_smk.runtime.tier_space --tier TIER PLACE PLANNED_BYTES [--tier ...]
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from genomon_smk.plan.storage_plan import human

# A file system counts as full below 1% free, at most 64 MiB: a write that failed for want of
# space leaves less than one write behind, and a big volume is not "full" at 1% (1 TiB of 100).
FULL_FRACTION = 0.01
FULL_BYTES = 64 << 20


@dataclass(frozen=True)
class TierSpace:
    tier: str
    place: str
    planned: int  # bytes the storage plan expects on the tier at its peak
    device: int  # the file system (st_dev): tiers that share one are reported together
    free: int  # bytes an unprivileged writer may still use
    size: int


def existing_ancestor(path: str) -> str:
    """The path, or its nearest existing parent (a tier's place is made by the first job using it)."""
    path = os.path.abspath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def measure(tier: str, place: str, planned: int) -> TierSpace:
    there = existing_ancestor(place)
    usage = os.statvfs(there)
    return TierSpace(tier, place, planned, os.stat(there).st_dev, usage.f_bavail * usage.f_frsize,
                     usage.f_blocks * usage.f_frsize)


def is_full(free: int, size: int) -> bool:
    return free < min(FULL_BYTES, size * FULL_FRACTION)


def full_tier_messages(spaces: list[TierSpace]) -> list[str]:
    """One line per full file system, naming its tiers, their places and the plan's expectations."""
    by_device: dict[int, list[TierSpace]] = {}
    for space in spaces:
        if is_full(space.free, space.size):
            by_device.setdefault(space.device, []).append(space)
    messages = []
    for tiers in by_device.values():
        first = tiers[0]
        names = ", ".join(f"{space.tier} ({space.place})" for space in tiers)
        shared = " (one file system)" if len(tiers) > 1 else ""
        planned = ", ".join(f"{human(space.planned)} on {space.tier}" for space in tiers)
        messages.append(
            f"genomon-smk: no space left on {names}{shared}: {human(first.free)} free of {human(first.size)} "
            f"when the job failed; the storage plan expected about {planned} at {'their peaks' if shared else 'its peak'} "
            "(docs/troubleshooting.md: free space, or move the tier with storage.paths)"
        )
    return messages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Name a failed job's storage tiers that are out of space.")
    parser.add_argument("--tier", nargs=3, action="append", default=[], metavar=("TIER", "PLACE", "PLANNED_BYTES"))
    args = parser.parse_args(argv)
    spaces = []
    for tier, place, planned in args.tier:
        try:
            spaces.append(measure(tier, place, int(planned)))
        except OSError:
            continue  # a place this node cannot see (another node's node_local)
    for message in full_tier_messages(spaces):
        print(message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
