"""One run per output directory: a lock file in the output directory itself.

Snakemake's own lock lives in its working directory (.snakemake/locks), so two runs started
from different working directories on one output_dir both start, and fail later on each
other's files. The workflow therefore also locks `{output_dir}/.genomon-smk.lock`: the main
Snakemake process of a real run takes it before the first job (onstart) and removes it when
the run ends; a second run is refused with the first one's host and pid. A lock left by a run
that died without its handlers (SIGKILL, a lost node) is cleared by `snakemake --unlock`; on the
host that took it, a lock whose process is gone is stale and the next run takes it over. Such a
run also left Snakemake's own locks in its working directory, which would stop the same command
with a LockException: they are removed too (those that name files in this output directory), so
that the same command resumes.

The lock is made complete under a private name and then hard-linked to its place, which is
atomic and fails if the name exists (on NFS too), so a reader never sees half a lock.
"""

from __future__ import annotations

import datetime
import glob
import json
import os
import re
import socket
from dataclasses import asdict, dataclass
from typing import Callable

LOCK_NAME = ".genomon-smk.lock"


@dataclass(frozen=True)
class Holder:
    """The run that holds (or wants) the lock."""

    host: str
    pid: int
    workdir: str
    started: str

    def same_process(self, other: Holder) -> bool:
        return (self.host, self.pid) == (other.host, other.pid)


def this_process(workdir: str) -> Holder:
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return Holder(socket.gethostname(), os.getpid(), workdir, started)


def lock_text(holder: Holder) -> str:
    return json.dumps(asdict(holder), indent=1) + "\n"


