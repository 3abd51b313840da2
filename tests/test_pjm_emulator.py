"""Tests of the fake Fugaku PJM (.test/pjm/bin) and of the PJM executor plugin
(plugins/snakemake-executor-plugin-pjm, used by profiles/pjm) against it.

Every test uses its own FAKEPJM_HOME under tmp_path, so job ids restart at 1 and nothing leaks
between tests. Jobs are tiny shell scripts; the slowest parts are the 1 s elapse limit and the
Snakemake runs through the plugin.
"""

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import LOGIN_VENV_BIN, restore_sigint
from snakemake_executor_plugin_pjm.pjm import StatusRounds, parse_limits, refused_for_limit, submitted_job_id

pytestmark = pytest.mark.pjm

REPO = Path(__file__).resolve().parents[1]
PJM_BIN = REPO / ".test" / "pjm" / "bin"
SNAKEMAKE = REPO / ".venv" / "bin" / "snakemake"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
DATE_RE = re.compile(r"^\(?\d\d/\d\d$")
TIME_RE = re.compile(r"^\d\d:\d\d(:\d\d)?\)?$")


@pytest.fixture
def pjm(tmp_path, no_slurm_probe):
    """Environment + helpers for one isolated emulator instance; cancels leftover jobs afterwards.
    Its PATH has no_slurm_probe's failing scontrol (a PJM machine has no Slurm to probe)."""
    driver = Pjm(tmp_path, os.path.dirname(shutil.which("scontrol", path=no_slurm_probe["PATH"])))
    yield driver
    leftovers = [row["JOB_ID"] for row in driver.rows()]
    if leftovers:
        driver.run("pjdel", *leftovers, check=False)


