"""The PJM side of the plugin, without Snakemake: the pjsub command of a job, the job id in
pjsub's answer, pjstat listings parsed by column header, and what a finished job's state and
codes mean. Everything here is a plain function of text, so it is tested on captured outputs."""

import re
import shlex
import time
from dataclasses import dataclass, field

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


def submit_command(jobscript, name, resources, log_dir, pjsub="pjsub"):
    """The pjsub command (a list of words) for one job script. Resources used:
    runtime (minutes -> -L elapse=), nodes (-L node=, default 1), pjm_rscgrp (-L rscgrp=),
    pjm_group (-g, left out when empty), pjm_localtmp / pjm_sharedtmp (--llio
    localtmp-size= / sharedtmp-size=), pjm_extra (more pjsub options, split like a shell).
    The job's output and error go to LOG_DIR/NAME.%j.out and .err (PJM puts the job id for %j)."""
    command = [pjsub, "-X", "-N", name, "-L", f"node={resources.get('nodes') or 1}"]
    if _given(resources.get("runtime")):
        command += ["-L", f"elapse={elapse(resources['runtime'])}"]
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


@dataclass
class End:
    """How a job left pjstat's lists: success, or failed with a kind and a reason."""

    success: bool
    kind: str = ""
    reason: str = ""
    codes: dict = field(default_factory=dict)


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
    """The End of a job listed by neither pjstat nor pjstat -H for `seconds`."""
    return End(False, "missing", f"PJM job {job_id} failed: listed by neither 'pjstat -v' nor 'pjstat -H -v' "
                                 f"for {seconds:.0f}s")


class StatusRounds:
    """The status of every job in flight from at most two pjstat calls per round, whatever their
    number: `pjstat -v` (all current jobs), then, only when some of ours are not in it,
    `pjstat -H -v ID...` for those. A job in neither list is still running until it has been
    missing for `grace_seconds` (real PJM lags between its lists), then it failed.
    `pjstat(args)` runs pjstat and returns its stdout ("" when it failed)."""

    def __init__(self, pjstat, grace_seconds=120, clock=time.monotonic):
        self.pjstat = pjstat
        self.grace_seconds = grace_seconds
        self.clock = clock
        self.missing_since = {}

    def check(self, job_ids):
        """{job id: End, or None while it runs} for job_ids."""
        if not job_ids:
            return {}
        rows = parse_pjstat(self.pjstat(["-v"]))
        left = [job_id for job_id in job_ids if job_id not in rows]
        if left:
            ended = parse_pjstat(self.pjstat(["-H", "-v", *left]))
            rows.update({job_id: ended[job_id] for job_id in left if job_id in ended})
        now = self.clock()
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
        return status
