"""Core of the fake Fujitsu PJM (Fugaku job manager) used by the tests.

Stdlib only, run by /usr/bin/python3: jobs start with a minimal environment, so nothing here may
depend on the project venv. State lives in ``$FAKEPJM_HOME`` (default ``~/.fakepjm``)::

    lock                 flock(2) taken for every read-modify-write of a job record
    next_id              next job id
    jobs/<id>/job.json   the job record (written atomically: tmp file + rename)
    jobs/<id>/script     copy of the job script taken at submit time (PJM copies it too)
    jobs/<id>/env.json   environment captured at submit time (used with -X / -x VAR)
    jobs/<id>/cancel     flag file written by pjdel
    jobs/<id>/supervisor.log  diagnostics of the per-job supervisor process
    localtmp/<id> sharedtmp/<id> llio_cache/<id>   per-job LLIO stand-ins
    llio.log             one line per llio_transfer call

Each submitted job gets one detached supervisor process (its own session) that queues the job,
starts the script in a new session (so its process group can be killed as a whole), enforces the
elapse limit and the declared LLIO sizes, and records EC/PC/SN. See ../README.md.
"""

import fcntl
import grp
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

LIB_DIR = os.path.dirname(os.path.abspath(__file__))
BIN_DIR = os.path.join(os.path.dirname(LIB_DIR), "bin")

# PJM states: current ones are listed by plain pjstat, final ones only by pjstat -H.
CURRENT_STATES = ("ACC", "QUE", "RNA", "RUN", "RNO", "HLD")
FINAL_STATES = ("EXT", "CCL", "ERR", "RJT")
SLOT_STATES = ("RNA", "RUN", "RNO")

# PJM CODE values used by the emulator (meanings as in the Fugaku user guide, "job manager exit code").
PJM_CODE_OK = 0
PJM_CODE_CANCELED = 1
PJM_CODE_ELAPSE = 11
PJM_CODE_DISK = 13
PJM_CODE_NO_FILE = 16
PJM_CODE_SHELL = 21
PJM_CODE_MANAGER = 27

MINIMAL_PATH = "/usr/local/bin:/usr/bin:/bin"
CORES_PER_NODE = 48  # A64FX: 48 compute cores per node
SIZE_UNITS = {"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}


class PjmError(Exception):
    """A user-facing PJM error: printed as ``[ERR.] PJM <code> <cmd> <text>``."""

    def __init__(self, code, text):
        super().__init__(text)
        self.code = code
        self.text = text


def fail(cmd, err, status=1):
    """Print a PJM-style error message to stderr and exit."""
    sys.stderr.write("[ERR.] PJM %04d %s %s\n" % (err.code, cmd, err.text))
    sys.exit(status)


# ----------------------------------------------------------------------------- state directory

def pjm_home():
    """Return the state directory, creating its skeleton on first use."""
    home = os.environ.get("FAKEPJM_HOME") or os.path.join(os.path.expanduser("~"), ".fakepjm")
    home = os.path.abspath(home)
    for sub in ("jobs", "active", "localtmp", "sharedtmp", "llio_cache"):
        os.makedirs(os.path.join(home, sub), exist_ok=True)
    return home


class Lock:
    """Exclusive flock on ``$FAKEPJM_HOME/lock`` (a context manager)."""

    def __init__(self, home):
        self.path = os.path.join(home, "lock")

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def job_dir(home, jid):
    return os.path.join(home, "jobs", str(jid))


def write_json_atomic(path, data):
    """Write JSON through a temporary file and rename, so readers never see half a file."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
    os.replace(tmp, path)


def load_job(home, jid):
    """Return the job record or None when the id is unknown."""
    try:
        with open(os.path.join(job_dir(home, jid), "job.json")) as handle:
            return json.load(handle)
    except (FileNotFoundError, json.JSONDecodeError, NotADirectoryError):
        return None


def save_job(home, rec):
    write_json_atomic(os.path.join(job_dir(home, rec["id"]), "job.json"), rec)


def all_job_ids(home, subdir="jobs"):
    """Sorted ids of all jobs ever submitted (``subdir="active"``: only the unfinished ones)."""
    ids = []
    for name in os.listdir(os.path.join(home, subdir)):
        if name.isdigit():
            ids.append(int(name))
    return sorted(ids)


def active_job_ids(home):
    """Ids of unfinished jobs: ``active/<id>`` marker files keep scans cheap when history grows."""
    return all_job_ids(home, "active")


def mark_active(home, jid, active):
    path = os.path.join(home, "active", str(jid))
    if active:
        open(path, "w").close()
    else:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def update_job(home, jid, **changes):
    """Apply ``changes`` to a job record under the lock; keeps LST (last state) in step with ST."""
    with Lock(home):
        rec = load_job(home, jid)
        if "st" in changes and changes["st"] != rec["st"]:
            rec["lst"] = rec["st"]
        rec.update(changes)
        save_job(home, rec)
        if rec["st"] in FINAL_STATES:
            mark_active(home, jid, False)
        return rec


def allocate_job_id(home):
    """Return the next job id (the counter file is updated under the lock)."""
    path = os.path.join(home, "next_id")
    with Lock(home):
        try:
            with open(path) as handle:
                jid = int(handle.read().strip() or "1")
        except FileNotFoundError:
            jid = int(os.environ.get("FAKEPJM_FIRST_ID", "1"))
        with open(path, "w") as handle:
            handle.write("%d\n" % (jid + 1))
        os.makedirs(job_dir(home, jid))
    return jid


# ----------------------------------------------------------------------------- process liveness

def process_start_ticks(pid):
    """Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), or None."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            stat = handle.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] == "Z":  # a zombie is dead for our purposes
        return None
    return int(fields[19])


def supervisor_alive(rec):
    """True while the job's supervisor process still exists (pid and start time both match)."""
    pid = rec.get("supervisor_pid")
    if not pid:
        # Not started yet: give pjsub's child a moment before calling it lost.
        return time.time() - rec["accept_time"] < 30
    return process_start_ticks(pid) == rec.get("supervisor_ticks")


# ----------------------------------------------------------------------------- option parsing

def parse_elapse(text):
    """Seconds from an elapse limit ``h:mm:ss``, ``mm:ss`` or ``s``; raise PjmError otherwise."""
    if not re.fullmatch(r"\d+(:\d{1,2}){0,2}", text or ""):
        raise PjmError(59, "Invalid elapse value: elapse=%s" % text)
    parts = [int(p) for p in text.split(":")]
    if len(parts) > 1 and any(p >= 60 for p in parts[1:]):
        raise PjmError(59, "Invalid elapse value: elapse=%s" % text)
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + part
    if seconds <= 0:
        raise PjmError(59, "Invalid elapse value: elapse=%s" % text)
    return seconds


