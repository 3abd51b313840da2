"""Copy the reference to the `cache` tier (the rule `stage_reference`): once per node, locked, checked by size and checksum.

The setup rule stages the reference files (FASTA, .fai, bwa index) and writes a manifest with
each file's size and md5. Every job that reads the reference asks for the staged copy: on a
node that already holds a verified copy this is a few stat calls; on a new node (the cache is
node-local storage on a cluster) the first job copies under a lock while the others wait, so
the files are copied once per node. A copy is verified against the manifest's checksum before
it is used, and a stale or broken copy is replaced.

With `--method llio_transfer` (PJM on Fugaku) nothing is copied: the setup step and every job
that reads the reference run `llio_transfer` on each reference file, and the files keep their
paths (LLIO serves them from the job's SSD cache), so the staged path is the original path. A
file whose size no longer matches the manifest is refused. `purge` runs `llio_transfer --purge`;
llio_transfer works only inside a PJM job, so outside one (Snakemake on a login node, per-rule
jobs whose LLIO cache ended with each job) purge only says so.

When Snakemake itself runs inside the PJM job that also runs the rule jobs (profiles/pjm-allocation),
`start` transfers the reference once at the start of the run and records the job id in a marker
beside the manifest; the setup step and the readers then find the files already transferred in
their job and only check sizes. `purge` at the end of the run removes the marker.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager

CHUNK = 1 << 22
METHODS = ("copy", "llio_transfer")
# The command is looked up on PATH; LLIO_TRANSFER overrides it (tests, site wrappers).
LLIO_TRANSFER_ENV = "LLIO_TRANSFER"


def md5sum(path: str) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def describe(files: list[str]) -> list[dict]:
    """The manifest entries of the source files: absolute path, size and md5."""
    return [{"source": os.path.abspath(f), "size": os.path.getsize(f), "md5": md5sum(f)} for f in files]


def cached_path(cache_dir: str, source: str) -> str:
    """Where a source file lives in the cache: its absolute path below cache_dir (names cannot clash)."""
    return os.path.join(cache_dir, "reference", source.lstrip("/"))


@contextmanager
def locked(cache_dir: str):
    """An exclusive lock on the cache, so concurrent jobs on one node copy once."""
    os.makedirs(cache_dir, exist_ok=True)
    with open(os.path.join(cache_dir, ".stage.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def verified_marker(target: str) -> str:
    return target + ".staged.json"


def is_current(target: str, entry: dict) -> bool:
    """A staged copy is current when its size matches and it was verified against this md5."""
    try:
        with open(verified_marker(target)) as handle:
            marker = json.load(handle)
        return os.path.getsize(target) == entry["size"] and marker["md5"] == entry["md5"]
    except (OSError, ValueError, KeyError):
        return False


def copy_verified(entry: dict, target: str) -> None:
    """Copy a source file into the cache, check size and md5, then mark it verified."""
    os.makedirs(os.path.dirname(target), exist_ok=True)
    partial = target + ".partial"
    shutil.copyfile(entry["source"], partial)
    size, digest = os.path.getsize(partial), md5sum(partial)
    if (size, digest) != (entry["size"], entry["md5"]):
        os.unlink(partial)
        raise OSError(
            f"staged copy of {entry['source']} does not match the manifest "
            f"(size {size} vs {entry['size']}, md5 {digest} vs {entry['md5']}): was the reference changed?"
        )
    os.replace(partial, target)
    with open(verified_marker(target), "w") as handle:
        json.dump({"md5": digest, "size": size}, handle)


def ensure_cached(manifest: list[dict], cache_dir: str) -> list[str]:
    """The staged paths of the manifest's files on this node, copying what is missing or stale."""
    targets = [cached_path(cache_dir, entry["source"]) for entry in manifest]
    if all(is_current(t, e) for t, e in zip(targets, manifest)):
        return targets
    with locked(cache_dir):
        for target, entry in zip(targets, manifest):
            if not is_current(target, entry):
                copy_verified(entry, target)
    return targets


def llio_transfer(paths: list[str], purge: bool = False) -> None:
    """Run llio_transfer (or --purge) on the files, once for all of them; fail loudly if it fails."""
    command = [os.environ.get(LLIO_TRANSFER_ENV, "llio_transfer"), *(["--purge"] if purge else []), *paths]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise OSError(f"{' '.join(command)} failed (exit {result.returncode}): {result.stdout.strip()}")


def check_sizes(manifest: list[dict]) -> None:
    """Refuse reference files whose size changed since the manifest (a cheap check for every job)."""
    for entry in manifest:
        size = os.path.getsize(entry["source"])
        if size != entry["size"]:
            raise OSError(
                f"{entry['source']} has {size} bytes, the manifest says {entry['size']}: was the reference changed?"
            )


def transfer_marker(manifest_path: str) -> str:
    """The file that names the PJM job whose LLIO cache already holds the reference."""
    return manifest_path + ".llio_job"


