"""The pair scenario through profiles/pjm (one PJM job per rule job, the executor plugin in
plugins/snakemake-executor-plugin-pjm) on the PJM emulator (.test/pjm) gives the local run's
results, with the reference llio_transfer'd by every job that reads it; a job killed by its
elapse limit and a job removed with pjdel are reported failed with their PJM codes (and recorded
in job-failures.jsonl), and a rerun completes; every status round is one `pjstat -v` (plus one
`pjstat -H -v` when jobs left the current list), however many jobs are in flight. Snakemake runs
in a project directory outside the checkout, naming the workflow and the profile by relative
paths, with no config file but the user's (the LLIO tiers come with the profile).

One Snakemake run (--keep-going, so everything that does not need the two stopped map jobs is
done meanwhile) loses one map job to its elapse limit and one to pjdel; the rerun finishes the
pipeline, so the pipeline runs through PJM about once. Both runs meet Fugaku at first contact:
the login venv cannot run inside the jobs (the emulator's foreign-architecture mode; the jobs
run the compute venv), an accept limit below --jobs (read from `pjstat --limit` and kept; in the
rerun three jobs of the user's own fill it, so pjsub refuses and the plugin submits again later),
and in the rerun a pjstat outage (hanging, then failing) longer than the grace period: every job
ends with its results, and no job is ever submitted twice while its first copy runs.
"""

import json
import os
import re
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import (LOGIN_VENV_BIN, REPO, SNAKEMAKE_MODULE, assert_same_pair_results, finish_interruptible,
                      pair_targets, restore_sigint, scenario_variant, write_config)
from genomon_smk.plan.reference import reference_files

pytestmark = [pytest.mark.pjm, pytest.mark.workflow, pytest.mark.timeout(900)]

PJM_BIN = REPO / ".test" / "pjm" / "bin"
# The emulator runs jobs on this machine (2 cores): three slots, as two of them only sleep in
# the first run; status polled every second.
TEST_MACHINE = ["--jobs", "6", "--seconds-between-status-checks", "1", "--latency-wait", "5"]


