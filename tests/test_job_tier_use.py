"""Jobs report their own work-directory peak (job-work-dir.sh); the run sums the reports."""

import os
import subprocess
import sys

from genomon_smk.runtime.job_tier_use import MARKER, collect, records_in_log, table, write_tsv

from conftest import REPO

SCRIPT = REPO / "workflow" / "scripts" / "job-work-dir.sh"
JOB_SHELL = REPO / "workflow" / "scripts" / "job-shell.sh"


def run_job(body, work, log, check=True, monitor="1"):
    """A job's shell as Snakemake runs it (bash strict mode and job-shell.sh, the workflow's shell
    prefix) that sources the script, then runs body; `monitor` is the storage.monitor the
    workflow exports (GENOMON_SMK_STORAGE_MONITOR)."""
    prefix = f'set -euo pipefail; source "{JOB_SHELL}" "{sys.executable}"'
    return subprocess.run(
        ["bash", "-c", f'{prefix}; source "{SCRIPT}" "{work}" node_local "{log}"; {body}'],
        capture_output=True, text=True, check=check, timeout=60,
        env={**os.environ, "GENOMON_SMK_STORAGE_MONITOR": monitor},
    )


def test_the_job_gets_an_empty_work_dir_and_its_peak_is_logged_after_the_files_are_gone(tmp_path):
    work, log = tmp_path / "tier" / "map.abc.0001", tmp_path / "job.log"
    work.mkdir(parents=True)
    (work / "stale.sam").write_bytes(b"s" * 999)  # left by a killed attempt
    # 300 kB written, sampled (the sampler runs every 2 s), then deleted before the job ends.
    run_job('test ! -e "$work/stale.sam"; head -c 300000 /dev/zero >"$work/big"; sleep 2.5; rm "$work/big"', work, log)
    assert not work.exists() and not (tmp_path / "tier" / "map.abc.0001.sizes").exists()
    [(tier, peak)] = records_in_log(log.read_text())
    assert tier == "node_local" and 300000 <= peak < 400000


def test_a_failing_job_still_reports_and_cleans_up_and_keeps_its_exit_status(tmp_path):
    work, log = tmp_path / "w", tmp_path / "job.log"
    result = run_job('head -c 5000 /dev/zero >"$work/x"; exit 7', work, log, check=False)
    assert result.returncode == 7
    assert not work.exists()
    [(tier, peak)] = records_in_log(log.read_text())
    assert tier == "node_local" and peak >= 5000


def test_without_the_monitor_a_job_runs_no_du_and_reports_nothing(tmp_path):
    """storage.monitor off (clusters): the work directory is still made and removed, nothing is
    sampled (no sampler process, no .sizes file) and the log gets no tier-use line."""
    work, log = tmp_path / "w", tmp_path / "job.log"
    run_job('head -c 5000 /dev/zero >"$work/x"; test -z "$work_sampler"; test ! -e "$work.sizes"',
            work, log, monitor="0")
    assert not work.exists() and not (tmp_path / "w.sizes").exists()
    assert records_in_log(log.read_text() if log.exists() else "") == []
    assert "not measured" in table([], measured=False)


def test_collect_sums_per_rule_and_tier_from_the_last_record_of_each_log(tmp_path):
    logs = tmp_path / "logs"
    (logs / "map_reads" / "tumor").mkdir(parents=True)
    (logs / "markdup" / "tumor").mkdir(parents=True)
    (logs / "map_reads" / "tumor" / "0000.log").write_text(f"bwa says hi\n{MARKER}\tnode_local\t100\n")
    (logs / "map_reads" / "tumor" / "0001.log").write_text(f"{MARKER}\tnode_local\t5\n{MARKER}\tnode_local\t300\n")
    (logs / "markdup" / "tumor" / "r1.log").write_text(f"{MARKER}\tshared_tmp\t42\n")
    (logs / "markdup" / "tumor" / "r2.log").write_text("no record: killed before its trap\n")
    uses = collect(str(logs))
    assert [(u.rule, u.tier, u.jobs, u.max_peak_bytes, u.total_peak_bytes) for u in uses] == [
        ("map_reads", "node_local", 2, 300, 400),
        ("markdup", "shared_tmp", 1, 42, 42),
    ]
    write_tsv(uses, str(tmp_path / "storage" / "job_tier_use.tsv"))
    lines = (tmp_path / "storage" / "job_tier_use.tsv").read_text().splitlines()
    assert lines[0].split("\t")[0] == "rule" and lines[1].split("\t") == ["map_reads", "node_local", "2", "300", "400"]
    assert "map_reads" in table(uses)


def test_lines_that_only_look_like_records_are_ignored():
    assert records_in_log(f"{MARKER}\tnode_local\tlots\n{MARKER} node_local 5\n") == []