class Pjm:
    """Small driver around the emulator commands for the tests."""

    def __init__(self, tmp_path, no_slurm_dir):
        self.home = tmp_path / "fakepjm"
        self.work = tmp_path / "work"
        self.work.mkdir()
        self.env = {
            "PATH": "%s:%s:%s" % (PJM_BIN, no_slurm_dir, SYSTEM_PATH),
            "HOME": os.environ.get("HOME", "/root"),
            "USER": os.environ.get("USER", "root"),
            "FAKEPJM_HOME": str(self.home),
            "FAKEPJM_MAX_RUNNING": "4",
        }

    def run(self, *cmd, check=True, env=None, cwd=None):
        result = subprocess.run([str(c) for c in cmd], cwd=cwd or self.work, env=env or self.env,
                                capture_output=True, text=True, timeout=60)
        if check and result.returncode != 0:
            raise AssertionError("%s failed (%d): %s %s" % (cmd, result.returncode, result.stdout, result.stderr))
        return result

    def script(self, name, body):
        path = self.work / name
        path.write_text(textwrap.dedent(body).lstrip())
        return path

    def submit(self, *args, env=None):
        """Submit with -z jid and return the job id."""
        out = self.run("pjsub", "-z", "jid", *args, env=env).stdout.strip()
        assert re.fullmatch(r"\d+", out), out
        return out

    def rows(self, *args):
        """Parse a pjstat listing into dicts keyed by the header (two-word dates joined by '_')."""
        lines = [line for line in self.run("pjstat", *args).stdout.splitlines() if line.strip()]
        header = lines[0].split()
        parsed = []
        for line in lines[1:]:
            words, merged = line.split(), []
            i = 0
            while i < len(words):
                if DATE_RE.match(words[i]) and i + 1 < len(words) and TIME_RE.match(words[i + 1]):
                    merged.append(words[i] + "_" + words[i + 1])
                    i += 2
                else:
                    merged.append(words[i])
                    i += 1
            assert len(merged) == len(header), line
            parsed.append(dict(zip(header, merged)))
        return parsed

    def row(self, jid, *args):
        found = [r for r in self.rows("-v", *args, jid) if r["JOB_ID"] == jid]
        return found[0] if found else None

    def wait_final(self, jid, timeout=20):
        """Poll pjstat -H -v until the job is finished; return its row."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            row = self.row(jid, "-H")
            if row:
                return row
            time.sleep(0.1)
        raise AssertionError("job %s did not finish: %s" % (jid, self.run("pjstat", "-v").stdout))

    def wait_state(self, jid, state, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            row = self.row(jid)
            if row and row["ST"] == state:
                return row
            time.sleep(0.05)
        raise AssertionError("job %s never reached %s" % (jid, state))

    def status(self, jid, grace_seconds=120):
        """The plugin's judgement of one job from this emulator's pjstat: None while it runs, or
        its End (success, kind, reason)."""
        async def pjstat(args):
            done = self.run("pjstat", *args, check=False)
            return done.stdout if done.returncode == 0 else None

        return asyncio.run(StatusRounds(pjstat, grace_seconds).check([jid])).status[jid]


def test_submit_prints_banner_or_bare_id(pjm):
    pjm.script("hello.sh", "echo hello\n")
    banner = pjm.run("pjsub", "hello.sh").stdout
    assert re.fullmatch(r"\[INFO\] PJM 0000 pjsub Job 1 submitted\.\n", banner)
    assert pjm.submit("hello.sh") == "2"
    assert submitted_job_id(pjm.run("pjsub", "hello.sh").stdout) == "3"
    for jid in ("1", "2", "3"):
        assert pjm.wait_final(jid)["ST"] == "EXT"
    # default output file names: NAME.ID.out / NAME.ID.err in the submit directory
    assert (pjm.work / "hello.sh.1.out").read_text() == "hello\n"
    assert (pjm.work / "hello.sh.1.err").exists()


def test_final_states_codes_and_the_plugins_judgement(pjm):
    pjm.script("ok.sh", "echo fine\n")
    pjm.script("exit3.sh", "echo failing >&2\nexit 3\n")
    pjm.script("slow.sh", "sleep 30\n")
    ok = pjm.submit("ok.sh")
    bad = pjm.submit("exit3.sh")
    elapse = pjm.submit("-L", "elapse=1", "slow.sh")
    cancel = pjm.submit("-L", "elapse=10:00", "slow.sh")
    pjm.wait_state(cancel, "RUN")
    assert pjm.status(cancel) is None
    deleted = pjm.run("pjdel", cancel).stdout
    assert deleted == "[INFO] PJM 0100 pjdel Job %s canceled.\n" % cancel

    rows = {jid: pjm.wait_final(jid) for jid in (ok, bad, elapse, cancel)}
    summary = {jid: (r["ST"], r["EC"], r["PC"], r["SN"]) for jid, r in rows.items()}
    assert summary[ok] == ("EXT", "0", "0", "-")
    assert summary[bad] == ("EXT", "3", "0", "-")
    assert summary[elapse] == ("EXT", "137", "11", "9")
    assert summary[cancel][:3] == ("CCL", "-", "1")
    # the elapse-limited job was killed close to its 1 s limit, not after the 30 s sleep
    assert int(rows[elapse]["ELAPSE_TIM"].split(":")[-1]) <= 3
    # finished jobs leave the current list
    assert pjm.row(ok) is None

    assert pjm.status(ok).success
    end = pjm.status(bad)
    assert not end.success and end.kind == "exit" and "EXIT CODE 3" in end.reason
    end = pjm.status(elapse)
    assert end.kind == "elapse" and "elapse limit exceeded (" in end.reason and "PJM CODE 11" in end.reason
    end = pjm.status(cancel)
    assert end.kind == "cancelled" and "PJM CODE 1" in end.reason


def test_grace_for_unlisted_job(pjm):
    assert pjm.status("424242") is None  # may be PJM lag: not failed at once
    end = pjm.status("424242", grace_seconds=0)
    assert end.kind == "missing" and "424242" in end.reason


def test_pjdel_unknown_job_fails(pjm):
    result = pjm.run("pjdel", "999", check=False)
    assert result.returncode != 0
    assert "999" in result.stderr and "does not exist" in result.stderr


def test_slot_limit_keeps_jobs_queued(pjm):
    # Jobs hold their slot until the test creates "release", so the queue state is deterministic.
    stamp = pjm.script("stamp.sh", """
        date +%s.%N > "start.$PJM_JOBID"
        for _ in $(seq 200); do [ -e release ] && break; sleep 0.1; done
        date +%s.%N > "end.$PJM_JOBID"
    """)
    env = dict(pjm.env, FAKEPJM_MAX_RUNNING="1")
    first = pjm.submit(stamp.name, env=env)
    second = pjm.submit(stamp.name, env=env)
    third = pjm.submit(stamp.name, env=env)
    pjm.wait_state(first, "RUN")
    pjm.wait_state(second, "QUE")
    pjm.wait_state(third, "QUE")
    time.sleep(0.5)  # several scheduling rounds: still only one job may run
    assert [r["ST"] for r in pjm.rows()] == ["RUN", "QUE", "QUE"]
    # a queued job cancelled never starts
    assert pjm.run("pjdel", third).stdout == "[INFO] PJM 0100 pjdel Job %s canceled.\n" % third
    cancelled = pjm.wait_final(third)
    assert (cancelled["ST"], cancelled["PC"], cancelled["LST"], cancelled["START_DATE"]) == ("CCL", "1", "QUE", "-")
    (pjm.work / "release").touch()
    pjm.wait_final(first)
    pjm.wait_final(second)
    first_end = float((pjm.work / ("end." + first)).read_text())
    second_start = float((pjm.work / ("start." + second)).read_text())
    assert second_start >= first_end
    assert not (pjm.work / ("start." + third)).exists()


def env_of(path):
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_environment_minimal_unless_x_or_X(pjm):
    pjm.script("env.sh", "env > env.$PJM_JOBID.txt\n")
    caller = dict(pjm.env, FOO="from-caller", PATH="/opt/caller/bin:" + pjm.env["PATH"])
    minimal = pjm.submit("env.sh", env=caller)
    passed = pjm.submit("-x", "BAR=baz,FOO", "env.sh", env=caller)
    everything = pjm.submit("-X", "env.sh", env=caller)
    for jid in (minimal, passed, everything):
        assert pjm.wait_final(jid)["EC"] == "0"

    env = env_of(pjm.work / ("env.%s.txt" % minimal))
    assert "FOO" not in env and "BAR" not in env
    assert env["PATH"].startswith(SYSTEM_PATH) and "/opt/caller/bin" not in env["PATH"]
    assert env["HOME"] and env["USER"]
    assert env["PJM_JOBID"] == minimal and env["PJM_O_WORKDIR"] == str(pjm.work)
    assert env["PJM_JOBNAME"] == "env.sh" and env["PJM_NODE"] == "1" and env["PJM_RSCGRP"]
    for name in ("PJM_LOCALTMP", "PJM_SHAREDTMP", "PJM_LLIO_CACHE"):
        assert env[name].startswith(str(pjm.home))
    env = env_of(pjm.work / ("env.%s.txt" % passed))
    assert env["BAR"] == "baz" and env["FOO"] == "from-caller"
    assert "/opt/caller/bin" not in env["PATH"]
    env = env_of(pjm.work / ("env.%s.txt" % everything))
    assert env["FOO"] == "from-caller" and env["PATH"].startswith("/opt/caller/bin:")


def test_llio_dirs_vanish_and_transfer_is_logged(pjm):
    (pjm.work / "ref.fa").write_text(">chr1\nACGT\n")
    pjm.script("llio.sh", """
        set -eu
        echo scratch > "$PJM_LOCALTMP/t.txt"
        echo shared > "$PJM_SHAREDTMP/s.txt"
        llio_transfer ref.fa
        cmp ref.fa "$PJM_LLIO_CACHE$PWD/ref.fa"
        llio_transfer --purge ref.fa
        test ! -e "$PJM_LLIO_CACHE$PWD/ref.fa"
        echo "$PJM_LOCALTMP $PJM_SHAREDTMP $PJM_LLIO_CACHE" > dirs.$PJM_JOBID
    """)
    jid = pjm.submit("llio.sh")
    assert pjm.wait_final(jid)["EC"] == "0", (pjm.work / ("llio.sh.%s.err" % jid)).read_text()
    dirs = (pjm.work / ("dirs." + jid)).read_text().split()
    assert len(dirs) == 3 and not any(Path(d).exists() for d in dirs)
    log = (pjm.home / "llio.log").read_text().splitlines()
    ref = str(pjm.work / "ref.fa")
    assert [line.split()[1:] for line in log] == [[jid, "transfer", ref], [jid, "purge", ref]]

    kept = pjm.submit("llio.sh", env=dict(pjm.env, FAKEPJM_KEEP_TMP="1"))
    pjm.wait_final(kept)
    local = Path((pjm.work / ("dirs." + kept)).read_text().split()[0])
    assert (local / "t.txt").read_text() == "scratch\n"

    outside = pjm.run("llio_transfer", "ref.fa", check=False)
    assert outside.returncode != 0 and "inside a running PJM job" in outside.stderr


def test_directives_precedence_output_options_and_stats(pjm):
    pjm.script("directive.sh", """
        #!/bin/bash
        #PJM -N fromdirective
        #PJM -L "node=1,elapse=0:10"
        #PJM -L rscgrp=small
        #PJM -S
        echo out; echo err >&2
        echo "$PJM_JOBNAME $PJM_RSCGRP"
    """)
    jid = pjm.submit("-L", "elapse=0:20,rscgrp=large", "-j", "-o", "logs.%j.txt", "directive.sh")
    row = pjm.wait_final(jid)
    assert row["JOB_NAME"] == "fromdirective"
    assert row["ELAPSE_LIM"] == "0000:00:20"  # the command line wins over #PJM
    assert row["RSC_GRP"] == "large"
    log = (pjm.work / ("logs.%s.txt" % jid)).read_text()
    assert "out" in log and "err" in log and "fromdirective large" in log  # -j merged stderr
    assert not (pjm.work / ("fromdirective.%s.err" % jid)).exists()
    stats = (pjm.work / ("fromdirective.%s.stats" % jid)).read_text()
    assert re.search(r"PJM CODE\s+: 0\n", stats) and re.search(r"EXIT CODE\s+: 0\n", stats)
    assert re.search(r"JOB ID\s+: %s\n" % jid, stats)


def test_stats_records_failure_codes(pjm):
    pjm.script("fail.sh", "exit 5\n")
    jid = pjm.submit("-s", "-N", "failing", "fail.sh")
    pjm.wait_final(jid)
    stats = (pjm.work / ("failing.%s.stats" % jid)).read_text()
    assert re.search(r"EXIT CODE\s+: 5\n", stats) and re.search(r"PJM CODE\s+: 0\n", stats)


@pytest.mark.parametrize("bad", ["localtmp-size=3GB", "sharedtmp-size=abc", "localtmp-size=1.5Gi"])
def test_malformed_llio_size_is_refused(pjm, bad):
    pjm.script("x.sh", "true\n")
    result = pjm.run("pjsub", "--llio", bad, "x.sh", check=False)
    assert result.returncode != 0 and "[ERR.] PJM" in result.stderr and bad.split("=")[1] in result.stderr
    assert pjm.rows() == [] and not list(pjm.work.glob("x.sh.*"))
    assert submitted_job_id(result.stdout + result.stderr) is None


def test_localtmp_overflow_kills_job_with_disk_code(pjm):
    pjm.script("fill.sh", """
        head -c 3000000 /dev/zero > "$PJM_LOCALTMP/big"
        sleep 20
    """)
    jid = pjm.submit("--llio", "localtmp-size=1Mi,sharedtmp-size=2Gi", "fill.sh")
    row = pjm.wait_final(jid)
    assert (row["ST"], row["PC"], row["EC"]) == ("EXT", "13", "137")
    assert pjm.status(jid).kind == "disk"


def test_mpiexec_ranks_and_vcoord(pjm):
    (pjm.work / "vcoord").write_text("(0)\n(1)\n(1)\n")
    pjm.script("mpi.sh", """
        mpiexec -n 3 sh -c 'echo "rank $PMIX_RANK/$OMPI_COMM_WORLD_SIZE"' | sort > ranks.txt
        mpiexec --vcoordfile vcoord sh -c 'echo "$OMPI_COMM_WORLD_RANK $FAKEPJM_MPI_NODE $OMPI_COMM_WORLD_LOCAL_RANK"' \\
            | sort > placement.txt
        mpiexec -n 2 sh -c 'exit $PMIX_RANK'
    """)
    jid = pjm.submit("-L", "node=2", "--mpi", "proc=3", "mpi.sh")
    row = pjm.wait_final(jid)
    assert row["EC"] == "1"  # the script's last command: mpiexec returns the failing rank's code
    assert (pjm.work / "ranks.txt").read_text() == "rank 0/3\nrank 1/3\nrank 2/3\n"
    assert (pjm.work / "placement.txt").read_text() == "0 0 0\n1 1 0\n2 1 1\n"
    outside = pjm.run("mpiexec", "-n", "1", "true", check=False)
    assert outside.returncode != 0


def test_simultaneous_mpiexec_share_a_node_only_by_cores(pjm):
    """As on Fugaku, mpiexec run at the same time must not overlap; core=N in the vcoord file lets
    them share a node by cores (each start and end is logged with its node and cores)."""
    for name, text in (("whole0", "(0)\n"), ("cmg0", "(0) core=24\n"), ("cmg1", "(1) core=24\n"),
                       ("big1", "(1) core=36\n")):
        (pjm.work / name).write_text(text)
    pjm.script("bg.sh", """
        wait_for() { while [ ! -e "$1" ]; do sleep 0.1; done; }
        mpiexec --vcoordfile cmg1 -n 1 sh -c 'touch held1; sleep 4' &
        wait_for held1
        mpiexec -vcoordfile cmg1 -n 1 sh -c 'echo "$FAKEPJM_MPI_NODE $FAKEPJM_VCOORD"' > shared.txt
        echo "shared $?" >> codes.txt
        mpiexec --vcoordfile big1 -n 1 true 2> big.err; echo "big $?" >> codes.txt
        mpiexec --vcoordfile whole0 -n 1 sh -c 'touch held0; sleep 4' &
        wait_for held0
        mpiexec --vcoordfile cmg0 -n 1 true 2> whole.err; echo "whole $?" >> codes.txt
        wait
        mpiexec --vcoordfile cmg0 -n 1 true; echo "after $?" >> codes.txt
    """)
    jid = pjm.submit("-L", "node=2", "--mpi", "max-proc-per-node=4", "bg.sh")
    assert pjm.wait_final(jid, timeout=60)["EC"] == "0"
    assert (pjm.work / "codes.txt").read_text().split("\n")[:-1] == ["shared 0", "big 1", "whole 1", "after 0"]
    assert (pjm.work / "shared.txt").read_text() == "1 (1)\n"
    assert "36 cores requested, 24 of 48 in use" in (pjm.work / "big.err").read_text()
    assert "overlaps with another mpiexec" in (pjm.work / "whole.err").read_text()
    events = [json.loads(line) for line in (pjm.home / "jobs" / jid / "mpiexec.log").read_text().splitlines()]
    started = [(e["ranks"][0]["node"], e["ranks"][0]["cores"]) for e in events if e["event"] == "start"]
    assert started == [(1, 24), (1, 24), (0, None), (0, 24)]
    assert sorted(e["status"] for e in events if e["event"] == "end") == [0, 0, 0, 0]


SNAKEFILE = '''
rule all:
    input:
        "c/final.txt",


rule a:
    output:
        "a/x.txt",
    shell:
        "echo a > {output}"


rule d:
    output:
        "d/z.txt",
    shell:
        "echo d > {output}"


rule c:
    input:
        x="a/x.txt",
        z="d/z.txt",
        ref="ref.txt",
    output:
        "c/final.txt",
    shell:
        """
        llio_transfer {input.ref}
        cat {input.x} {input.z} > "$PJM_LOCALTMP/merged.txt"
        echo "job=${{PJM_JOBID:-}} localtmp=$PJM_LOCALTMP" >> "$PJM_LOCALTMP/merged.txt"
        cp "$PJM_LOCALTMP/merged.txt" {output}
        """
'''


@pytest.mark.timeout(120)
def test_snakemake_through_the_pjm_executor_plugin(pjm, compute_venv):
    """--executor pjm: pjsub with the resources' options (elapse, resource group, group, LLIO
    size), -X, job names smk-RULE, PJM's job output in a directory per rule, removed when the job
    succeeded. The login venv cannot run inside the jobs (the emulator's foreign-architecture
    mode): they run the compute venv's Snakemake, which the plugin checked first."""
    (pjm.work / "Snakefile").write_text(SNAKEFILE)
    (pjm.work / "ref.txt").write_text("reference\n")
    env = dict(pjm.env, PATH="%s:%s" % (pjm.env["PATH"], SNAKEMAKE.parent), FAKEPJM_MAX_RUNNING="2",
               FAKEPJM_FOREIGN_ARCH=str(LOGIN_VENV_BIN))
    command = [str(SNAKEMAKE), "--executor", "pjm", "--jobs", "2", "--seconds-between-status-checks", "1",
               "--default-resources", "runtime=5", "pjm_rscgrp='large'", "pjm_group='grp1'", "pjm_localtmp='1Mi'",
               "--latency-wait", "5", "--pjm-logdir", "pjm-logs"]
    # No compute side given: refused before any job.
    refused = subprocess.run(command, cwd=pjm.work, env=env, capture_output=True, text=True, timeout=110)
    assert refused.returncode != 0 and "no interpreter for the compute nodes" in refused.stderr, refused.stderr[-3000:]
    assert not (pjm.home / "jobs").exists() or not list((pjm.home / "jobs").iterdir())
    result = subprocess.run([*command, "--pjm-compute-venv", str(compute_venv)],
                            cwd=pjm.work, env=env, capture_output=True, text=True, timeout=110)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"jobs run {compute_venv}/bin/python (compute venv {compute_venv}" in result.stderr
    final = (pjm.work / "c" / "final.txt").read_text().splitlines()
    assert final[:2] == ["a", "d"]
    job, localtmp = dict(kv.split("=", 1) for kv in final[2].split()).values()
    assert localtmp == str(pjm.home / "localtmp" / job) and not Path(localtmp).exists()
    rows = pjm.rows("-H", "-v")
    assert sorted(r["JOB_NAME"] for r in rows) == ["smk-a", "smk-c", "smk-d"]
    assert all((r["ST"], r["EC"], r["PC"]) == ("EXT", "0", "0") for r in rows)
    assert {(r["ELAPSE_LIM"], r["RSC_GRP"], r["GROUP"]) for r in rows} == {("0000:05:00", "large", "grp1")}
    assert json.loads((pjm.home / "jobs" / job / "job.json").read_text())["llio"] == {"localtmp-size": "1Mi"}
    # The job scripts ran the compute venv's Snakemake, its bin/ first on PATH.
    script = (pjm.home / "jobs" / job / "script").read_text()
    assert f"export PATH={compute_venv}/bin:" in script and f"{compute_venv}/bin/python -m snakemake" in script
    assert str(SNAKEMAKE.parent / "python") not in script
    # One log directory per rule; the successful jobs' logs are gone.
    assert sorted(p.name for p in (pjm.work / "pjm-logs").iterdir()) == ["a", "c", "d"]
    assert [p for p in (pjm.work / "pjm-logs").rglob("*") if p.is_file()] == []
    log = (pjm.home / "llio.log").read_text().split()
    assert log[1:] == [job, "transfer", str(pjm.work / "ref.txt")]