def project_directory(tmp_path):
    """A user's project directory outside the checkout, where Snakemake runs."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return project


def profile_command(project):
    """The workflow and profiles/pjm named as a user in `project` names them: by paths relative to it."""
    checkout = Path(os.path.relpath(REPO, project))
    return ["--snakefile", str(checkout / "workflow" / "Snakefile"), "--profile", str(checkout / "profiles" / "pjm")]


def pjstat_recorder(directory):
    """A `pjstat` ahead of the emulator's that logs every call (time, number of smk- jobs listed,
    arguments) to directory/pjstat.log; returns the directory."""
    directory.mkdir()
    (directory / "pjstat").write_text(
        '#!/bin/sh\n'
        f'out=$("{PJM_BIN / "pjstat"}" "$@"); rc=$?\n'
        'printf "%s\\n" "$out"\n'
        'listed=$(printf "%s\\n" "$out" | grep -c " smk-")\n'
        f'echo "$(date +%s.%N) $listed $*" >>"{directory}/pjstat.log"\n'
        'exit $rc\n'
    )
    (directory / "pjstat").chmod(0o755)
    return directory


def pjstat_rounds(log, interval=1):
    """The status rounds of a pjstat.log: one `pjstat -v` each, optionally followed by one
    `pjstat -H -v ID...`; [(jobs listed by the -v call, history call or None)]. Fails on any
    other pattern: a second call of either kind in one round, or two `pjstat -v` less than the
    round interval apart (Snakemake sleeps that long between two rounds, so calls closer than
    that belong to one round: a bound from below that load only widens)."""
    rounds = []
    last = None
    for line in log.read_text().splitlines():
        when, listed, args = line.split(" ", 2)
        if args == "--limit":  # once, at the start of a run
            continue
        if args == "-v":
            assert last is None or float(when) - last >= interval * 0.95, line
            last = float(when)
            rounds.append((int(listed), None))
        else:
            assert args.startswith("-H -v ") and rounds and rounds[-1][1] is None, line
            rounds[-1] = (rounds[-1][0], args)
    return rounds


def start_snakemake(args, project, log_path):
    """Start Snakemake in the project directory, output to log_path."""
    with open(log_path, "w") as log:
        return subprocess.Popen(
            SNAKEMAKE_MODULE + args, cwd=project, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=restore_sigint,
        )


def run_snakemake(args, project, log_path, timeout):
    """Run Snakemake in the project directory to the end; (exit code, output)."""
    return finish_interruptible(start_snakemake(args, project, log_path), log_path, timeout)


def finished_jobs(env):
    """{job id: (name, ST, EC, PC)} from `pjstat -H -v` (parsed by header name; dates are two words)."""
    lines = subprocess.run(["pjstat", "-H", "-v"], env=env, capture_output=True, text=True, check=True).stdout
    lines = [line for line in lines.splitlines() if line.strip()]
    header = lines[0].split()
    jobs = {}
    for line in lines[1:]:
        words = re.sub(r"\b(\d\d/\d\d) (\d\d:\d\d:\d\d)", r"\1_\2", line).split()
        row = dict(zip(header, words))
        jobs[row["JOB_ID"]] = (row["JOB_NAME"], row["ST"], row["EC"], row["PC"])
    return jobs


@pytest.fixture
def pjm_env(tmp_path, monkeypatch, no_slurm_probe, compute_venv):
    """The emulator on PATH, its state in tmp_path; leftover jobs are cancelled afterwards. As on
    Fugaku, the login venv cannot run inside a job (the emulator's foreign-architecture mode: an
    x86 binary on an aarch64 node); jobs run the compute venv (GENOMON_SMK_COMPUTE_VENV for
    profiles/pjm-allocation/submit, --pjm-compute-venv for profiles/pjm)."""
    home = tmp_path / "fakepjm"
    # no_slurm_probe's PATH: a PJM machine has no Slurm to probe at every Snakemake start.
    monkeypatch.setenv("PATH", f"{PJM_BIN}:{LOGIN_VENV_BIN}:{no_slurm_probe['PATH']}")
    monkeypatch.setenv("FAKEPJM_HOME", str(home))
    monkeypatch.setenv("FAKEPJM_MAX_RUNNING", "3")
    monkeypatch.setenv("FAKEPJM_FOREIGN_ARCH", str(LOGIN_VENV_BIN))
    monkeypatch.setenv("GENOMON_SMK_COMPUTE_VENV", str(compute_venv))
    yield home
    (home / "outage").unlink(missing_ok=True)
    current = subprocess.run(["pjstat"], capture_output=True, text=True).stdout.splitlines()[1:]
    leftovers = [line.split()[0] for line in current if line.strip()]
    if leftovers:
        subprocess.run(["pjdel", *leftovers], capture_output=True)


def pjm_rule(name):
    """The rule of a PJM job name: smk-RULE, or smk-GROUP_RULE for a job group of one rule
    (Snakemake names a group job GROUP_RULES; profiles/pjm names each group after its rule)."""
    name = name.removeprefix("smk-")
    half = len(name) // 2
    return name[:half] if len(name) % 2 == 1 and name[half] == "_" and name[:half] == name[half + 1:] else name


def wait_for_file(path, proc, timeout):
    """Wait until path exists (while Snakemake runs); return its text."""
    deadline = time.monotonic() + timeout
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    return path.read_text().strip() if path.exists() else None


def job_records(home):
    """{PJM job id: the emulator's record} of every job submitted."""
    return {int(path.parent.name): json.loads(path.read_text()) for path in (home / "jobs").glob("*/job.json")}


def target_of(home, job):
    """The Snakemake job a PJM job ran (its job script's --target-jobs), or None (not Snakemake's)."""
    found = re.search(r"--target-jobs\s+(\S+)", (home / "jobs" / str(job) / "script").read_text())
    return found.group(1) if found else None


def most_accepted_at_once(records):
    """The most of `records` accepted and not yet ended at one instant."""
    events = sorted([(rec["accept_time"], 1) for rec in records] + [(rec["end_time"], -1) for rec in records],
                    key=lambda event: (event[0], event[1]))
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def test_pjm_profile_runs_the_pipeline_and_reports_elapse_kill_and_pjdel(pjm_env, testdata, scenario_root,
                                                                          request, tmp_path, compute_venv,
                                                                          monkeypatch):
    project = project_directory(tmp_path)
    scenario_variant(scenario_root, "config-pair", project, map={"threads": 1}, markdup={"threads": 1})
    results = project / "results"
    command = [*profile_command(project), "--configfile", "config.yaml", *TEST_MACHINE,
               "--pjm-logdir", str(tmp_path / "pjm-logs"), "--pjm-compute-venv", str(compute_venv)]
    recorder = pjstat_recorder(tmp_path / "pjstat-recorder")
    # Fugaku's per-user limit of accepted jobs (pjstat --limit: ru-accept), below --jobs 6: the
    # plugin reads it at the start and never has more jobs accepted; pjsub refuses beyond it.
    monkeypatch.setenv("FAKEPJM_ACCEPT_LIMIT", "4")

    # 1. bwa of two map jobs sleeps first, each writing its PJM job id: tumor chunk 0000 outlives
    #    the 1-minute elapse limit of the map jobs (PJM kills it, PJM CODE 11), normal chunk 0000
    #    is removed with pjdel while it runs (CCL, PJM CODE 1). Snakemake reports both failed with
    #    their codes; --keep-going runs all the jobs that do not need them; no retry for this run.
    slow = tmp_path / "slow-bin"
    slow.mkdir()
    (slow / "bwa").write_text(
        '#!/bin/sh\n'
        f'case "$*" in *split/tumor/0000_R1.fastq*) echo "$PJM_JOBID" >"{slow}/tumor.job"; sleep 150 ;;\n'
        f'  *split/normal/0000_R1.fastq*) echo "$PJM_JOBID" >"{slow}/normal.job"; sleep 150 ;; esac\n'
        'exec /usr/bin/bwa "$@"\n'
    )
    (slow / "bwa").chmod(0o755)
    with monkeypatch.context() as patch:
        patch.setenv("PATH", f"{slow}:{recorder}:{os.environ['PATH']}")
        # One PJM job per map job here (--groups replaces the profile's packing: only the split
        # jobs are grouped); the rerun below packs the jobs onto nodes as profiles/pjm does.
        proc = start_snakemake(
            [*command, "--retries", "0", "--keep-going", "--set-resources", "map_reads:runtime=1",
             "--groups", "split_fastq=split_fastq", "--", *pair_targets(results)], project, tmp_path / "killed.out")
    removed = wait_for_file(slow / "normal.job", proc, timeout=300)
    if not removed:  # stop Snakemake (and its jobs) rather than leave it waiting
        finish_interruptible(proc, tmp_path / "killed.out", timeout=0)
    assert removed, (tmp_path / "killed.out").read_text()[-3000:]
    subprocess.run(["pjdel", removed], check=True, capture_output=True)
    rc, output = finish_interruptible(proc, tmp_path / "killed.out", timeout=400)
    assert rc != 0, output[-3000:]
    # The jobs ran the compute venv (the login venv cannot run in them), checked at the start.
    assert f"PJM: jobs run {compute_venv}/bin/python (compute venv {compute_venv}; snakemake " in output
    assert "at most 4 jobs accepted at once (ru-accept of 'pjstat --limit')" in output
    run1 = job_records(pjm_env)
    assert most_accepted_at_once(run1.values()) == 4, run1  # the limit was reached, never passed
    assert "PJM refused job" not in output
    killed = re.findall(r"PJM job (\d+) failed: elapse limit exceeded \(ST EXT, PJM CODE 11, EXIT CODE 137", output)
    assert killed == [(slow / "tumor.job").read_text().strip()], output[-5000:]
    assert re.search(rf"PJM job {removed} failed: cancelled by pjdel \(ST CCL, PJM CODE 1,", output), output[-5000:]
    jobs = finished_jobs(dict(os.environ))
    assert jobs[killed[0]] == ("smk-map_reads", "EXT", "137", "11")
    assert jobs[removed][:2] == ("smk-map_reads", "CCL") and jobs[removed][3] == "1"
    for job, chunk_log in ((killed[0], "logs/map_reads/tumor/0000.log"), (removed, "logs/map_reads/normal/0000.log")):
        errors = [block for block in output.split("Error in rule ")[1:] if f"external_jobid: {job}\n" in block]
        assert len(errors) == 1 and errors[0].startswith("map_reads:") and chunk_log in errors[0], job
    assert not (results / "mutation").exists()
    # --keep-going went on: the other map jobs of both samples ran.
    map_logs = results / "logs" / "map_reads"
    assert sorted(str(p.relative_to(map_logs)) for p in map_logs.rglob("*.log")) == [
        f"{sample}/000{chunk}.log" for sample in ("normal", "tumor") for chunk in range(4)]
    # PJM's own job output: kept for the failed jobs, in the rule's directory, named in the error;
    # gone for the jobs that succeeded.
    map_pjm_logs = tmp_path / "pjm-logs" / "map_reads"
    assert sorted(p.name for p in map_pjm_logs.iterdir()) == sorted(
        f"smk-map_reads.{job}.{ext}" for job in (killed[0], removed) for ext in ("out", "err"))
    assert f"[PJM logs: {map_pjm_logs}/smk-map_reads.{killed[0]}.out, " in output
    assert [p for p in (tmp_path / "pjm-logs").rglob("*.out") if p.parent != map_pjm_logs] == []
    # The two failures, machine-readable, for a retry policy.
    failures = [json.loads(line) for line in (tmp_path / "pjm-logs" / "job-failures.jsonl").read_text().splitlines()]
    assert sorted((f["pjm_jobid"], f["rule"], f["wildcards"].get("sample"), f["kind"], f["pc"], f["grow"])
                  for f in failures) == sorted([(killed[0], "map_reads", "tumor", "elapse", "11", "runtime"),
                                                (removed, "map_reads", "normal", "cancelled", "1", None)])
    assert all(f["logs"] and all(Path(log).exists() for log in f["logs"]) for f in failures)

    # 2. The rerun (normal limits, killed jobs' partial outputs gone) completes the pipeline,
    #    through a limit and an outage:
    #    - four jobs of the user's own fill the accept limit when it starts: its first pjsub is
    #      refused (not failed) and submitted later;
    #    - pjstat fails (first hangs, then answers with an error) for longer than the grace
    #      period of a missing job: the jobs in flight stay running, none is failed or submitted
    #      again.
    others = tmp_path / "others"
    others.mkdir()
    # They run until the rerun's pjsub was refused (released by the test), however long its start takes.
    (others / "other.sh").write_text(f'until [ -e "{others}/release" ]; do sleep 0.2; done\n')
    with monkeypatch.context() as patch:
        patch.delenv("FAKEPJM_ACCEPT_LIMIT")
        for _ in range(4):
            subprocess.run(["pjsub", "-N", "other", "other.sh"], cwd=others, check=True, capture_output=True)
    first_rerun_job = max(job_records(pjm_env)) + 1
    outage_seconds = 25
    with monkeypatch.context() as patch:
        patch.setenv("PATH", f"{recorder}:{os.environ['PATH']}")
        proc = start_snakemake([*command, "--pjm-status-grace-seconds", "5", "--pjm-status-timeout-seconds", "2",
                                "--", *pair_targets(results)], project, tmp_path / "rerun.out")
    # The user's other jobs end once PJM has refused one of the rerun's; the outage starts once
    # the rerun has jobs in flight beyond the first two map jobs.
    for wanted in (lambda out: "PJM refused job" in out,
                   lambda out: len(re.findall(r"submitted with PJM jobid", out)) >= 3):
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            if wanted((tmp_path / "rerun.out").read_text()):
                break
            time.sleep(0.5)
        (others / "release").touch()
    (pjm_env / "outage").write_text("pjstat hang\n")
    time.sleep(10)
    (pjm_env / "outage").write_text("pjstat fail\n")
    time.sleep(outage_seconds - 10)
    (pjm_env / "outage").unlink()
    rc, output = finish_interruptible(proc, tmp_path / "rerun.out", timeout=500)
    assert rc == 0, output[-5000:]
    assert_same_pair_results(results, request)
    # (a group job's id is Snakemake's uuid, its name GROUP_RULES: profiles/pjm packs map jobs)
    assert re.search(r"PJM refused job \S+ \(map_reads_map_reads\) for a limit", output), output[-5000:]
    assert "pjstat -v did not answer within 2s" in output and "pjstat -v failed (exit 1)" in output
    outage = [(int(rounds), int(seconds)) for rounds, seconds in
              re.findall(r"pjstat failed (\d+) round\(s\) in a row \((\d+)s\): \d+ job\(s\) kept as running", output)]
    # longer than the grace period of a missing job (5 s), which used to fail every job in flight
    assert any(rounds >= 3 and seconds >= 10 for rounds, seconds in outage), outage
    assert "given up" not in output and "listed by neither" not in output
    # No job ran twice: each Snakemake job of the rerun was submitted once, and no two PJM jobs of
    # one Snakemake job (both runs) were ever accepted at the same time.
    records = job_records(pjm_env)
    rerun_targets = [target_of(pjm_env, job) for job in records if job >= first_rerun_job
                     and records[job]["name"] != "other"]
    assert len(rerun_targets) == len(set(rerun_targets)) and None not in rerun_targets, rerun_targets
    by_target = defaultdict(list)
    for job, rec in records.items():
        if rec["name"] != "other":
            by_target[target_of(pjm_env, job)].append((rec["accept_time"], rec["end_time"]))
    for target, spans in by_target.items():
        spans.sort()
        assert all(earlier[1] <= later[0] for earlier, later in zip(spans, spans[1:])), (target, spans)
    assert most_accepted_at_once(records.values()) <= 4

    # pjstat: one call per status round (two when jobs left the current list), whatever the number
    # of jobs in flight: up to six here (--jobs 6, three running, the rest queued).
    rounds = pjstat_rounds(recorder / "pjstat.log")
    assert max(listed for listed, _ in rounds) >= 3, rounds
    assert sum(1 for _, history in rounds if history) >= 2, rounds

    # Every job of both runs ran under PJM; every job that reads the reference llio_transfer'd
    # each reference file in that job (and nothing was copied to a cache directory).
    jobs = finished_jobs(dict(os.environ))
    rules = {job: pjm_rule(name) for job, (name, *_) in jobs.items()}
    assert {"split_fastq", "map_reads", "markdup", "merge_bam", "identify_mutations",
            "merge_mutation"} <= set(rules.values())
    # The rerun packed a rule's jobs onto nodes (profiles/pjm's job groups, smk-RULE_RULE): the
    # pair's four mutation-region jobs and ten markdup jobs went in fewer PJM jobs than there are jobs.
    groups = [name for name, *_ in jobs.values() if name != "smk-" + pjm_rule(name)]
    assert "smk-identify_mutations_identify_mutations" in groups and "smk-markdup_markdup" in groups, jobs
    packed = list(rules.values())
    assert packed.count("identify_mutations") < 4 and packed.count("markdup") < 10, jobs
    transferred = defaultdict(set)
    for line in (pjm_env / "llio.log").read_text().splitlines():
        _, job, action, path = line.split(" ", 3)
        assert action == "transfer", line  # per-rule jobs: nothing to purge from the login node
        transferred[job].add(path)
    readers = {job for job, rule in rules.items() if rule in ("stage_reference", "map_reads", "identify_mutations")}
    assert set(transferred) == readers
    expected = set(reference_files(str(testdata / "ref" / "genome.fa")))
    assert all(paths == expected for paths in transferred.values()), transferred
    assert "not inside a PJM job: nothing to purge here" in output

    # Nothing left behind: the tiers hold no files, and every job's LLIO areas (localtmp =
    # node_local, the llio_transfer cache) ended with the job.
    assert [p for p in (results / ".tiers").rglob("*") if p.is_file()] == []
    for area in ("localtmp", "sharedtmp", "llio_cache"):
        assert [p for p in (pjm_env / area).rglob("*") if p.is_file()] == [], area


def test_the_pjm_profile_brings_its_llio_tiers_and_warns_when_they_are_lost(pjm_env, testdata, tmp_path):
    """profiles/pjm alone gives the LLIO tiers (its `cluster: pjm` puts profiles/pjm/storage.yaml
    under the config): no warning, node_local is $PJM_LOCALTMP. A --config on the command line
    replaces the profile's config entry: the plan then says loudly what is lost and how to keep it;
    with cluster=pjm repeated in it the tiers are back."""
    project = project_directory(tmp_path)
    config = write_config(project, testdata)
    warning = "WARNING: PJM jobs, but storage.reference_staging is not llio_transfer"
    outputs = []
    for extra in ([], ["--config", "stagger_minutes=0"], ["--config", "stagger_minutes=0", "cluster=pjm"]):
        dry = subprocess.run([*SNAKEMAKE_MODULE, "--snakefile", str(REPO / "workflow" / "Snakefile"),
                              "--profile", str(REPO / "profiles" / "pjm"), "--configfile", str(config), *extra,
                              "-n", "--quiet", "rules"], cwd=project, capture_output=True, text=True)
        assert dry.returncode == 0, dry.stderr[-3000:]
        outputs.append(dry.stdout + dry.stderr)
    assert "WARNING: PJM" not in outputs[0] and "WARNING: PJM" not in outputs[2]
    assert warning in outputs[1] and "add cluster=pjm to your --config" in outputs[1]