def current_job() -> str | None:
    """The PJM job this process runs in (PJM_JOBID), or None outside PJM."""
    return os.environ.get("PJM_JOBID") or None


def transferred_in_job(marker: str | None, job: str | None) -> bool:
    """True when the marker says the reference was already llio_transfer'd in this PJM job."""
    if marker is None or job is None:
        return False
    try:
        with open(marker) as handle:
            return handle.read().strip() == job
    except OSError:
        return False


def transfer_in_job(manifest: list[dict], marker: str | None = None) -> list[str]:
    """llio_transfer the manifest's files in this job (unless the marker says this job already
    did); they are then read at their own paths."""
    check_sizes(manifest)
    sources = [entry["source"] for entry in manifest]
    if not transferred_in_job(marker, current_job()):
        llio_transfer(sources)
    return sources


def cache_reference(manifest: list[dict], cache_dir: str, method: str, marker: str | None = None) -> list[str]:
    """The paths jobs read the manifest's files from, staged by the method."""
    if method == "llio_transfer":
        return transfer_in_job(manifest, marker)
    return ensure_cached(manifest, cache_dir)


def staged_fasta(manifest_path: str, cache_dir: str | None, method: str) -> str:
    """The reference FASTA's staged path on this node, staged first if it is not there (`ensure`)."""
    with open(manifest_path) as handle:
        manifest = json.load(handle)
    return cache_reference(manifest, cache_dir, method, transfer_marker(manifest_path))[0]


def start(files: list[str], marker: str, job: str | None) -> str:
    """At the start of a run inside a PJM job: llio_transfer the reference files once for the
    whole job and record the job in the marker; outside PJM do nothing. Returns what was done."""
    if job is None:
        return "not inside a PJM job: every job that reads the reference transfers it"
    llio_transfer([os.path.abspath(f) for f in files])
    os.makedirs(os.path.dirname(os.path.abspath(marker)), exist_ok=True)
    partial = f"{marker}.partial"
    with open(partial, "w") as handle:
        handle.write(job + "\n")
    os.replace(partial, marker)
    return f"{len(files)} reference files llio_transfer'd for PJM job {job}"


def purge(manifest: list[dict], method: str, inside_job: bool, marker: str | None = None) -> str:
    """Purge llio_transfer'd files (only possible inside a PJM job) and drop the marker; return
    what was done."""
    if method != "llio_transfer":
        return "nothing to purge (reference staged by copy)"
    if not inside_job:
        return (
            "not inside a PJM job: nothing to purge here (each per-rule job's LLIO cache ended with the job)"
        )
    llio_transfer([entry["source"] for entry in manifest], purge=True)
    if marker is not None and os.path.exists(marker):
        os.unlink(marker)
    return f"purged {len(manifest)} reference files from the LLIO cache"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Copy the reference to the cache tier (rule stage_reference).")
    commands = parser.add_subparsers(dest="command", required=True)
    setup = commands.add_parser("setup", help="write the manifest and stage on this node")
    setup.add_argument("--cache", required=True, help="cache directory (node-local on a cluster)")
    setup.add_argument("--manifest", required=True)
    setup.add_argument("--method", choices=METHODS, default="copy")
    setup.add_argument("files", nargs="+", help="reference FASTA first, then its index files")
    ensure = commands.add_parser("ensure", help="print the staged FASTA path, staging on this node if needed")
    ensure.add_argument("--cache", required=True)
    ensure.add_argument("--manifest", required=True)
    ensure.add_argument("--method", choices=METHODS, default="copy")
    start_command = commands.add_parser(
        "start", help="inside a PJM job: llio_transfer the reference once for the whole run"
    )
    start_command.add_argument("--manifest", required=True, help="the manifest path (the marker goes beside it)")
    start_command.add_argument("files", nargs="+")
    purge_command = commands.add_parser("purge", help="llio_transfer --purge the reference (inside a PJM job)")
    purge_command.add_argument("--manifest", required=True)
    purge_command.add_argument("--method", choices=METHODS, default="copy")
    args = parser.parse_args(argv)
    marker = transfer_marker(args.manifest)
    if args.command == "start":
        print(f"stage_reference: {start(args.files, marker, current_job())}", file=sys.stderr)
        return 0
    if args.command == "setup":
        manifest = describe(args.files)
        cache_reference(manifest, args.cache, args.method, marker)
        partial = args.manifest + ".partial"
        with open(partial, "w") as handle:
            json.dump(manifest, handle, indent=1)
        os.replace(partial, args.manifest)
        where = "llio_transfer'd" if args.method == "llio_transfer" else f"staged in {args.cache}"
        print(f"stage_reference: {len(manifest)} reference files {where}", file=sys.stderr)
        return 0
    if args.command == "ensure":
        print(staged_fasta(args.manifest, args.cache, args.method))
        return 0
    with open(args.manifest) as handle:
        manifest = json.load(handle)
    print(
        f"stage_reference: {purge(manifest, args.method, inside_job=current_job() is not None, marker=marker)}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