def parse_lock(text: str) -> Holder | None:
    """The holder written in a lock; None when the text is not a lock this module wrote."""
    try:
        fields = json.loads(text)
        return Holder(str(fields["host"]), int(fields["pid"]), str(fields["workdir"]), str(fields["started"]))
    except (ValueError, TypeError, KeyError):
        return None


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (owned by anyone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_stale(holder: Holder, host: str, alive: Callable[[int], bool] = pid_alive) -> bool:
    """A lock is stale when it was taken on this host by a process that is gone. On another host
    its process cannot be seen from here: never stale (the user clears it with --unlock)."""
    return holder.host == host and not alive(holder.pid)


def describe(holder: Holder) -> str:
    return (
        f"host {holder.host}, pid {holder.pid}, started {holder.started}, "
        f"working directory {holder.workdir}"
    )


def refusal(holder: Holder | None, path: str) -> str:
    """Why a run does not start, and how to clear a lock that no run holds any more."""
    who = describe(holder) if holder else "a lock file this version cannot read"
    return (
        f"another genomon-smk run is using this output directory ({who}).\n"
        f"Wait for it to end. If it is not running any more (killed, or its node lost), clear "
        f"its lock with `snakemake --unlock` and the same --configfile, or remove {path}"
    )


def takeover_note(holder: Holder, path: str) -> str:
    return f"genomon-smk: taking over the stale lock {path} of a run that is gone ({describe(holder)})"


def read_holder(path: str) -> tuple[bool, Holder | None]:
    """(whether the lock exists, its holder or None if unreadable)."""
    try:
        with open(path) as lock:
            return True, parse_lock(lock.read())
    except FileNotFoundError:
        return False, None


def _link_new(path: str, me: Holder) -> bool:
    """Create the lock holding `me`, atomically; False if it exists."""
    private = f"{path}.{me.host}.{me.pid}"
    with open(private, "w") as out:
        out.write(lock_text(me))
    try:
        os.link(private, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(private)


def _set_aside(path: str, holder: Holder, me: Holder) -> bool:
    """Move a stale lock out of the way; False if another run replaced it meanwhile (that lock
    is put back)."""
    aside = f"{path}.stale.{me.host}.{me.pid}"
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return True  # another run set it aside first: race it for the new lock
    with open(aside) as moved:
        if parse_lock(moved.read()) == holder:
            os.unlink(aside)
            return True
    try:
        os.link(aside, path)
    except FileExistsError:
        pass
    os.unlink(aside)
    return False


def acquire(path: str, me: Holder, alive: Callable[[int], bool] = pid_alive) -> tuple[bool, str]:
    """Take the lock for `me`: (taken, what to tell the user: a takeover note or the refusal)."""
    if _link_new(path, me):
        return True, ""
    exists, holder = read_holder(path)
    if not exists:  # released between our try and our look
        return (True, "") if _link_new(path, me) else (False, refusal(read_holder(path)[1], path))
    if holder is not None and holder.same_process(me):
        return True, ""
    if holder is not None and is_stale(holder, me.host, alive):
        if _set_aside(path, holder, me) and _link_new(path, me):
            return True, takeover_note(holder, path)
        return False, refusal(read_holder(path)[1], path)
    return False, refusal(holder, path)


def release(path: str, me: Holder) -> bool:
    """Remove the lock if `me` holds it; True if removed."""
    _, holder = read_holder(path)
    if holder is None or not holder.same_process(me):
        return False
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def alive_here(path: str, host: str, alive: Callable[[int], bool] = pid_alive) -> bool:
    """Whether the lock's run is alive on this host."""
    _, holder = read_holder(path)
    return holder is not None and holder.host == host and alive(holder.pid)


def clear(path: str, host: str, alive: Callable[[int], bool] = pid_alive) -> str | None:
    """Remove the lock (snakemake --unlock): what was removed, or None when there was none. A lock
    of a run that is alive on this host is kept (its run would go on beside the next one)."""
    exists, holder = read_holder(path)
    if not exists:
        return None
    if alive_here(path, host, alive):
        return (f"genomon-smk: kept the output directory's lock {path} and Snakemake's: its run is "
                f"still running ({describe(holder)}); stop it first")
    try:
        os.unlink(path)
    except FileNotFoundError:
        return None
    return f"genomon-smk: removed the output directory's lock {path} ({describe(holder) if holder else 'unreadable'})"


def held_note(path: str, host: str, alive: Callable[[int], bool] = pid_alive) -> str | None:
    """For every start (a dry run too): who holds the lock, if anyone."""
    exists, holder = read_holder(path)
    if not exists:
        return None
    if holder is not None and is_stale(holder, host, alive):
        return f"genomon-smk: {path} is a stale lock of a run that is gone ({describe(holder)}): a run takes it over"
    return (
        f"genomon-smk: a run holds this output directory ({describe(holder) if holder else 'unreadable lock'}): "
        f"a real run is refused until it ends (or `snakemake --unlock` clears {path})"
    )


def snakemake_locks(workdir: str, output_dir: str) -> list[str]:
    """Snakemake's lock files in a working directory (.snakemake/locks/N.input.lock and
    N.output.lock) of the runs whose output lock names a file in output_dir."""
    prefix = output_dir.rstrip(os.sep) + os.sep
    found = []
    for output_lock in sorted(glob.glob(os.path.join(workdir, ".snakemake", "locks", "*.output.lock"))):
        number = re.match(r"(\d+)\.output\.lock$", os.path.basename(output_lock))
        if not number:
            continue
        try:
            with open(output_lock) as lines:
                if not any(line.startswith(prefix) for line in lines):
                    continue
        except OSError:
            continue
        input_lock = os.path.join(os.path.dirname(output_lock), f"{number.group(1)}.input.lock")
        found += [output_lock] + ([input_lock] if os.path.exists(input_lock) else [])
    return found


def clear_locks_of_dead_run(path: str, output_dir: str, host: str,
                            alive: Callable[[int], bool] = pid_alive) -> str | None:
    """When the output directory's lock proves that its run is gone (taken on this host by a
    process that is gone), remove that run's Snakemake locks, so that the same command resumes
    instead of failing with a LockException: what was removed, or None. A run on another host
    cannot be proven gone from here: its locks stay (`snakemake --unlock` clears them)."""
    _, holder = read_holder(path)
    if holder is None or not is_stale(holder, host, alive):
        return None
    removed = []
    for lock in snakemake_locks(holder.workdir, output_dir):
        try:
            os.unlink(lock)
            removed.append(lock)
        except FileNotFoundError:
            pass
    if not removed:
        return None
    return (
        f"genomon-smk: the run that held this output directory is gone ({describe(holder)}): "
        f"removed its Snakemake locks ({', '.join(removed)}), so this run resumes it"
    )
