"""Input files identified by what they hold, not by their names.

Two names may hold the same data: a symlink or hard link (the same file: os.stat's device and
inode after links are followed) or a copy (the same size, first and last bytes). And one name
may hold new data: a FASTQ replaced by `cp -p` or `rsync -a` keeps its name and carries an older
date, so Snakemake's date trigger misses it; a fingerprint of the file (size, date, first and
last bytes) as a rule's parameter makes its params trigger rerun the sample.

Only the first and last HEAD_TAIL_BYTES are read: cheap for a cohort of 100 GB FASTQs, and two
different sequencing files do not share their first and last 64 KiB at the same size.

Deliberate difference from upstream Genomon (docs/differences.md): inputs are compared and
rerun by what they hold; Genomon compares paths and dates.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass

HEAD_TAIL_BYTES = 64 * 1024


def head_tail_digest(path: str) -> str:
    """A digest of a file's size, first and last HEAD_TAIL_BYTES."""
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        digest.update(str(size).encode())
        digest.update(handle.read(HEAD_TAIL_BYTES))
        if size > HEAD_TAIL_BYTES:
            handle.seek(max(HEAD_TAIL_BYTES, size - HEAD_TAIL_BYTES))
            digest.update(handle.read())
    return digest.hexdigest()


def fingerprint(paths: Iterable[str]) -> str:
    """What a job's inputs hold, one `size:mtime_ns:digest` per file: changes when a file is
    replaced under its name, whatever its new date."""
    words = []
    for path in paths:
        stat = os.stat(path)
        words.append(f"{stat.st_size}:{stat.st_mtime_ns}:{head_tail_digest(path)}")
    return " ".join(words)


@dataclass(frozen=True)
class Use:
    """One place an input file is named: its path, and where and as what (for messages)."""

    path: str
    where: object
    field: str


def same_data(first: str, second: str) -> str | None:
    """How two paths hold the same data ('the same file', 'a copy'), or None; None as well when
    either cannot be read (reported elsewhere)."""
    try:
        a, b = os.stat(first), os.stat(second)
        if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino):
            return "the same file"
        if a.st_size == b.st_size and head_tail_digest(first) == head_tail_digest(second):
            return "a copy"
    except OSError:
        return None
    return None


def relation(how: str) -> str:
    """same_data's answer as the words before the other path: 'the same file as', 'a copy of'."""
    return {"the same file": "the same file as", "a copy": "a copy of"}[how]


def repeated_uses(uses: list[Use]) -> list[tuple[Use, Use, str]]:
    """(later use, first use, how) for every use whose file holds the same data as an earlier
    one: the same path, the same file under another name (a link), or a copy. Digests are read
    only for files of equal size, once each."""
    found = []
    first_by_file: dict[tuple[int, int], Use] = {}
    first_by_content: dict[tuple[int, str], Use] = {}
    sizes: dict[int, list[Use]] = {}
    for use in uses:
        try:
            stat = os.stat(use.path)
            sizes.setdefault(stat.st_size, []).append(use)
        except OSError:
            continue  # missing or unreadable: reported by the caller's own checks
    for use in uses:
        try:
            stat = os.stat(use.path)
        except OSError:
            continue
        earlier = first_by_file.get((stat.st_dev, stat.st_ino))
        if earlier:
            found.append((use, earlier, "the same path" if earlier.path == use.path else "the same file"))
            continue
        first_by_file[(stat.st_dev, stat.st_ino)] = use
        if len(sizes[stat.st_size]) < 2:
            continue  # no other file of its size: no copy
        try:
            content = (stat.st_size, head_tail_digest(use.path))
        except OSError:
            continue
        if content in first_by_content:
            found.append((use, first_by_content[content], "a copy"))
        else:
            first_by_content[content] = use
    return found


def repeated_use_message(use: Use, earlier: Use, how: str) -> str:
    """The problem of a later use of data already used (repeated_uses), naming the earlier place."""
    detail = {
        "the same path": "",
        "the same file": f" (the same file as {earlier.path}: a link)",
        "a copy": f" (a copy of {earlier.path}: same size, first and last {HEAD_TAIL_BYTES // 1024} KiB)",
    }[how]
    if use.where == earlier.where:
        if use.field == earlier.field:
            return f"field '{use.field}': a file is named twice: {use.path}{detail} (its reads would be mapped twice)"
        verb = "are the same file" if how == "the same path" else "hold the same data"
        return f"{earlier.field} and {use.field} {verb}: {use.path}{detail}"
    return (
        f"field '{use.field}': {use.path}{detail} is already used at {earlier.where} "
        f"(field '{earlier.field}'): the same reads would be used twice"
    )


def gzip_content_id(path: str) -> str | None:
    """What a gzip file's content is, as its last member's trailer says (the CRC-32 and length
    of the uncompressed data): for a file gzip wrote in one member, the whole content's, whatever
    the compression level or the file's date. None for a file that is not gzip, or ends with an
    empty member (bgzip's end-of-file block, which says nothing about the content)."""
    try:
        with open(path, "rb") as handle:
            if handle.read(2) != b"\x1f\x8b":
                return None
            handle.seek(-8, os.SEEK_END)
            trailer = handle.read(8)
    except OSError:
        return None
    crc, length = int.from_bytes(trailer[:4], "little"), int.from_bytes(trailer[4:], "little")
    return None if length == 0 else f"{crc:08x}:{length}"


def held_inputs(paths: Iterable[str]) -> dict[str, dict[str, str | None]]:
    """Each readable input's fingerprint (what its rule's params hold) and gzip content id, by
    path: what a run records (`record_inputs`) and the next run's plan compares (`changed_inputs`)."""
    held = {}
    for path in paths:
        try:
            held[path] = {"fingerprint": fingerprint([path]), "content": gzip_content_id(path)}
        except OSError:
            continue  # reported by the cohort's own checks
    return held


def changed_inputs(previous: dict, current: dict) -> list[str]:
    """A line for each input whose file changed since the run that recorded `previous`: those
    jobs rerun (their params hold the fingerprint). Saying whether the reads are the same, as far
    as gzip's trailer tells (re-compressed, touched, copied with another date), so that a rerun
    for the same reads is not a surprise; only reading both whole would prove them the same, so
    the sample is mapped again all the same."""
    lines = []
    for path, now in current.items():
        before = previous.get(path)
        if not before or before.get("fingerprint") == now["fingerprint"]:
            continue
        if now["content"] and now["content"] == before.get("content"):
            why = ("the same reads by gzip's CRC-32 and length (re-compressed, or copied with "
                   "another date): mapped again all the same, since only reading both whole would prove it")
        elif now["content"] and before.get("content"):
            why = "other reads (gzip's CRC-32 or length differ): mapped again"
        else:
            why = "its size, date or first and last bytes changed: mapped again"
        lines.append(f"  {path}: changed since the last run, {why}")
    return lines


def record_inputs(path: str, current: dict) -> None:
    """Keep this run's inputs (held_inputs) for the next run's plan, atomically; best effort."""
    import json
    import tempfile

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False,
                                         prefix=".inputs-held.") as handle:
            json.dump(current, handle)
        os.replace(handle.name, path)
    except OSError:
        pass


def read_record(path: str) -> dict:
    """A run's record_inputs, or {} when there is none (or it cannot be read)."""
    import json

    try:
        with open(path) as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}