@pytest.mark.timeout(90)
def test_snakemake_interrupt_cancels_pjm_job(pjm):
    """(Login and compute side share the login venv here: --pjm-compute-venv names it.)"""
    """SIGINT to snakemake must reach the plugin's pjdel: the job ends as CCL and writes nothing."""
    (pjm.work / "Snakefile").write_text('rule slow:\n    output:\n        "slow.txt",\n'
                                        '    shell:\n        "sleep 60 && touch {output}"\n')
    env = dict(pjm.env, PATH="%s:%s" % (pjm.env["PATH"], SNAKEMAKE.parent))
    # a background child of a non-interactive parent ignores SIGINT: restore the default first
    proc = subprocess.Popen(
        [str(SNAKEMAKE), "--executor", "pjm", "--jobs", "1",
         "--seconds-between-status-checks", "1", "--pjm-compute-venv", str(LOGIN_VENV_BIN.parent)],
        cwd=pjm.work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=restore_sigint)
    try:
        # SIGINT only once Snakemake has taken the job id from pjsub's answer: before that it has
        # nothing to cancel (under load that came later than the job's start).
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if "with PJM jobid" in line:
                break
        pjm.wait_state("1", "RUN")
        proc.send_signal(signal.SIGINT)
        log = "".join(seen) + proc.communicate(timeout=60)[0]
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert "pjdel Job 1 canceled" in log
    row = pjm.wait_final("1")
    assert (row["ST"], row["PC"]) == ("CCL", "1")
    assert not (pjm.work / "slow.txt").exists()


