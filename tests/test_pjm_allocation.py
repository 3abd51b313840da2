"""The pair scenario through profiles/pjm-allocation on the PJM emulator (.test/pjm): ONE PJM job
of two nodes, written and submitted by profiles/pjm-allocation/submit from a project directory
outside the checkout, runs Snakemake there, which
starts every rule job on a slot of that job with `mpiexec --vcoordfile FILE -n 1`. shared_tmp
is the job's $PJM_SHAREDTMP, the reference is llio_transfer'd once at the start of the run and
purged at its end, and the results equal the local run's.

One pipeline run (2 nodes x 2 slots on this 2-core machine).
"""

import json
import os
import re
import subprocess
import time
from collections import Counter, defaultdict
from importlib import metadata

import pytest

from conftest import REPO, assert_same_pair_results, pair_targets, scenario_variant
from genomon_smk.plan.reference import reference_files
from test_pjm_workflow import finished_jobs, pjm_env, project_directory  # noqa: F401 (pjm_env: fixture)

pytestmark = [pytest.mark.pjm, pytest.mark.workflow, pytest.mark.timeout(900)]

NODES, SLOTS_PER_NODE = 2, 2


def wait_until_finished(job, timeout):
    """Poll the emulator until the PJM job is in the finished list; return its row."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = finished_jobs(dict(os.environ)).get(job)
        if row:
            return row
        time.sleep(1)
    subprocess.run(["pjdel", job], capture_output=True)
    pytest.fail(f"PJM job {job} did not finish in {timeout} s")


def rule_of(jobscript):
    """The rule name of a cluster-generic jobscript path (.snakemake/tmp.X/snakejob.RULE.N.sh)."""
    return os.path.basename(jobscript).split(".")[1]


def test_pjm_allocation_runs_the_pipeline_inside_one_job(pjm_env, testdata, scenario_root, request,
                                                         tmp_path, monkeypatch, compute_venv):
    monkeypatch.setenv("FAKEPJM_KEEP_TMP", "1")  # keep the job's LLIO areas, to look into them afterwards
    monkeypatch.setenv("GENOMON_SMK_SLOTS_PER_NODE", str(SLOTS_PER_NODE))
    # From a project directory outside the checkout: the job runs Snakemake there, so the config
    # is named relative to it.
    project = project_directory(tmp_path)
    # The storage monitor (off on clusters by default) shows that shared_tmp was used.
    scenario_variant(scenario_root, "config-pair", project, map={"threads": 1}, markdup={"threads": 1},
                     storage={"monitor": True})
    results = project / "results"
    log = tmp_path / "allocation.out"
    started = time.monotonic()
    submitted = subprocess.run(
        ["bash", str(REPO / "profiles" / "pjm-allocation" / "submit"), "-L", f"node={NODES},elapse=14:00",
         "--llio", "sharedtmp-size=1Gi,localtmp-size=512Mi", "-o", str(log),
         "--", "--configfile", "config.yaml", "--seconds-between-status-checks", "1", "--latency-wait", "2",
         "--", *pair_targets(results)],
        cwd=project, capture_output=True, text=True,
    )
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()
    assert re.fullmatch(r"\d+", job), submitted.stdout
    row = wait_until_finished(job, timeout=840)
    print(f"pjm-allocation run of the .test pipeline: {time.monotonic() - started:.0f} s")
    output = log.read_text()
    assert row == ("genomon-smk", "EXT", "0", "0"), output[-5000:]
    # Snakemake ran in the job from the compute venv (the login venv cannot run inside jobs here).
    assert f"{compute_venv}/bin/snakemake --snakefile" in (pjm_env / "jobs" / job / "script").read_text()
    assert list(finished_jobs(dict(os.environ))) == [job]  # no other PJM job: every rule ran inside it
    steps = int(re.search(r"(\d+) of \1 steps \(100%\) done", output).group(1))

    # Every rule job Snakemake handed to the executor (all but its local rules) was started once
    # by mpiexec in this job on one slot ("(node) core=24"), on both nodes, never more than the
    # slots of a node at once (the emulator refuses overlapping mpiexec).
    events = [json.loads(line) for line in (pjm_env / "jobs" / job / "mpiexec.log").read_text().splitlines()]
    starts = [e for e in events if e["event"] == "start"]
    submitted_jobs = re.findall(r"Submitted job \d+ with external jobid '([^']+)'", output)
    local_jobs = re.findall(r"^localrule (\w+) started", output, flags=re.M)
    assert len(submitted_jobs) + len(local_jobs) == steps
    assert sorted(e["command"] for e in starts) == sorted([jobscript] for jobscript in submitted_jobs)
    assert all(len(e["ranks"]) == 1 and e["ranks"][0]["cores"] == 48 // SLOTS_PER_NODE for e in starts)
    assert {e["ranks"][0]["node"] for e in starts} == set(range(NODES))
    assert {e["status"] for e in events if e["event"] == "end"} == {0}
    launched = Counter(rule_of(e["command"][0]) for e in starts)
    assert (launched["map_reads"], launched["markdup"], launched["identify_mutations"]) == (8, 10, 4)
    assert_same_pair_results(results, request)

    # The reference: every file llio_transfer'd once, by this job, before the first rule job
    # started, and purged once after the last one ended.
    actions = defaultdict(list)
    for line in (pjm_env / "llio.log").read_text().splitlines():
        stamp, by, action, path = line.split(" ", 3)
        assert by == job, line
        actions[action].append((time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S")), path))
    expected = sorted(reference_files(str(testdata / "ref" / "genome.fa")))
    assert sorted(path for _, path in actions["transfer"]) == expected
    assert sorted(path for _, path in actions["purge"]) == expected
    assert max(t for t, _ in actions["transfer"]) <= min(e["time"] for e in starts)
    assert min(t for t, _ in actions["purge"]) >= int(max(e["time"] for e in events))
    assert not (results / "reference" / "staged.json.llio_job").exists()

    # shared_tmp was the job's $PJM_SHAREDTMP (used, then empty: Snakemake even removes the
    # emptied directory); nothing is left in any tier or LLIO area of the job (the emulator
    # keeps them here, FAKEPJM_KEEP_TMP).
    sharedtmp = pjm_env / "sharedtmp" / job
    used = re.search(rf"shared_tmp +([\d.]+ \w?i?B) +0 B +{re.escape(str(sharedtmp))}\n", output)
    assert used and used.group(1) != "0 B", output[-3000:]
    assert [p for p in (results / ".tiers").rglob("*") if p.is_file()] == []
    assert (pjm_env / "localtmp" / job).is_dir() and (pjm_env / "llio_cache" / job).is_dir()
    for area in ("localtmp", "sharedtmp", "llio_cache"):
        assert [p for p in (pjm_env / area / job).rglob("*") if p.is_file()] == [], area


def test_submit_refuses_a_job_without_shared_temporary_storage_or_config(tmp_path):
    """shared_tmp lives in $PJM_SHAREDTMP: without --llio sharedtmp-size= the job could not run."""
    submit = str(REPO / "profiles" / "pjm-allocation" / "submit")
    no_llio = subprocess.run(["bash", submit, "-L", "node=2", "--", "--configfile", "x.yaml"],
                             cwd=tmp_path, capture_output=True, text=True)
    assert no_llio.returncode == 2 and "sharedtmp-size" in no_llio.stderr and no_llio.stdout == ""
    no_config = subprocess.run(["bash", submit, "--llio", "sharedtmp-size=1Gi", "--", "-n"],
                               cwd=tmp_path, capture_output=True, text=True)
    assert no_config.returncode == 2 and "--configfile" in no_config.stderr


def test_submit_refuses_a_compute_venv_of_other_versions(pjm_env, tmp_path):
    """The job runs the compute venv (GENOMON_SMK_COMPUTE_VENV): its installed versions, read
    as files, must be the login venv's, or nothing is submitted."""
    venv = tmp_path / "other-venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    (site / "snakemake-1.0.0.dist-info").mkdir(parents=True)
    (site / "snakemake-1.0.0.dist-info" / "METADATA").write_text("Name: snakemake\nVersion: 1.0.0\n")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin").mkdir()
    (venv / "bin" / "snakemake").write_text("#!/bin/sh\n")
    refused = subprocess.run(["bash", str(REPO / "profiles" / "pjm-allocation" / "submit"), "--llio",
                              "sharedtmp-size=1Gi", "--", "--configfile", "x.yaml"],
                             cwd=tmp_path, capture_output=True, text=True,
                             env=dict(os.environ, GENOMON_SMK_COMPUTE_VENV=str(venv)))
    assert refused.returncode == 1 and refused.stdout == "", refused.stderr
    assert f"the compute venv {venv} does not match" in refused.stderr
    assert "snakemake is 9." in refused.stderr and "but 1.0.0 in the compute venv" in refused.stderr
    assert f"genomon-smk {metadata.version('genomon-smk')} is not installed in the compute venv" in refused.stderr
    assert not (pjm_env / "jobs").exists() or not list((pjm_env / "jobs").iterdir())