def parse_size(key, text):
    """Bytes from an LLIO size such as ``10Gi``, ``512Mi`` (binary units; a bare number = bytes)."""
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti)?", text or "")
    if not match:
        raise PjmError(59, "Invalid value for --llio %s: %s (expected an integer with unit Ki, Mi, Gi or Ti)"
                       % (key, text))
    return int(match.group(1)) * SIZE_UNITS[match.group(2) or ""]


def parse_node_count(text):
    """Node count of a ``node=`` request such as ``4``, ``2x3``, ``2x3x2:torus`` or ``12:2x3x2``."""
    shape = text.split(":")
    dims = shape[-1] if len(shape) > 1 and re.fullmatch(r"\d+(x\d+)*", shape[-1]) else shape[0]
    if not re.fullmatch(r"\d+(x\d+){0,2}", dims):
        raise PjmError(59, "Invalid node value: node=%s" % text)
    count = 1
    for dim in dims.split("x"):
        count *= int(dim)
    if count <= 0:
        raise PjmError(59, "Invalid node value: node=%s" % text)
    return count


def split_kv_list(text):
    """``a=1,b=2,c`` -> [('a', '1'), ('b', '2'), ('c', None)]."""
    pairs = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        pairs.append((key.strip(), value if sep else None))
    return pairs


def new_options():
    """Empty option set; scalars are None when not given so that merging can tell 'unset'."""
    return {"L": {}, "x": [], "X": False, "j": False, "stats": None, "N": None, "g": None,
            "o": None, "e": None, "z": None, "mpi": {}, "llio": {}, "sparam": [], "spath": None,
            "p": None}


ARG_OPTIONS = {"-L": "L", "--rsc-list": "L", "-g": "g", "-N": "N", "--name": "N", "-o": "o", "-e": "e",
               "-x": "x", "-z": "z", "--mpi": "mpi", "--llio": "llio", "--sparam": "sparam",
               "--spath": "spath", "-p": "p", "-m": "ignore", "--mail-list": "ignore", "-M": "ignore",
               "-W": "ignore", "--appname": "ignore", "--exclusive-use": "ignore"}
FLAG_OPTIONS = {"-j": "j", "-X": "X", "-S": "S", "-s": "s", "--no-check-directory": "ignore",
                "--restart": "ignore", "--norestart": "ignore", "-U": "ignore"}
UNSUPPORTED = ("--interact", "--step", "--bulk", "--sparam-bulk")


def apply_option(opts, key, value):
    """Store one parsed option value (validating what the real pjsub validates at submit)."""
    if key == "L":
        for name, val in split_kv_list(value):
            if val is None:
                raise PjmError(4, "Invalid resource option: -L %s" % value)
            if name == "elapse":
                parse_elapse(val)
            elif name == "node":
                parse_node_count(val)
            opts["L"][name] = val
    elif key == "x":
        for name, val in split_kv_list(value):
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise PjmError(4, "Invalid environment variable name: -x %s" % value)
            opts["x"].append((name, val))
    elif key == "mpi":
        for name, val in split_kv_list(value):
            opts["mpi"][name] = True if val is None else val
    elif key == "llio":
        for name, val in split_kv_list(value):
            if name.endswith("-size"):
                parse_size(name, val)
            opts["llio"][name] = True if val is None else val
    elif key == "sparam":
        opts["sparam"].append(value)
    elif key == "N":
        if not re.fullmatch(r"[^\s/]{1,63}", value):
            raise PjmError(4, "Invalid job name: %s" % value)
        opts["N"] = value
    elif key == "z":
        if value != "jid":
            raise PjmError(4, "Invalid value for -z: %s (only 'jid' is supported)" % value)
        opts["z"] = value
    elif key == "S":
        opts["stats"] = "S"
    elif key == "s":
        opts["stats"] = opts["stats"] or "s"
    elif key in ("j", "X"):
        opts[key] = True
    elif key != "ignore":
        opts[key] = value


def parse_options(argv, stop_at_operand):
    """Parse pjsub options; return (options, remaining operands).

    With ``stop_at_operand`` (the command line) parsing stops at the script name; in #PJM lines
    every word must be an option.
    """
    opts = new_options()
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return opts, argv[i + 1:]
        if not word.startswith("-") or word == "-":
            if stop_at_operand:
                return opts, argv[i:]
            raise PjmError(4, "Invalid directive argument: %s" % word)
        if word in UNSUPPORTED or word.split("=", 1)[0] in UNSUPPORTED:
            raise PjmError(4, "Option %s is not supported by the emulator" % word)
        name, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if not eq and not word.startswith("--") and len(word) > 2 and word[:2] in ARG_OPTIONS:
            name, inline, eq = word[:2], word[2:], "="  # -Lnode=1 style
        if name in ARG_OPTIONS:
            if eq:
                value = inline
            else:
                i += 1
                if i >= len(argv):
                    raise PjmError(4, "Option %s needs an argument" % name)
                value = argv[i]
            apply_option(opts, ARG_OPTIONS[name], value)
        elif name in FLAG_OPTIONS and not eq:
            apply_option(opts, FLAG_OPTIONS[name], None)
        else:
            raise PjmError(4, "Unknown option: %s" % word)
        i += 1
    return opts, []


def directive_words(script_text):
    """Words of the ``#PJM`` lines at the head of a script (scanning stops at the first command)."""
    words = []
    for line in script_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#PJM"):
            words.extend(shlex.split(stripped[4:], comments=True))
        elif stripped and not stripped.startswith("#"):
            break
    return words


def merge_options(directives, cli):
    """Combine #PJM directives with the command line; the command line wins key by key."""
    merged = new_options()
    for key in ("L", "mpi", "llio"):
        merged[key] = dict(directives[key])
        merged[key].update(cli[key])
    merged["x"] = directives["x"] + cli["x"]
    merged["sparam"] = directives["sparam"] + cli["sparam"]
    for key in ("X", "j"):
        merged[key] = directives[key] or cli[key]
    for key in ("N", "g", "o", "e", "z", "spath", "p", "stats"):
        merged[key] = cli[key] if cli[key] is not None else directives[key]
    return merged


# ----------------------------------------------------------------------------- formatting helpers

def fmt_hms(seconds, width=4):
    """``hhhh:mm:ss`` as pjstat prints ELAPSE_LIM / ELAPSE_TIM."""
    seconds = int(seconds)
    return "%0*d:%02d:%02d" % (width, seconds // 3600, seconds % 3600 // 60, seconds % 60)


def fmt_date(stamp):
    """``MM/DD hh:mm:ss`` (pjstat START_DATE) or ``-``."""
    return time.strftime("%m/%d %H:%M:%S", time.localtime(stamp)) if stamp else "-"


def fmt_full_date(stamp):
    return time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(stamp)) if stamp else "-"


