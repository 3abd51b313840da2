"""The PJM side of the plugin, without Snakemake: the pjsub command of a job, the job id in
pjsub's answer, pjstat listings parsed by column header, and what a finished job's state and
codes mean. Everything here is a plain function of text, so it is tested on captured outputs."""

import asyncio
import os
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

# Job states (ST) of `pjstat` (current jobs) and `pjstat -H` (ended jobs), Fugaku user guide.
FINAL_STATES = frozenset({"EXT", "CCL", "ERR", "RJT"})

# PJM CODE (PC) -> (kind, words). The kind is for programs (a retry that grows what was short):
# elapse, memory, disk, node, cancelled, rejected, system; a script's own non-zero exit is "exit".
PJM_CODES = {
    1: ("cancelled", "cancelled by pjdel"),
    2: ("rejected", "rejected at submission"),
    3: ("rejected", "rejected or cancelled by the job manager exit function"),
    4: ("cancelled", "held by pjhold"),
    6: ("cancelled", "cancelled by a step job dependency"),
    7: ("cancelled", "cancelled by a deadline"),
    8: ("rejected", "rejected or cancelled by the job manager exit function"),
    9: ("system", "re-execution not allowed after a job reconstruction"),
    11: ("elapse", "elapse limit exceeded"),
    12: ("memory", "memory limit exceeded"),
    13: ("disk", "disk usage limit exceeded (e.g. LLIO localtmp/sharedtmp size)"),
    16: ("system", "working directory or stdin/stdout/stderr file not accessible"),
    18: ("cancelled", "terminated for another job or a deadline schedule"),
    20: ("node", "node down"),
    21: ("system", "shell execution failure"),
    22: ("node", "ICC (interconnect) error"),
    23: ("memory", "killed by the OOM killer"),
    25: ("node", "HA failure"),
    26: ("system", "prologue/epilogue error"),
    27: ("system", "job manager exit processing error"),
}

# A date as pjstat prints it, in two words ("11/17 09:01:41", a forecast in parentheses,
# optionally with the year): joined into one field before the columns are counted.
_DATE = re.compile(r"(\(?(?:\d{4}/)?\d\d/\d\d) (\d\d:\d\d(?::\d\d)?\)?)")
_SUBMITTED = re.compile(r"[Jj]ob\s+(\d+(?:\[\d*\])?)\s+submitted")
_JOB_ID = re.compile(r"\d+(?:\[\d*\])?(?:\.\d+)?")
_BARE_ID = re.compile(r"\s*(\d+(?:\[\d*\])?)\s*")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.+-]")


def parse_pjstat(text):
    """{job id: {column: value}} of a pjstat listing (any of its forms: with or without -v / -H,
    with the summary block some versions print first). Columns are found by the header line
    (the one starting with JOB_ID), never by position; two-word dates count as one field; a
    value a row lacks is "-", extra words end up in the last column."""
    header = None
    rows = {}
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "JOB_ID":
            header = words
            continue
        if header is None or not _JOB_ID.fullmatch(words[0]):
            continue
        words = _DATE.sub(r"\1_\2", line).split()
        if len(words) > len(header):
            words = words[: len(header) - 1] + [" ".join(words[len(header) - 1:])]
        row = dict(zip(header, words))
        for name in header[len(words):]:
            row[name] = "-"
        rows[row["JOB_ID"]] = row
    return rows


def submitted_job_id(stdout):
    """The job id in pjsub's answer: the "[INFO] PJM 0000 pjsub Job 12 submitted." banner, or the
    bare id of `pjsub -z jid`; None if there is none."""
    for line in stdout.splitlines():
        found = _SUBMITTED.search(line) or _BARE_ID.fullmatch(line)
        if found:
            return found.group(1)
    return None


def elapse(minutes):
    """pjsub's elapse limit (h:mm:ss) of a run time in minutes."""
    seconds = max(1, round(float(minutes) * 60))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def job_name(name):
    """A PJM job name for a Snakemake rule or group: smk-NAME (no blanks or slashes)."""
    return "smk-" + _SAFE_NAME.sub("_", str(name))


def _given(value):
    return value is not None and str(value).strip() not in ("", "None")


