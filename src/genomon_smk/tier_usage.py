"""Measured use of the storage tiers during a run: peak bytes per tier, what is left at the end.

A thread in the Snakemake process samples the size of every tier place that this machine can
see (each tier's directory; node-local places of other nodes are out of its reach and say so),
and at the end of the run writes a table to the log and a TSV next to the results. Whatever is
left in node_local or shared_tmp after a successful run is reported as a leftover.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from genomon_smk.tierplan import human

SCRATCH_TIERS = ("node_local", "shared_tmp")


def walk(path: str, skip: tuple[str, ...] = ()):
    """os.walk below path, not entering the directories in skip (other tiers nested inside)."""
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in skip]
        yield root, files


def tree_bytes(path: str, skip: tuple[str, ...] = ()) -> int:
    """Bytes of the regular files below path (0 if it does not exist); hard links counted once."""
    total, seen = 0, set()
    for root, files in walk(path, skip):
        for name in files:
            try:
                info = os.lstat(os.path.join(root, name))
            except FileNotFoundError:
                continue  # removed while walking: a temp file deleted by the run
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_size
    return total


def tree_files(path: str, skip: tuple[str, ...] = ()) -> list[str]:
    return [os.path.join(root, name) for root, files in walk(path, skip) for name in files]


@dataclass
class TierMonitor:
    """Samples the tier places every `interval` seconds between start() and finish()."""

    places: dict[str, str]
    interval: float = 2.0
    peak: dict[str, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def visible(self, tier: str) -> bool:
        """A place with a shell variable is resolved per job (per node): not measurable here."""
        return "$" not in self.places[tier]

    def nested(self, tier: str) -> tuple[str, ...]:
        """The other tiers' places inside this tier's place (the local default nests them all)."""
        place = os.path.normpath(self.places[tier])
        return tuple(
            os.path.normpath(other)
            for name, other in self.places.items()
            if name != tier and os.path.normpath(other).startswith(place + os.sep)
        )

    def size(self, tier: str) -> int:
        return tree_bytes(self.places[tier], self.nested(tier))

    def sample(self) -> None:
        for tier in self.places:
            if self.visible(tier):
                self.peak[tier] = max(self.peak.get(tier, 0), self.size(tier))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def start(self) -> None:
        self.sample()
        self._thread = threading.Thread(target=self._run, name="tier-monitor", daemon=True)
        self._thread.start()

    def finish(self, tsv_path: str) -> tuple[str, list[str]]:
        """Stop sampling; write the TSV; return the table text and the leftover files in scratch tiers."""
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.sample()
        rows, leftovers = [], []
        for tier, place in self.places.items():
            if not self.visible(tier):
                rows.append((tier, place, "", "", "per job, not visible from here"))
                continue
            final = self.size(tier)
            if tier in SCRATCH_TIERS:
                leftovers += tree_files(place, self.nested(tier))
            rows.append((tier, place, str(self.peak.get(tier, 0)), str(final), ""))
        os.makedirs(os.path.dirname(tsv_path), exist_ok=True)
        with open(tsv_path, "w") as out:
            out.write("tier\tplace\tpeak_bytes\tfinal_bytes\tnote\n")
            out.writelines("\t".join(row) + "\n" for row in rows)
        lines = ["Storage tiers used (measured):", f"  {'tier':<12}{'peak':>12}{'at the end':>12}  place"]
        for tier, place, peak, final, note in rows:
            shown = (human(int(peak)), human(int(final))) if peak else ("-", "-")
            lines.append(f"  {tier:<12}{shown[0]:>12}{shown[1]:>12}  {place}{'  (' + note + ')' if note else ''}")
        return "\n".join(lines), leftovers