def dash(value):
    return "-" if value is None or value == "" else str(value)


def expand_path_template(template, jid, workdir):
    """``%j`` -> job id; relative paths are taken from the submit directory."""
    path = template.replace("%j", str(jid))
    return path if os.path.isabs(path) else os.path.join(workdir, path)


# ----------------------------------------------------------------------------- pjsub

def current_user_and_group():
    user = pwd.getpwuid(os.getuid()).pw_name
    try:
        group = grp.getgrgid(os.getgid()).gr_name
    except KeyError:
        group = str(os.getgid())
    return user, group


def read_script(operands):
    """(display name, script text, args) from the operands; no script operand = read stdin."""
    if not operands:
        return "STDIN", sys.stdin.read(), []
    path = operands[0]
    try:
        with open(path, "r", errors="surrogateescape") as handle:
            return os.path.basename(path), handle.read(), operands[1:]
    except OSError as exc:
        raise PjmError(5, "Job script %s cannot be read: %s" % (path, exc.strerror))


def build_job_record(jid, opts, script_name, args, home):
    """The job record of a freshly accepted job (all values already validated)."""
    user, group = current_user_and_group()
    workdir = os.getcwd()
    name = opts["N"] or script_name
    elapse_text = opts["L"].get("elapse") or os.environ.get("FAKEPJM_DEFAULT_ELAPSE", "1:00:00")
    node_require = opts["L"].get("node", "1")
    llio_bytes = {key: parse_size(key, val) for key, val in opts["llio"].items() if key.endswith("-size")}
    mpi_proc = opts["mpi"].get("proc")
    if mpi_proc is not None and not re.fullmatch(r"[1-9]\d*", str(mpi_proc)):
        raise PjmError(59, "Invalid value for --mpi proc: %s" % mpi_proc)
    out = expand_path_template(opts["o"] or "%s.%d.out" % (name, jid), jid, workdir)
    err = expand_path_template(opts["e"] or "%s.%d.err" % (name, jid), jid, workdir)
    stats = None
    if opts["stats"]:
        stats = expand_path_template(opts["spath"] or "%s.%d.stats" % (name, jid), jid, workdir)
    return {
        "id": jid, "name": name, "user": user, "group": opts["g"] or group, "args": args,
        "workdir": workdir, "out": out, "err": None if opts["j"] else err, "join": opts["j"],
        "env_all": opts["X"], "node_require": node_require, "nodes": parse_node_count(node_require),
        "elapse_s": parse_elapse(elapse_text),
        "rscgrp": opts["L"].get("rscgrp") or os.environ.get("FAKEPJM_DEFAULT_RSCGRP", "small"),
        "resources": opts["L"], "llio": opts["llio"], "llio_bytes": llio_bytes, "mpi": opts["mpi"],
        "mpi_proc": int(mpi_proc) if mpi_proc is not None else None, "sparam": opts["sparam"],
        "stats_mode": opts["stats"], "stats_path": stats, "priority": opts["p"] or "127",
        "o_path": os.environ.get("PATH", ""), "o_home": os.path.expanduser("~"), "o_logname": user,
        "o_host": socket.gethostname(),
        "st": "ACC", "lst": "-", "ec": None, "pc": None, "sn": None, "reason": None,
        "accept_time": time.time(), "start_time": None, "end_time": None,
        "supervisor_pid": None, "supervisor_ticks": None, "job_pid": None,
        "localtmp_max_bytes": 0, "sharedtmp_max_bytes": 0,
        "foreign_arch": [os.path.abspath(path) for path in
                         os.environ.get("FAKEPJM_FOREIGN_ARCH", "").split(":") if path],
    }


def job_environment_snapshot(opts):
    """Variables captured at submit: everything with -X, otherwise only what -x asks for."""
    env = dict(os.environ) if opts["X"] else {}
    for name, value in opts["x"]:
        if value is None:
            if name in os.environ:
                env[name] = os.environ[name]
        else:
            env[name] = value
    return env