def submit_command(jobscript, name, resources, log_dir, pjsub="pjsub", node_mem=False):
    """The pjsub command (a list of words) for one job script. Resources used:
    runtime (minutes -> -L elapse=), nodes (-L node=, default 1), pjm_rscgrp (-L rscgrp=),
    pjm_group (-g, left out when empty), pjm_localtmp / pjm_sharedtmp (--llio
    localtmp-size= / sharedtmp-size=), pjm_extra (more pjsub options, split like a shell), and
    with node_mem (a site where node-mem is a -L resource) mem_mb (-L node-mem=<mem_mb>Mi).
    The job's output and error go to LOG_DIR/NAME.%j.out and .err (PJM puts the job id for %j):
    log_dir is the job's own directory (log_dir_of)."""
    command = [pjsub, "-X", "-N", name, "-L", f"node={resources.get('nodes') or 1}"]
    if _given(resources.get("runtime")):
        command += ["-L", f"elapse={elapse(resources['runtime'])}"]
    if node_mem and _given(resources.get("mem_mb")):
        command += ["-L", f"node-mem={max(1, round(float(resources['mem_mb'])))}Mi"]
    if _given(resources.get("pjm_rscgrp")):
        command += ["-L", f"rscgrp={resources['pjm_rscgrp']}"]
    if _given(resources.get("pjm_group")):
        command += ["-g", str(resources["pjm_group"])]
    llio = [f"{key}-size={resources[f'pjm_{key}']}" for key in ("localtmp", "sharedtmp")
            if _given(resources.get(f"pjm_{key}"))]
    if llio:
        command += ["--llio", ",".join(llio)]
    if _given(resources.get("pjm_extra")):
        command += shlex.split(str(resources["pjm_extra"]))
    command += ["-o", f"{log_dir}/{name}.%j.out", "-e", f"{log_dir}/{name}.%j.err", str(jobscript)]
    return command


def log_files(log_dir, name, job_id):
    """The job's output and error files named by submit_command."""
    return [f"{log_dir}/{name}.{job_id}.out", f"{log_dir}/{name}.{job_id}.err"]


def log_dir_of(logdir, rule):
    """The directory of one rule's (or group's) PJM logs: LOGDIR/RULE, so that no directory of
    the shared file system collects the logs of a whole cohort (FEFS: <= 100,000 files per
    directory; a 1,000-pair cohort runs ~262,000 jobs)."""
    return Path(logdir) / _SAFE_NAME.sub("_", str(rule))


@dataclass
class End:
    """How a job left pjstat's lists: success, or failed with a kind and a reason."""

    success: bool
    kind: str = ""
    reason: str = ""
    codes: dict = field(default_factory=dict)


# What a retry of a failure of each kind asks more of (a resource of the job), on PJM.
GROWS = {"elapse": "runtime", "memory": "mem_mb", "disk": "pjm_localtmp"}
# Said in the failure of a memory kill on a cluster whose node memory is fixed (no node-mem lever):
# genomon-smk's retry policy reads it and does not grow mem_mb (the retry could not get more).
MEMORY_FIXED = "memory cannot grow on this cluster"


def retry_advice(end, node_mem):
    """(resource a retry should grow or None, why a retry cannot help or None) of a failed End.
    A memory kill gets more memory only where the plugin passes it (node_mem: -L node-mem=);
    elsewhere a PJM job owns its node and all of its memory: the same job fails the same way."""
    if end.kind == "memory" and not node_mem:
        return None, (f"{MEMORY_FIXED}: the job already had its whole node's memory (pjsub passes no "
                      "memory; where the site offers -L node-mem=, set --pjm-node-mem), so a retry "
                      "would fail the same way: run fewer jobs per node or give the rule less to hold")
    return GROWS.get(end.kind), None


def failure_message(end, node_mem, logs=()):
    """The job error the executor reports for a failed End: its reason, why a retry cannot help
    (if so: read by genomon-smk's retry policy), and the job's PJM log files (kept)."""
    _, why_not = retry_advice(end, node_mem)
    message = end.reason
    if why_not:
        message += f"; not retried: {why_not}"
    if logs:
        message += f" [PJM logs: {', '.join(logs)}]"
    return message


def _code(value):
    return int(value) if re.fullmatch(r"\d+", value or "") else None


def judge(job_id, row):
    """The End of a row in a final state (FINAL_STATES); None while the job is still current.
    Success is ST EXT with EXIT CODE 0 and PJM CODE 0 (or no PJM CODE column)."""
    st = row.get("ST", "-")
    if st not in FINAL_STATES:
        return None
    codes = {key: row.get(key, "-") for key in ("ST", "EC", "PC", "SN", "REASON")}
    ec, pc = _code(codes["EC"]), _code(codes["PC"])
    if st == "EXT" and ec == 0 and pc in (0, None):
        return End(True, codes=codes)
    if pc:
        kind, why = PJM_CODES.get(pc, ("system", "abnormal end"))
    elif st == "CCL":
        kind, why = "cancelled", "cancelled"
    elif st == "RJT":
        kind, why = "rejected", "rejected"
    elif ec:
        kind, why = "exit", f"job script exit code {ec}"
    else:
        kind, why = "system", f"ended in state {st}"
    details = ", ".join(f"{label} {codes[key]}" for label, key in (
        ("ST", "ST"), ("PJM CODE", "PC"), ("EXIT CODE", "EC"), ("SIGNAL", "SN"), ("REASON", "REASON")))
    return End(False, kind, f"PJM job {job_id} failed: {why} ({details})", codes)