def test_foreign_architecture_mode(pjm, tmp_path):
    """FAKEPJM_FOREIGN_ARCH: inside a job, everything in the named directories is a binary of the
    other architecture (an x86 venv on an aarch64 compute node); outside, nothing changes."""
    login = tmp_path / "login-bin"
    login.mkdir()
    (login / "python").symlink_to(sys.executable)
    script = pjm.script("arch.sh", f"""
        #!/bin/bash
        {login}/python -c 'print("ran")'
        echo "rc=$?"
        ls {login}
        """)
    job = pjm.submit("-j", "-o", "arch.out", script, env=dict(pjm.env, FAKEPJM_FOREIGN_ARCH=str(login)))
    assert pjm.wait_final(job)["EC"] == "0"
    out = (pjm.work / "arch.out").read_text()
    assert "python: cannot execute binary file: Exec format error" in out and "rc=126" in out, out
    assert "python" in out.split("rc=126")[1]  # the same names, other binaries
    assert subprocess.run([login / "python", "-c", "print(1)"], capture_output=True).returncode == 0
    job = pjm.submit("-j", "-o", "native.out", script)
    pjm.wait_final(job)
    assert "ran\nrc=0" in (pjm.work / "native.out").read_text()


def test_outage_file_makes_commands_fail_or_hang(pjm):
    (pjm.home).mkdir(exist_ok=True)
    (pjm.home / "outage").write_text("pjstat fail\npjdel hang\n")
    failed = pjm.run("pjstat", "-v", check=False)
    assert failed.returncode == 1 and failed.stderr.startswith("[ERR.] PJM 0010 pjstat ")
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(["pjdel", "1"], env=pjm.env, capture_output=True, timeout=2)
    assert pjm.run("pjsub", "-z", "jid", pjm.script("ok.sh", "true\n")).returncode == 0  # not listed: works
    (pjm.home / "outage").unlink()
    assert pjm.run("pjstat", "-v").returncode == 0


