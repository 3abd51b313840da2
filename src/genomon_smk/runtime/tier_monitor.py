"""Measured use of the storage tiers during a run: peak bytes per tier, what is left at the end.

When the config's storage.monitor is on (by default on local runs only), a thread in the
Snakemake process samples the size of every tier place that this machine can see (each tier's
directory; node-local places of other nodes are out of its reach and say so), waiting at least
2 s and 20 times its last walk's duration between walks (at most about 5% of one core, however
many files the tiers hold), and at the end of the run writes a table to the log and a TSV next
to the results. Whatever is
left in node_local or shared_tmp is reported as a leftover: after a successful run, after a
failed one, and at the start of the next run (a killed Snakemake runs no handler), each leftover
named as a job's work directory (the job did not finish; its rerun clears it), an intermediate
output of a finished job (the rerun reuses it), or, in a place the user shares with other files,
what the workflow did not write (left as it is): only the directories the rules write into a
tier (`own_dirs`: split/, map/, ...) hold intermediates.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field

from genomon_smk.plan.storage_plan import human

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


WORK_DIR = "work directory of a job that did not finish: cleared when the job reruns"
INTERMEDIATE = "intermediate output of a finished job: reused by the rerun, removed once its readers finish"
OTHER_RUN = "work directory of another run of this workflow (another output directory using this place)"
FOREIGN = "not written by this workflow (a file of yours or of another program in this place): left as it is"
ANY_WORK_DIR = re.compile(r"^[a-z_]+\.[0-9a-f]{8}(\.|$)")
LEFTOVER_COLUMNS = ("when", "tier", "path", "files", "bytes", "kind")


@dataclass(frozen=True)
class Leftover:
    """Something left on a scratch tier: a job's work directory or an intermediate output."""

    tier: str
    path: str
    files: int
    bytes: int
    kind: str


def is_work_dir(name: str, run_key: str) -> bool:
    """Job work directories (and their size samples) are named `RULE.RUN_KEY[.WILDCARD...]`."""
    return f".{run_key}." in f"{name}."