def missing(job_id, seconds):
    """The End of a job listed by neither pjstat nor pjstat -H for `seconds` (the executor
    cancels it with pjdel before reporting it)."""
    return End(False, "missing", f"PJM job {job_id} failed: listed by neither 'pjstat -v' nor 'pjstat -H -v' "
                                 f"for {seconds:.0f}s (cancelled with pjdel in case it still runs)")


def given_up(job_id, seconds, rounds):
    """The End of a job in flight when pjstat has failed for too long (cancelled with pjdel)."""
    return End(False, "status-outage",
               f"PJM job {job_id} given up: pjstat failed for {seconds:.0f}s ({rounds} status rounds in a row); "
               "the job was cancelled with pjdel so that a rerun cannot run it twice")


# --- the compute side's interpreter -----------------------------------------------------------

def normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def site_packages(venv):
    """The site-packages directories of a venv (lib/pythonX.Y and lib64), read as files: the
    compute venv is of another architecture, its interpreter cannot run here."""
    venv = Path(venv)
    return sorted(p for pattern in ("lib/python*/site-packages", "lib64/python*/site-packages")
                  for p in venv.glob(pattern) if p.is_dir())


def metadata_name_version(text):
    """(Name, Version) of a METADATA / PKG-INFO text (the header block before the first blank line)."""
    name = version = None
    for line in text.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        if key == "Name":
            name = value.strip()
        elif key == "Version":
            version = value.strip()
    return name, version


def installed_versions(venv):
    """{normalized distribution name: version} of a venv's installed packages (*.dist-info)."""
    versions = {}
    for directory in site_packages(venv):
        for dist in directory.glob("*.dist-info"):
            try:
                name, version = metadata_name_version((dist / "METADATA").read_text(errors="replace"))
            except OSError:
                continue
            if name and version:
                versions[normalized(name)] = version
    return versions


def version_mismatches(login, compute, names):
    """What differs between the login side's and the compute side's versions of `names` (each a
    {normalized name: version}); names the login side lacks are not checked."""
    problems = []
    for name in names:
        key = normalized(name)
        if key not in login:
            continue
        if key not in compute:
            problems.append(f"{name} {login[key]} is not installed in the compute venv")
        elif compute[key] != login[key]:
            problems.append(f"{name} is {login[key]} here but {compute[key]} in the compute venv")
    return problems


def venv_of(python):
    """The venv an interpreter path belongs to (the directory above its bin/ holding
    pyvenv.cfg), or None (a bare command name, or an interpreter outside any venv)."""
    path = Path(python)
    if not path.is_absolute():
        return None
    venv = path.parent.parent
    return venv if (venv / "pyvenv.cfg").is_file() else None


def job_exec_prefix(workdir, compute_venv=None, precommand=None):
    """The shell commands a job script runs before its Snakemake: cd to the working directory,
    the site's precommand (e.g. `spack load ...`), the compute venv's bin first on PATH (the
    job inherits the login node's PATH through -X: its venv must not be found first)."""
    words = [f"cd {shlex.quote(str(workdir))}"]
    if precommand and precommand.strip():
        words.append(precommand.strip())
    if compute_venv:
        words.append(f'export PATH={shlex.quote(str(Path(compute_venv) / "bin"))}:"$PATH" VIRTUAL_ENV='
                     f'{shlex.quote(str(compute_venv))}')
    return " && ".join(words)


# --- limits and refused submissions -------------------------------------------------------------

_LIMIT = re.compile(r"(?<![\w-])(r[ug]-[a-z-]+)\b\s*[=:]?\s*(\d+|unlimited|-)?", re.IGNORECASE)


def parse_limits(text):
    """{limit name: int or None (unlimited)} of `pjstat --limit`: every `ru-...`/`rg-...` name
    followed (after blanks, '=' or ':') by a number or 'unlimited'. The real layout was not
    available when this was written: names are found anywhere in a line, never by column."""
    limits = {}
    for line in text.splitlines():
        for found in _LIMIT.finditer(line):
            value = found.group(2)
            if value is None:
                continue
            limits[found.group(1).lower()] = int(value) if value.isdigit() else None
    return limits


_REFUSED_FOR_LIMIT = re.compile(r"limit\w*\s+(?:exceed|over)|(?:ru|rg)-accept|USELIMIT|RUNLIMIT|too many jobs",
                                re.IGNORECASE)