def accept_limit():
    """The per-user limit of accepted (unfinished) jobs, ``ru-accept`` (``FAKEPJM_ACCEPT_LIMIT``;
    unset or 0: none)."""
    value = os.environ.get("FAKEPJM_ACCEPT_LIMIT", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def check_accept_limit(home):
    """Refuse a submission beyond the accept limit, as pjsub does (no job is created)."""
    limit = accept_limit()
    if limit is None:
        return
    with Lock(home):
        _reap_locked(home)
        accepted = sum(1 for jid in active_job_ids(home)
                       if (load_job(home, jid) or {}).get("st") in CURRENT_STATES)
    if accepted >= limit:
        raise PjmError(32, "Job limit exceeded: the number of accepted jobs (%d) would exceed the "
                           "limit (ru-accept=%d)." % (accepted + 1, limit))


def main_pjsub(argv):
    """pjsub [options] [script [args...]]"""
    try:
        cli, operands = parse_options(argv, stop_at_operand=True)
        script_name, text, args = read_script(operands)
        directives, _ = parse_options(directive_words(text), stop_at_operand=False)
        opts = merge_options(directives, cli)
        home = pjm_home()
        check_accept_limit(home)
        jid = allocate_job_id(home)
        try:
            rec = build_job_record(jid, opts, script_name, args, home)
        except PjmError:
            os.rmdir(job_dir(home, jid))
            raise
    except PjmError as err:
        fail("pjsub", err)
    jdir = job_dir(home, jid)
    with open(os.path.join(jdir, "script"), "w", errors="surrogateescape") as handle:
        handle.write(text)
    os.chmod(os.path.join(jdir, "script"), 0o700)
    fd = os.open(os.path.join(jdir, "env.json"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(job_environment_snapshot(opts), handle)
    mark_active(home, jid, True)  # before the record: scanners skip ids without a record
    save_job(home, rec)
    supervisor_env = dict(os.environ, FAKEPJM_HOME=home)
    with open(os.path.join(jdir, "supervisor.log"), "ab") as log:
        # Own session and no inherited pipes: pjsub returns at once, callers reading its stdout do not hang.
        subprocess.Popen([sys.executable, "-I", os.path.abspath(__file__), "supervise", str(jid)],
                         cwd=jdir, env=supervisor_env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True, close_fds=True)
    if opts["z"] == "jid":
        print(jid)
    else:
        print("[INFO] PJM 0000 pjsub Job %d submitted." % jid)
    return 0


# ----------------------------------------------------------------------------- supervisor (one per job)

def _reap_locked(home):
    for jid in active_job_ids(home):
        rec = load_job(home, jid)
        if rec and rec["st"] in CURRENT_STATES and not supervisor_alive(rec):
            rec["lst"], rec["st"] = rec["st"], "ERR"
            rec.update(pc=PJM_CODE_MANAGER, reason="SUPERVISOR_LOST", end_time=time.time())
            save_job(home, rec)
            mark_active(home, jid, False)
            if rec.get("job_pid"):  # nobody watches the job any more: end it like PJM would
                kill_group(rec["job_pid"])
            cleanup_job_dirs(home, jid)


def reap_lost_jobs(home):
    """Mark current jobs whose supervisor died (killed by hand, machine reboot) as ERR."""
    with Lock(home):
        _reap_locked(home)


def max_running():
    value = os.environ.get("FAKEPJM_MAX_RUNNING", "")
    return int(value) if value.isdigit() and int(value) > 0 else (os.cpu_count() or 1)


def wait_for_slot(home, jid):
    """Block in QUE until fewer than FAKEPJM_MAX_RUNNING jobs run and no older job waits (FIFO).

    Returns False when the job was cancelled while queued.
    """
    limit = max_running()
    while True:
        with Lock(home):
            _reap_locked(home)
            rec = load_job(home, jid)
            if rec["st"] != "QUE":
                return False
            running = 0
            older_waiting = False
            for other in active_job_ids(home):
                orec = load_job(home, other)
                if not orec:
                    continue
                running += orec["st"] in SLOT_STATES
                older_waiting |= other < jid and orec["st"] in ("ACC", "QUE")
            if running < limit and not older_waiting:
                rec["lst"], rec["st"] = rec["st"], "RNA"
                rec["start_time"] = time.time()
                save_job(home, rec)
                return True
        time.sleep(0.2)


def tree_bytes(path):
    """Apparent size of all regular files below ``path`` (what counts against an LLIO area)."""
    total = 0
    stack = [path]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                pass
    return total


def llio_dirs(home, jid):
    return {"localtmp": os.path.join(home, "localtmp", str(jid)),
            "sharedtmp": os.path.join(home, "sharedtmp", str(jid)),
            "llio_cache": os.path.join(home, "llio_cache", str(jid))}


def build_job_env(home, rec):
    """Environment of the job process: minimal (as on PJM) unless -X, plus -x and the PJM_* variables."""
    with open(os.path.join(job_dir(home, rec["id"]), "env.json")) as handle:
        captured = json.load(handle)
    if rec["env_all"]:
        env = captured
    else:
        user = rec["user"]
        try:
            entry = pwd.getpwnam(user)
            home_dir, shell = entry.pw_dir, entry.pw_shell or "/bin/bash"
        except KeyError:
            home_dir, shell = rec["o_home"], "/bin/bash"
        # The emulator's bin dir stands for the system directories where Fugaku keeps
        # llio_transfer and mpiexec; nothing else of the caller's PATH is passed.
        env = {"PATH": MINIMAL_PATH + ":" + BIN_DIR, "HOME": home_dir, "USER": user, "LOGNAME": user,
               "SHELL": shell}
        env.update(captured)  # only -x variables are captured without -X
    dirs = llio_dirs(home, rec["id"])
    env.update({
        "PJM_JOBID": str(rec["id"]), "PJM_SUBJOBID": str(rec["id"]), "PJM_JOBNAME": rec["name"],
        "PJM_O_WORKDIR": rec["workdir"], "PJM_O_HOME": rec["o_home"], "PJM_O_LOGNAME": rec["o_logname"],
        "PJM_O_PATH": rec["o_path"], "PJM_O_HOST": rec["o_host"],
        "PJM_LOCALTMP": dirs["localtmp"], "PJM_SHAREDTMP": dirs["sharedtmp"],
        "PJM_LLIO_CACHE": dirs["llio_cache"], "PJM_NODE": str(rec["nodes"]),
        "PJM_NODE_REQUIRE": rec["node_require"], "PJM_RSCGRP": rec["rscgrp"],
        "PJM_ELAPSE_LIM": str(rec["elapse_s"]),
        "PJM_MPI_PROC": str(rec["mpi_proc"] or rec["nodes"]),
        "FAKEPJM_HOME": home,
    })
    if "max-proc-per-node" in rec["mpi"]:
        env["PJM_PROC_BY_NODE"] = str(rec["mpi"]["max-proc-per-node"])
    return env


def kill_group(pid, sig=signal.SIGKILL):
    """Signal the whole process group of the job (the job script is its group leader)."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def finish_job(home, jid, **final):
    """Store the final state; LST becomes the state the job was in before."""
    final.setdefault("end_time", time.time())
    return update_job(home, jid, **final)


def run_job(home, rec):
    """Start the job script and watch it; return the final record fields."""
    jid = rec["id"]
    jdir = job_dir(home, jid)
    dirs = llio_dirs(home, jid)
    for path in dirs.values():
        os.makedirs(path, exist_ok=True)
    if not os.path.isdir(rec["workdir"]):
        return {"st": "ERR", "pc": PJM_CODE_NO_FILE, "reason": "NO_WORKDIR"}
    try:
        out = open(rec["out"], "wb")
        err = out if rec["join"] else open(rec["err"], "wb")
    except OSError:
        return {"st": "ERR", "pc": PJM_CODE_NO_FILE, "reason": "NO_OUTPUT_FILE"}
    script = os.path.join(jdir, "script")
    with open(script, "rb") as handle:
        has_shebang = handle.read(2) == b"#!"
    cmd = ([script] if has_shebang else ["/bin/bash", script]) + rec["args"]
    foreign = [path for path in rec.get("foreign_arch", []) if os.path.isdir(path)]
    if foreign:
        cmd = foreign_arch_command(foreign) + cmd
    try:
        proc = subprocess.Popen(cmd, cwd=rec["workdir"], env=build_job_env(home, rec),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
    except OSError as exc:
        err.write(("fakepjm: cannot execute the job script: %s\n" % exc).encode())
        return {"st": "ERR", "pc": PJM_CODE_SHELL, "reason": "SHELL_ERROR"}
    finally:
        out.close()
        if err is not out:
            err.close()
    update_job(home, jid, st="RUN", job_pid=proc.pid)
    return watch_job(home, rec, proc, dirs)


# ELF e_machine of "the other architecture": aarch64 (A64FX) binaries on an x86-64 host and
# x86-64 ones elsewhere, so that executing them fails as an x86 binary fails on a compute node.
EM_X86_64, EM_AARCH64 = 62, 183


def foreign_elf_header():
    """A 64-byte ELF header of an executable for the other architecture (the kernel refuses it
    with ENOEXEC; bash says 'cannot execute binary file: Exec format error')."""
    import platform
    import struct
    machine = EM_X86_64 if platform.machine() in ("aarch64", "arm64") else EM_AARCH64
    return (b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
            + struct.pack("<HHIQQQIHHHHHH", 2, machine, 1, 0x400000, 64, 0, 0, 64, 56, 0, 64, 0, 0))


def foreign_arch_command(dirs):
    """The prefix that runs a job with DIRS holding binaries of the other architecture: the job
    gets its own mount namespace (unshare; as a non-root user with a user namespace too) in
    which every entry of each dir is replaced by a foreign executable of the same name."""
    prefix = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        prefix[1:1] = ["--user", "--map-root-user"]
    return prefix + [sys.executable, "-I", os.path.abspath(__file__), "foreign-exec", *dirs, "--"]


def foreign_exec(argv):
    """Inside the job's mount namespace: bind a directory of foreign executables over each dir,
    then exec the job script (same process: the supervisor's pid and process group stay)."""
    split = argv.index("--")
    dirs, command = argv[:split], argv[split + 1:]
    header = foreign_elf_header()
    for number, path in enumerate(dirs):
        shadow = os.path.join(os.environ["FAKEPJM_HOME"], "jobs", os.environ["PJM_JOBID"], "foreign-arch",
                              str(number))
        os.makedirs(shadow, exist_ok=True)
        for name in os.listdir(path):
            target = os.path.join(shadow, name)
            with open(target, "wb") as handle:
                handle.write(header)
            os.chmod(target, 0o755)
        subprocess.run(["mount", "--bind", shadow, path], check=True)
    os.execv(command[0], command)


def watch_job(home, rec, proc, dirs):
    """Poll the running job: cancel flag, elapse limit, declared LLIO sizes."""
    cancel_flag = os.path.join(job_dir(home, rec["id"]), "cancel")
    deadline = rec["start_time"] + rec["elapse_s"]
    limits = {area: rec["llio_bytes"].get(area + "-size") for area in ("localtmp", "sharedtmp")}
    enforce_llio = os.environ.get("FAKEPJM_ENFORCE_LLIO", "1") != "0"
    usage_max = {"localtmp": 0, "sharedtmp": 0}
    pc, reason, killed = PJM_CODE_OK, None, False
    next_llio_check = 0.0
    while proc.poll() is None:
        now = time.time()
        if not killed and os.path.exists(cancel_flag):
            kill_group(proc.pid)
            killed = True
        elif not killed and now >= deadline:
            kill_group(proc.pid)
            pc, reason, killed = PJM_CODE_ELAPSE, "ELAPSE_LIMIT", True
        elif not killed and now >= next_llio_check:
            next_llio_check = now + 0.5
            for area in ("localtmp", "sharedtmp"):
                used = tree_bytes(dirs[area])
                usage_max[area] = max(usage_max[area], used)
                if enforce_llio and limits[area] is not None and used > limits[area] and not killed:
                    kill_group(proc.pid)
                    pc, reason, killed = PJM_CODE_DISK, area.upper() + "_SIZE_EXCEEDED", True
        time.sleep(0.05)
    # The job ends when its script ends: PJM kills whatever the script left behind.
    kill_group(proc.pid)
    code = proc.returncode
    ec, sn = (128 - code, -code) if code < 0 else (code, None)
    final = {"st": "EXT", "ec": ec, "pc": pc, "sn": sn, "reason": reason,
             "localtmp_max_bytes": usage_max["localtmp"], "sharedtmp_max_bytes": usage_max["sharedtmp"]}
    if os.path.exists(cancel_flag):
        final.update(st="CCL", ec=None, pc=PJM_CODE_CANCELED, reason="PJDEL")
    return final


def cleanup_job_dirs(home, jid):
    """LLIO temporary areas and the cache vanish at job end (unless FAKEPJM_KEEP_TMP=1)."""
    if os.environ.get("FAKEPJM_KEEP_TMP") == "1":
        return
    for path in llio_dirs(home, jid).values():
        shutil.rmtree(path, ignore_errors=True)


def write_stats(rec):
    """NAME.ID.stats in the spirit of pjsub -s/-S (the fields the adapters and people read)."""
    start, end = rec["start_time"], rec["end_time"]
    used = int(end - start) if start and end else 0
    lines = [
        ("JOB ID", rec["id"]), ("JOB NAME", rec["name"]), ("JOB TYPE", "BATCH"), ("JOB MODEL", "NM"),
        ("RETRY NUM", 0), ("SUB JOB NUM", "-"), ("USER", rec["user"]), ("GROUP", rec["group"]),
        ("RESOURCE UNIT", "fakepjm"), ("RESOURCE GROUP", rec["rscgrp"]),
        ("ACCEPT DATE", fmt_full_date(rec["accept_time"])), ("JOB START DATE", fmt_full_date(start)),
        ("JOB END DATE", fmt_full_date(end)), ("LAST STATE", rec["lst"]), ("STATE", rec["st"]),
        ("REASON", dash(rec["reason"])), ("PJM CODE", dash(rec["pc"])), ("EXIT CODE", dash(rec["ec"])),
        ("SIGNAL NO", dash(rec["sn"])),
        ("ELAPSE TIME LIMIT", "%s (%d)" % (fmt_hms(rec["elapse_s"], 2), rec["elapse_s"])),
        ("ELAPSE TIME (USE)", "%s (%d)" % (fmt_hms(used, 2), used)),
        ("NODE NUM (REQUIRE)", rec["node_require"]), ("NODE NUM (USE)", rec["nodes"]),
    ]
    if rec["stats_mode"] == "S":
        lines += [("LLIO " + key.upper(), val) for key, val in sorted(rec["llio"].items())]
        lines += [("LLIO LOCALTMP MAX USE (BYTE)", rec["localtmp_max_bytes"]),
                  ("LLIO SHAREDTMP MAX USE (BYTE)", rec["sharedtmp_max_bytes"]),
                  ("MPI", ",".join("%s=%s" % kv for kv in sorted(rec["mpi"].items())) or "-")]
    text = "Job Statistical Information\n" + "".join(" %-32s: %s\n" % (k, v) for k, v in lines)
    try:
        with open(rec["stats_path"], "w") as handle:
            handle.write(text)
    except OSError:
        pass


def supervise(jid):
    """Life of one job: ACC -> QUE -> RNA -> RUN -> RNO -> EXT/CCL/ERR."""
    home = pjm_home()
    with Lock(home):
        rec = load_job(home, jid)
        if rec["st"] != "ACC":  # cancelled before we started
            return 0
        rec.update(lst="ACC", st="QUE", supervisor_pid=os.getpid(),
                   supervisor_ticks=process_start_ticks(os.getpid()))
        save_job(home, rec)
    if not wait_for_slot(home, jid):
        return 0
    rec = load_job(home, jid)
    final = run_job(home, rec)
    update_job(home, jid, st="RNO")
    cleanup_job_dirs(home, jid)
    rec = finish_job(home, jid, **final)
    if rec["stats_mode"]:
        write_stats(rec)
    return 0


# ----------------------------------------------------------------------------- pjstat

BASIC_COLUMNS = ["JOB_ID", "JOB_NAME", "MD", "ST", "USER", "START_DATE", "ELAPSE_LIM", "NODE_REQUIRE",
                 "VNODE", "CORE", "V_MEM"]
VERBOSE_COLUMNS = ["JOB_ID", "JOB_NAME", "MD", "ST", "USER", "GROUP", "START_DATE", "ELAPSE_TIM",
                   "ELAPSE_LIM", "NODE_REQUIRE", "VNODE", "CORE", "V_MEM", "V_POL", "E_POL", "RANK",
                   "LST", "EC", "PC", "SN", "PRI", "ACCEPT", "RSC_GRP", "REASON"]


def row_values(rec, now):
    """Column name -> printed value for one job."""
    start, end = rec["start_time"], rec["end_time"]
    used = (end or now) - start if start else 0
    return {
        "JOB_ID": str(rec["id"]), "JOB_NAME": rec["name"], "MD": "NM", "ST": rec["st"], "USER": rec["user"],
        "GROUP": rec["group"], "START_DATE": fmt_date(start), "ELAPSE_TIM": fmt_hms(max(used, 0)),
        "ELAPSE_LIM": fmt_hms(rec["elapse_s"]), "NODE_REQUIRE": rec["node_require"], "VNODE": "-",
        "CORE": "-", "V_MEM": "-", "V_POL": "-", "E_POL": "-", "RANK": "-", "LST": dash(rec["lst"]),
        "EC": dash(rec["ec"]), "PC": dash(rec["pc"]), "SN": dash(rec["sn"]), "PRI": str(rec["priority"]),
        "ACCEPT": fmt_date(rec["accept_time"]), "RSC_GRP": rec["rscgrp"], "REASON": dash(rec["reason"]),
    }


def format_table(columns, rows):
    """Left-aligned columns separated by two spaces, like the Fugaku pjstat listing."""
    widths = [max([len(col)] + [len(row[col]) for row in rows]) for col in columns]
    lines = ["  ".join(col.ljust(w) for col, w in zip(columns, widths)).rstrip()]
    for row in rows:
        lines.append("  ".join(row[col].ljust(w) for col, w in zip(columns, widths)).rstrip())
    return "\n".join(lines) + "\n"


def main_pjstat(argv):
    """pjstat [-H] [-v] [-E] [-A] [id...]"""
    history = verbose = False
    wanted = set()
    if argv == ["--limit"]:
        return print_limits()
    for word in argv:
        if word == "-H":
            history = True
        elif word == "-v":
            verbose = True
        elif word in ("-E", "-A", "-s", "-S"):
            pass  # no bulk/step jobs and a single user: nothing to expand or widen
        elif re.fullmatch(r"day=\d+", word):
            pass
        elif re.fullmatch(r"\d+(\[\d*\])?", word):
            wanted.add(int(word.split("[")[0]))
        else:
            fail("pjstat", PjmError(4, "Invalid option or job id: %s" % word))
    home = pjm_home()
    reap_lost_jobs(home)
    states = FINAL_STATES if history else CURRENT_STATES
    now = time.time()
    rows = []
    if wanted:
        candidates = sorted(wanted)
    else:
        candidates = all_job_ids(home) if history else active_job_ids(home)
    for jid in candidates:
        rec = load_job(home, jid)
        if rec and rec["st"] in states and (not wanted or jid in wanted):
            rows.append(row_values(rec, now))
    sys.stdout.write(format_table(VERBOSE_COLUMNS if verbose else BASIC_COLUMNS, rows))
    return 0


def print_limits():
    """``pjstat --limit``: the user's job limits of the resource unit (ru-*) with what is in use.
    The layout is the emulator's (Fugaku's real one was not available): one limit per line, its
    name, the value and the current use; ``unlimited`` where none is set."""
    home = pjm_home()
    reap_lost_jobs(home)
    states = [(load_job(home, jid) or {}).get("st") for jid in active_job_ids(home)]
    accepted = sum(1 for st in states if st in CURRENT_STATES)
    running = sum(1 for st in states if st in SLOT_STATES)
    user, _ = current_user_and_group()
    limit = accept_limit()
    rows = [("ru-accept", "unlimited" if limit is None else str(limit), str(accepted)),
            ("ru-run-job", str(max_running()), str(running))]
    sys.stdout.write("USER: %s  RSCUNIT: rscunit_ft01\n" % user)
    sys.stdout.write("%-16s %-12s %s\n" % ("LIMIT_NAME", "VALUE", "USED"))
    for row in rows:
        sys.stdout.write("%-16s %-12s %s\n" % row)
    return 0


# ----------------------------------------------------------------------------- pjdel

def request_cancel(home, jid):
    """Cancel one job; returns False when it is unknown or already finished."""
    with Lock(home):
        rec = load_job(home, jid)
        if rec is None or rec["st"] not in CURRENT_STATES:
            return False
        with open(os.path.join(job_dir(home, jid), "cancel"), "w") as handle:
            handle.write("%f\n" % time.time())
        if rec["st"] in ("ACC", "QUE", "HLD"):
            rec.update(lst=rec["st"], st="CCL", pc=PJM_CODE_CANCELED, reason="PJDEL", end_time=time.time())
            save_job(home, rec)
            mark_active(home, jid, False)
        elif rec.get("job_pid"):
            kill_group(rec["job_pid"])
    return True


def main_pjdel(argv):
    """pjdel id... : kill the job's process group; the job ends as CCL with PJM CODE 1."""
    if not argv:
        fail("pjdel", PjmError(4, "Job ID is not specified."))
    home = pjm_home()
    status = 0
    cancelled = []
    for word in argv:
        if not re.fullmatch(r"\d+(\[\d*\])?", word):
            sys.stderr.write("[ERR.] PJM 0004 pjdel Invalid job ID: %s\n" % word)
            status = 1
            continue
        jid = int(word.split("[")[0])
        if request_cancel(home, jid):
            print("[INFO] PJM 0100 pjdel Job %d canceled." % jid)
            cancelled.append(jid)
        else:
            sys.stderr.write("[ERR.] PJM 0150 pjdel Job %d does not exist.\n" % jid)
            status = 1
    # Give the supervisors a moment to record CCL, so a pjstat right after sees the final state.
    deadline = time.time() + 5
    while cancelled and time.time() < deadline:
        cancelled = [j for j in cancelled if (load_job(home, j) or {"st": "CCL"})["st"] not in FINAL_STATES]
        time.sleep(0.05)
    return status


# ----------------------------------------------------------------------------- in-job commands

def running_job_record(cmd):
    """The record of the job we run in, or exit with an error (these commands exist only in jobs)."""
    jid = os.environ.get("PJM_JOBID", "")
    home = pjm_home()
    rec = load_job(home, jid) if jid.isdigit() else None
    if rec is None or rec["st"] not in ("RNA", "RUN"):
        sys.stderr.write("%s: error: this command can only be used inside a running PJM job "
                         "(PJM_JOBID=%s)\n" % (cmd, jid or "unset"))
        sys.exit(1)
    return home, rec


def main_llio_transfer(argv):
    """llio_transfer [--purge] file... : stage common files into the job's LLIO cache."""
    purge = False
    files = []
    for word in argv:
        if word == "--purge":
            purge = True
        elif word.startswith("-"):
            sys.stderr.write("llio_transfer: error: unknown option %s\n" % word)
            return 1
        else:
            files.append(word)
    if not files:
        sys.stderr.write("usage: llio_transfer [--purge] file...\n")
        return 1
    home, rec = running_job_record("llio_transfer")
    cache = os.environ.get("PJM_LLIO_CACHE") or llio_dirs(home, rec["id"])["llio_cache"]
    status = 0
    for name in files:
        path = os.path.abspath(name)
        cached = os.path.join(cache, path.lstrip("/"))
        if purge:
            if os.path.lexists(cached):
                os.remove(cached)
        elif os.path.isdir(path):
            sys.stderr.write("llio_transfer: error: %s is a directory (use dir_transfer)\n" % path)
            status = 1
            continue
        elif not os.path.isfile(path):
            sys.stderr.write("llio_transfer: error: %s: No such file\n" % path)
            status = 1
            continue
        else:
            os.makedirs(os.path.dirname(cached), exist_ok=True)
            shutil.copy2(path, cached)
        line = "%s %d %s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), rec["id"],
                                  "purge" if purge else "transfer", path)
        fd = os.open(os.path.join(home, "llio.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, line.encode())
        os.close(fd)
    return status


def parse_vcoord_file(path):
    """Entries of a Fugaku vcoord file: one ``(x)``, ``(x,y)`` or ``(x,y,z)`` per rank, optionally
    followed by ``core=N`` (the cores of that rank, so that several mpiexec can share a node).

    Returns a list of (coordinate tuple, cores or None).
    """
    entries = []
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            match = re.fullmatch(r"\(\s*(\d+(?:\s*,\s*\d+){0,2})\s*\)(?:\s+core=(\d+))?", text)
            if not match or (match.group(2) and not 1 <= int(match.group(2)) <= CORES_PER_NODE):
                raise ValueError("%s:%d: not a coordinate: %s" % (path, number, text))
            coord = tuple(int(v) for v in match.group(1).split(","))
            entries.append((coord, int(match.group(2)) if match.group(2) else None))
    return entries


def node_index(coord, shape):
    """Linear node number of a coordinate inside the node shape (e.g. 2x3x2); raise if outside."""
    if len(coord) != len(shape) and not (len(coord) == 1):
        raise ValueError("coordinate %s does not match the node shape %s" % (coord, "x".join(map(str, shape))))
    if len(coord) == 1:
        total = 1
        for dim in shape:
            total *= dim
        if coord[0] >= total:
            raise ValueError("coordinate %s is outside the %d allocated nodes" % (coord, total))
        return coord[0]
    index, stride = 0, 1
    for value, dim in zip(coord, shape):
        if value >= dim:
            raise ValueError("coordinate %s is outside the node shape %s" % (coord, "x".join(map(str, shape))))
        index += value * stride
        stride *= dim
    return index


def node_shape(node_require):
    """Dimensions of a node request: ``2x3x2:torus`` -> (2, 3, 2); ``4`` -> (4,)."""
    parts = node_require.split(":")
    dims = parts[-1] if len(parts) > 1 and re.fullmatch(r"\d+(x\d+)*", parts[-1]) else parts[0]
    return tuple(int(d) for d in dims.split("x"))


def mpiexec_registry(home, jid):
    """Directory of the job's running mpiexec placements (one JSON file per mpiexec process)."""
    path = os.path.join(job_dir(home, jid), "mpiexec")
    os.makedirs(path, exist_ok=True)
    return path


def running_placements(registry):
    """{pid: {node: [cores or None, ...]}} of the mpiexec of this job that are still alive."""
    placements = {}
    for name in os.listdir(registry):
        path = os.path.join(registry, name)
        try:
            with open(path) as handle:
                entry = json.load(handle)
        except (OSError, ValueError):
            continue
        if process_start_ticks(entry["pid"]) == entry["ticks"]:
            placements[entry["pid"]] = {int(node): cores for node, cores in entry["nodes"].items()}
        else:  # its mpiexec was killed before it could unregister
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
    return placements


def placement_conflict(wanted, others, max_per_node):
    """Why ranks {node: [cores or None]} cannot start beside the running mpiexec, or None.

    As on Fugaku, mpiexec run at the same time must not share coordinates; a rank with
    ``core=N`` takes only N cores of its node, so ranks with core= may share a node while the
    cores (48) and --mpi max-proc-per-node allow it.
    """
    for node, ranks in sorted(wanted.items()):
        used = [cores for other in others.values() for cores in other.get(node, [])]
        if not used:
            continue
        if None in used or None in ranks:
            return ("coordinate of node %d overlaps with another mpiexec running in this job "
                    "(use core=N in the vcoordfile to share a node)" % node)
        if sum(used) + sum(ranks) > CORES_PER_NODE:
            return "node %d: %d cores requested, %d of %d in use by other mpiexec" % (
                node, sum(ranks), sum(used), CORES_PER_NODE)
        if max_per_node and len(used) + len(ranks) > max_per_node:
            return "node %d: more than max-proc-per-node=%d processes" % (node, max_per_node)
    return None


def log_mpiexec(home, jid, event):
    """Append one JSON line to jobs/<id>/mpiexec.log (what ran where; read by tests)."""
    event = dict(event, time=round(time.time(), 3), pid=os.getpid())
    fd = os.open(os.path.join(job_dir(home, jid), "mpiexec.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, (json.dumps(event, sort_keys=True) + "\n").encode())
    os.close(fd)


def main_mpiexec(argv):
    """mpiexec [-n N] [--vcoordfile F] [--mca K V] [-x VAR] cmd... : N local processes as ranks."""
    nprocs, vcoord_path, exports = None, None, []
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        word = argv[i]
        if word in ("-n", "-np") and i + 1 < len(argv):
            if not argv[i + 1].isdigit() or int(argv[i + 1]) < 1:
                sys.stderr.write("mpiexec: error: invalid process count %s\n" % argv[i + 1])
                return 1
            nprocs, i = int(argv[i + 1]), i + 2
        elif word in ("--vcoordfile", "-vcoordfile") and i + 1 < len(argv):
            vcoord_path, i = argv[i + 1], i + 2
        elif word.startswith("--vcoordfile="):
            vcoord_path, i = word.split("=", 1)[1], i + 1
        elif word == "--mca" and i + 2 < len(argv):
            i += 3
        elif word == "-x" and i + 1 < len(argv):
            exports.append(argv[i + 1])
            i += 2
        elif word == "--":
            i += 1
            break
        else:
            sys.stderr.write("mpiexec: error: unsupported option %s\n" % word)
            return 1
    command = argv[i:]
    if not command:
        sys.stderr.write("usage: mpiexec [-n N] [--vcoordfile FILE] command [args...]\n")
        return 1
    home, rec = running_job_record("mpiexec")
    shape = node_shape(rec["node_require"])
    try:
        entries = parse_vcoord_file(vcoord_path) if vcoord_path else []
        nodes_of_coords = [node_index(coord, shape) for coord, _ in entries]
    except (OSError, ValueError) as exc:
        sys.stderr.write("mpiexec: error: vcoordfile: %s\n" % exc)
        return 1
    coords = [coord for coord, _ in entries]
    if nprocs is None:
        nprocs = len(coords) or rec["mpi_proc"] or rec["nodes"]
    if coords and nprocs > len(coords):
        sys.stderr.write("mpiexec: error: %d processes but only %d coordinates in %s\n"
                         % (nprocs, len(coords), vcoord_path))
        return 1
    if nprocs > rec["nodes"] * CORES_PER_NODE:
        sys.stderr.write("mpiexec: error: %d processes exceed %d nodes x %d cores\n"
                         % (nprocs, rec["nodes"], CORES_PER_NODE))
        return 1
    per_node = -(-nprocs // rec["nodes"])
    placement = nodes_of_coords[:nprocs] if coords else [rank // per_node for rank in range(nprocs)]
    cores = [entries[rank][1] for rank in range(nprocs)] if coords else [None] * nprocs
    wanted = {}
    for node, rank_cores in zip(placement, cores):
        wanted.setdefault(node, []).append(rank_cores)
    max_per_node = rec["mpi"].get("max-proc-per-node")
    max_per_node = int(max_per_node) if str(max_per_node).isdigit() else None
    registry = mpiexec_registry(home, rec["id"])
    entry_path = os.path.join(registry, "%d.json" % os.getpid())
    with Lock(home):
        problem = placement_conflict(wanted, running_placements(registry), max_per_node)
        if problem is None:
            write_json_atomic(entry_path, {"pid": os.getpid(), "ticks": process_start_ticks(os.getpid()),
                                           "nodes": {str(node): c for node, c in wanted.items()}})
    if problem is not None:
        sys.stderr.write("mpiexec: error: %s\n" % problem)
        return 1
    log_mpiexec(home, rec["id"], {"event": "start", "command": command, "ranks": [
        {"node": node, "coord": list(coords[rank]) if coords else None, "cores": cores[rank]}
        for rank, node in enumerate(placement)]})
    local_rank, local_size = [], {}
    for node in placement:
        local_rank.append(local_size.get(node, 0))
        local_size[node] = local_size.get(node, 0) + 1
    procs = []
    status = 0
    try:
        for rank in range(nprocs):
            env = dict(os.environ)
            for name in exports:
                key, sep, value = name.partition("=")
                if sep:
                    env[key] = value
            env.update({"PMIX_RANK": str(rank), "PMIX_SIZE": str(nprocs), "OMPI_COMM_WORLD_RANK": str(rank),
                        "OMPI_COMM_WORLD_SIZE": str(nprocs),
                        "OMPI_COMM_WORLD_LOCAL_RANK": str(local_rank[rank]),
                        "OMPI_COMM_WORLD_LOCAL_SIZE": str(local_size[placement[rank]]),
                        "FAKEPJM_MPI_NODE": str(placement[rank])})
            if coords:
                env["FAKEPJM_VCOORD"] = "(%s)" % ",".join(map(str, coords[rank]))
            try:
                procs.append(subprocess.Popen(command, env=env))
            except OSError as exc:
                sys.stderr.write("mpiexec: error: cannot start %s: %s\n" % (command[0], exc.strerror))
                for proc in procs:
                    proc.kill()
                status = 127
                return status

        def forward(signum, _frame):
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signum)

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, forward)
        codes = [proc.wait() for proc in procs]
        for code in codes:
            if code != 0:
                status = 128 - code if code < 0 else code
                break
        return status
    finally:
        log_mpiexec(home, rec["id"], {"event": "end", "status": status})
        try:
            os.remove(entry_path)
        except FileNotFoundError:
            pass


COMMANDS = {"pjsub": main_pjsub, "pjstat": main_pjstat, "pjdel": main_pjdel,
            "llio_transfer": main_llio_transfer, "mpiexec": main_mpiexec}


def outage(cmd):
    """An outage of the PJM service for ``cmd`` (pjsub, pjstat or pjdel), as the file
    ``$FAKEPJM_HOME/outage`` says while it exists: one line per command, ``COMMAND fail`` (an
    error message, exit 1: the service does not answer) or ``COMMAND hang`` (no answer at all:
    the command sleeps until it is killed). Tests create and remove the file during a run."""
    try:
        with open(os.path.join(pjm_home(), "outage")) as handle:
            lines = [line.split() for line in handle]
    except FileNotFoundError:
        return
    for words in lines:
        if len(words) == 2 and words[0] == cmd:
            if words[1] == "hang":
                while True:
                    time.sleep(60)
            sys.stderr.write("[ERR.] PJM 0010 %s Cannot connect to the job manager: %s\n"
                             % (cmd, "service temporarily unavailable"))
            sys.exit(1)


def main(argv):
    """Entry point: ``fakepjm.py supervise ID`` (internal), ``fakepjm.py foreign-exec DIR... --
    COMMAND...`` (internal, see run_job) or ``fakepjm.py COMMAND args...``."""
    if len(argv) >= 2 and argv[0] == "supervise":
        return supervise(int(argv[1]))
    if argv and argv[0] == "foreign-exec":
        return foreign_exec(argv[1:])
    if argv and argv[0] in COMMANDS:
        if argv[0] in ("pjsub", "pjstat", "pjdel"):
            outage(argv[0])
        return COMMANDS[argv[0]](argv[1:])
    sys.stderr.write("usage: fakepjm.py {%s} ...\n" % ",".join(sorted(COMMANDS)))
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