def leftover_items(place: str, run_key: str, skip: tuple[str, ...] = (),
                   own_dirs: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(path, kind) of what lies in a scratch place: each job work directory (with its
    `.sizes` file) as one item, and each output below the first level (`split/SAMPLE`). With
    own_dirs (the first-level directories the rules write), anything else at the first level
    is one item: another run's work directory, or what the workflow did not write."""
    items = []
    top = entries(place)
    names = {entry.name for entry in top}
    for entry in top:
        if os.path.normpath(entry.path) in skip:
            continue
        if is_work_dir(entry.name, run_key):
            if not (entry.name.endswith(".sizes") and entry.name[: -len(".sizes")] in names):
                items.append((entry.path, WORK_DIR))
        elif own_dirs and entry.name not in own_dirs:
            items.append((entry.path, OTHER_RUN if ANY_WORK_DIR.match(entry.name) else FOREIGN))
        elif entry.is_dir(follow_symlinks=False):
            items += [(inner.path, INTERMEDIATE) for inner in entries(entry.path)]
        else:
            items.append((entry.path, INTERMEDIATE))
    return items


def entries(directory: str) -> list[os.DirEntry]:
    """The entries of a directory by name; none if it does not exist (yet, or any more)."""
    try:
        return sorted(os.scandir(directory), key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return []


def measure(path: str) -> tuple[int, int]:
    """(files, bytes) of a file or of the tree below a directory; (0, 0) if it is gone."""
    if os.path.isdir(path) and not os.path.islink(path):
        return len(tree_files(path)), tree_bytes(path)
    try:
        return 1, os.lstat(path).st_size
    except FileNotFoundError:
        return 0, 0


def write_leftovers(leftovers: list[Leftover], tsv_path: str, when: str) -> None:
    os.makedirs(os.path.dirname(tsv_path), exist_ok=True)
    with open(tsv_path, "w") as out:
        out.write("\t".join(LEFTOVER_COLUMNS) + "\n")
        out.writelines(f"{when}\t{i.tier}\t{i.path}\t{i.files}\t{i.bytes}\t{i.kind}\n" for i in leftovers)


def leftover_report(leftovers: list[Leftover], when: str, tsv_path: str, shown: int = 10) -> str:
    """The log's account of the leftovers: the first `shown`, the rest in the TSV."""
    total = sum(item.bytes for item in leftovers)
    lines = [f"Left on the scratch tiers {when}: {len(leftovers)} item(s), {human(total)} (all listed in {tsv_path}):"]
    lines += [f"  {i.tier:<11}{human(i.bytes):>10}  {i.path}  ({i.kind})" for i in leftovers[:shown]]
    if len(leftovers) > shown:
        lines.append(f"  ... and {len(leftovers) - shown} more")
    return "\n".join(lines)


# The monitor waits at least MIN_INTERVAL seconds, and COST_FACTOR times its last walk's
# duration, between walks: it spends at most about 1/COST_FACTOR (5%) of one core walking.
MIN_INTERVAL = 2.0
COST_FACTOR = 20


def next_wait(took: float, minimum: float = MIN_INTERVAL) -> float:
    """Seconds to wait after a measurement that took `took` seconds."""
    return max(minimum, COST_FACTOR * took)


@dataclass
class TierMonitor:
    """Samples the tier places between start() and finish(), every `interval` seconds or
    COST_FACTOR times the last walk's duration, whichever is longer. `enabled` False (the
    config's storage.monitor, off on clusters): no sampling; finish() says so."""

    places: dict[str, str]
    interval: float = MIN_INTERVAL
    enabled: bool = True
    peak: dict[str, int] = field(default_factory=dict)
    samples: int = 0
    walking: float = 0.0  # seconds spent walking, all samples
    # The first-level directories the rules write into the tier places (the workflow's tier_file).
    own_dirs: set[str] = field(default_factory=set)
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

    def leftovers(self, run_key: str) -> list[Leftover]:
        """What lies on the scratch tiers visible from here, each item measured; empty outputs
        (directories whose files were all removed) are not listed."""
        found, seen = [], set()
        for tier in SCRATCH_TIERS:
            if tier not in self.places or not self.visible(tier):
                continue
            for path, kind in leftover_items(self.places[tier], run_key, self.nested(tier), frozenset(self.own_dirs)):
                if path in seen:  # both scratch tiers in one place
                    continue
                seen.add(path)
                # A work directory's size samples lie next to it (job-work-dir.sh): count them with it.
                parts = [measure(p) for p in ([path, path + ".sizes"] if kind == WORK_DIR else [path])]
                files, size = sum(f for f, _ in parts), sum(b for _, b in parts)
                if files or kind == WORK_DIR:
                    found.append(Leftover(tier, path, files, size, kind))
        return found

    def sample(self) -> float:
        """Size every visible tier once; the seconds it took."""
        began = time.monotonic()
        for tier in self.places:
            if self.visible(tier):
                self.peak[tier] = max(self.peak.get(tier, 0), self.size(tier))
        took = time.monotonic() - began
        self.samples += 1
        self.walking += took
        return took

    def _run(self, took: float) -> None:
        while not self._stop.wait(next_wait(took, self.interval)):
            took = self.sample()

    def start(self) -> None:
        if not self.enabled:
            return
        took = self.sample()
        self._thread = threading.Thread(target=self._run, args=(took,), name="tier-monitor", daemon=True)
        self._thread.start()

    def cost(self) -> str:
        """What the sampling cost, for the log."""
        if not self.enabled:
            return "not sampled: config storage.monitor is off"
        return (f"{self.samples} sample(s), {self.walking:.1f} s of walking in all (at least "
                f"{self.interval:g} s and {COST_FACTOR}x a walk's duration between walks)")

    def finish(self, tsv_path: str) -> tuple[str, list[str]]:
        """Stop sampling; write the TSV; return the table text and the leftover files in scratch tiers."""
        self._stop.set()
        if self._thread:
            self._thread.join()
        if self.enabled:
            self.sample()
        rows, leftovers = [], []
        for tier, place in self.places.items():
            if not self.visible(tier):
                rows.append((tier, place, "", "", "per job, not visible from here"))
                continue
            if tier in SCRATCH_TIERS:
                leftovers += tree_files(place, self.nested(tier))
            if self.enabled:
                rows.append((tier, place, str(self.peak.get(tier, 0)), str(self.size(tier)), ""))
            else:
                rows.append((tier, place, "", "", "not monitored (storage.monitor)"))
        os.makedirs(os.path.dirname(tsv_path), exist_ok=True)
        with open(tsv_path, "w") as out:
            out.write("tier\tplace\tpeak_bytes\tfinal_bytes\tnote\n")
            out.writelines("\t".join(row) + "\n" for row in rows)
        lines = [f"Storage tiers used (measured; {self.cost()}):",
                 f"  {'tier':<12}{'peak':>12}{'at the end':>12}  place"]
        for tier, place, peak, final, note in rows:
            shown = (human(int(peak)), human(int(final))) if peak else ("-", "-")
            lines.append(f"  {tier:<12}{shown[0]:>12}{shown[1]:>12}  {place}{'  (' + note + ')' if note else ''}")
        return "\n".join(lines), leftovers