def refused_for_limit(text):
    """True when pjsub's answer (stdout+stderr) refuses the job for a per-user or per-group job
    limit ("[ERR.] PJM nnnn pjsub ... limit exceeded ..."): the job is submitted again later."""
    return any(line.startswith("[ERR.]") and _REFUSED_FOR_LIMIT.search(line) for line in text.splitlines())


def accept_budget(limit, others, margin=0):
    """How many jobs of this run may be accepted at once: the accept limit less the user's other
    jobs (and a margin for the user's own pjsub by hand); None = no limit."""
    if limit is None:
        return None
    return max(1, limit - others - margin)


# --- asynchronous commands with a time limit ------------------------------------------------------

async def run_command(args, timeout):
    """(exit code, stdout, stderr) of a command; None if it cannot start or does not end within
    `timeout` seconds (then its process group is killed). Awaited: a hung pjstat never blocks
    the executor's other work."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        await proc.wait()
        return None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


@dataclass
class Round:
    """One status round: {job id: End or None while running}; whether pjstat answered; the
    outage so far (consecutive failed rounds, seconds); give_up when it lasted too long; the
    user's current jobs that are not this run's (None when unknown)."""

    status: dict
    answered: bool = True
    failed_rounds: int = 0
    outage_seconds: float = 0.0
    give_up: bool = False
    others: int = None
    skipped: bool = False


class StatusRounds:
    """The status of every job in flight from at most two pjstat calls per round, whatever their
    number: `pjstat -v` (all current jobs), then, only when some of ours are not in it,
    `pjstat -H -v ID...` for those. A job in neither of two answered listings is still running
    until it has been missing for `grace_seconds` (real PJM lags between its lists), then it
    failed. A pjstat that fails or hangs is no verdict: every job stays running, the next calls
    back off (2, 4, 8 ... up to `max_backoff` seconds), and only an outage of at least
    `outage_rounds` failed rounds in a row AND `outage_seconds` gives up (give_up: the executor
    cancels the jobs with pjdel and ends the run).
    `pjstat(args)` is awaited and returns pjstat's stdout, or None when it failed."""

    def __init__(self, pjstat, grace_seconds=120, outage_seconds=1800, outage_rounds=5, max_backoff=60,
                 clock=time.monotonic):
        self.pjstat = pjstat
        self.grace_seconds = grace_seconds
        self.outage_seconds = outage_seconds
        self.outage_rounds = outage_rounds
        self.max_backoff = max_backoff
        self.clock = clock
        self.missing_since = {}
        self.failing_since = None
        self.failed_rounds = 0
        self.next_try = 0.0

    def _running(self, job_ids, **fields):
        return Round({job_id: None for job_id in job_ids}, **fields)

    def _failed(self, job_ids, now):
        self.missing_since.clear()  # the grace of a missing job starts anew after the outage
        if self.failing_since is None:
            self.failing_since = now
        self.failed_rounds += 1
        self.next_try = now + min(self.max_backoff, 2 ** self.failed_rounds)
        lasted = now - self.failing_since
        give_up = self.failed_rounds >= self.outage_rounds and lasted >= self.outage_seconds
        return self._running(job_ids, answered=False, failed_rounds=self.failed_rounds,
                             outage_seconds=lasted, give_up=give_up)

    async def check(self, job_ids):
        """The Round of job_ids."""
        job_ids = list(job_ids)
        if not job_ids:
            return Round({})
        now = self.clock()
        if self.failed_rounds and now < self.next_try:  # backing off: no call this round
            return self._running(job_ids, answered=False, failed_rounds=self.failed_rounds,
                                 outage_seconds=now - self.failing_since, skipped=True)
        current = await self.pjstat(["-v"])
        if current is None:
            return self._failed(job_ids, now)
        rows = parse_pjstat(current)
        others = sum(1 for job_id in rows if job_id not in set(job_ids))
        left = [job_id for job_id in job_ids if job_id not in rows]
        if left:
            ended = await self.pjstat(["-H", "-v", *left])
            if ended is None:
                # Judge what the current list shows; the others stay running this round.
                round_ = self._failed(job_ids, now)
                round_.status.update({job_id: judge(job_id, rows[job_id]) for job_id in job_ids if job_id in rows})
                round_.others = others
                return round_
            ended = parse_pjstat(ended)
            rows.update({job_id: ended[job_id] for job_id in left if job_id in ended})
        self.failing_since, self.failed_rounds, self.next_try = None, 0, 0.0
        status = {}
        for job_id in job_ids:
            if job_id in rows:
                self.missing_since.pop(job_id, None)
                status[job_id] = judge(job_id, rows[job_id])
                continue
            first = self.missing_since.setdefault(job_id, now)
            if now - first >= self.grace_seconds:
                del self.missing_since[job_id]
                status[job_id] = missing(job_id, now - first)
            else:
                status[job_id] = None
        return Round(status, others=others)