def test_step_adapters_place_report_and_cancel_rule_jobs(pjm_env, tmp_path):
    """mpiexec-step inside a PJM job of one node with two slots: two jobscripts run at once on
    the two slots, a failing one is reported with its node and exit code, a third submitted while
    both are held waits for a free slot, and mpiexec-step-cancel stops a running one. The first two hold their slots until the
    job script releases them, so the order is enforced, not timed (a loaded machine may take
    seconds to start a step)."""
    adapters = REPO / "profiles" / "pjm-allocation"
    hold = "touch $(basename $0).started; until [ -e release ]; do sleep 0.1; done"
    for name, body in ((("ok.sh", f"{hold}; echo fine"), ("fail.sh", f"{hold}; echo broken >&2; exit 3"),
                        ("third.sh", "touch third.ran"),
                        ("slow.sh", "touch slow.started; sleep 60; touch slow.finished"))):
        (tmp_path / name).write_text(f"#!/bin/sh\n{body}\n")
        (tmp_path / name).chmod(0o755)
    (tmp_path / "job.sh").write_text(f"""#!/bin/bash
set -u
export GENOMON_SMK_SLOTS_PER_NODE=2 GENOMON_SMK_SLOT_DIR="$PWD/slots"
wait_for() {{ until [ -e "$1" ]; do sleep 0.1; done; }}
status() {{ {REPO}/profiles/step-status "$1" 2>>status.err; }}
ok=$({adapters}/mpiexec-step ok.sh) fail=$({adapters}/mpiexec-step fail.sh)
# The steps race for slots: the third is submitted once the first two hold theirs.
wait_for ok.sh.started; wait_for fail.sh.started
third=$({adapters}/mpiexec-step third.sh)
echo "running: $(status "$ok") $(status "$third")" >>report
sleep 1
[ -e third.ran ] && echo "third ran while both slots were held" >>report
touch release
wait_for "$ok.rc"; wait_for "$fail.rc"; wait_for "$third.rc"
echo "done: $(status "$ok") $(status "$fail") $(status "$third")" >>report
slow=$({adapters}/mpiexec-step slow.sh)
wait_for slow.started
{adapters}/mpiexec-step-cancel "$slow"
sleep 2
echo "cancelled: $(status "$slow") $(cat "$slow.slot")" >>report
""")
    submitted = subprocess.run(["pjsub", "-z", "jid", "-X", "-L", "node=1,elapse=2:00", "--mpi", "max-proc-per-node=2",
                                "job.sh"], cwd=tmp_path, capture_output=True, text=True, check=True)
    job = submitted.stdout.strip()
    assert wait_until_finished(job, timeout=100)[1:] == ("EXT", "0", "0")
    assert (tmp_path / "report").read_text().splitlines() == [
        "running: running running", "done: success failed success", "cancelled: running node 0, slot 0"]
    assert re.search(rf"rule job failed in the PJM job {job} \(node 0, slot \d, exit 3\): broken",
                     (tmp_path / "status.err").read_text())
    assert (tmp_path / "ok.sh.out").read_text() == "fine\n"
    assert not (tmp_path / "slow.finished").exists()
    events = [json.loads(line) for line in (pjm_env / "jobs" / job / "mpiexec.log").read_text().splitlines()]
    first_two = [e["time"] for e in events if e["event"] == "start"][:2]
    third_start = [e["time"] for e in events if e["event"] == "start"][2]
    first_end = min(e["time"] for e in events if e["event"] == "end")
    assert third_start >= first_end > max(first_two)  # the third waited for a slot