def test_accept_limit_refuses_pjsub_and_pjstat_limit_shows_it(pjm):
    env = dict(pjm.env, FAKEPJM_ACCEPT_LIMIT="2", FAKEPJM_MAX_RUNNING="1")
    sleeper = pjm.script("sleep.sh", "sleep 30\n")
    jobs = [pjm.submit(sleeper, env=env) for _ in range(2)]
    refused = pjm.run("pjsub", sleeper, env=env, check=False)
    assert refused.returncode == 1 and "ru-accept=2" in refused.stderr
    assert refused_for_limit(refused.stderr)
    limits = pjm.run("pjstat", "--limit", env=env).stdout
    assert parse_limits(limits) == {"ru-accept": 2, "ru-run-job": 1}
    assert re.search(r"ru-accept\s+2\s+2", limits)
    pjm.run("pjdel", *jobs)
    assert pjm.submit(sleeper, env=env)  # room again


@pytest.mark.timeout(120)
def test_a_bounded_pjstat_outage_ends_the_run_with_its_jobs_cancelled(pjm):
    """The tester's case: pjstat fails while a job runs. The run ends only after the outage
    bound (here 3 s and 2 rounds), and the job it gives up on is cancelled with pjdel first: no
    orphan keeps running to overwrite a rerun's outputs."""
    (pjm.work / "Snakefile").write_text('rule slow:\n    output:\n        "slow.txt",\n'
                                        '    shell:\n        "sleep 40 && touch {output}"\n')
    env = dict(pjm.env, PATH="%s:%s" % (pjm.env["PATH"], SNAKEMAKE.parent))
    proc = subprocess.Popen(
        [str(SNAKEMAKE), "--executor", "pjm", "--jobs", "1", "--seconds-between-status-checks", "1",
         "--pjm-compute-venv", str(LOGIN_VENV_BIN.parent), "--pjm-status-outage-seconds", "3",
         "--pjm-status-outage-rounds", "2", "--pjm-status-timeout-seconds", "5"],
        cwd=pjm.work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if "with PJM jobid" in line:
                break
        pjm.wait_state("1", "RUN")
        (pjm.home / "outage").write_text("pjstat fail\n")
        log = "".join(seen) + proc.communicate(timeout=90)[0]
    finally:
        proc.kill()
        (pjm.home / "outage").unlink(missing_ok=True)
    assert proc.returncode != 0, log[-3000:]
    assert re.search(r"PJM job 1 given up: pjstat failed for \d+s \(\d+ status rounds in a row\); the job was "
                     r"cancelled with pjdel", log), log[-3000:]
    assert "pjdel Job 1 canceled" in log and "kept as running" in log
    row = pjm.wait_final("1")
    assert (row["ST"], row["PC"]) == ("CCL", "1")
    failures = [json.loads(line) for line in (pjm.work / ".snakemake" / "pjm-logs" / "job-failures.jsonl")
                .read_text().splitlines()]
    assert [(f["pjm_jobid"], f["kind"], f["retry"]) for f in failures] == [("1", "status-outage", False)]
    assert not (pjm.work / "slow.txt").exists()
