"""Node-hours charged per rule beside the timeline (genomon_smk.plan.accounting): parsers of captured
scheduler text (the PJM emulator's pjsub -S statistics and pjstat -H -v, Fugaku's layout; sacct
--parsable2 as Slurm prints it), the per-rule table, and a scheduler without accounting."""

import subprocess

import pytest

from genomon_smk.plan import accounting

# Captured from .test/pjm (pjsub -S -N smk-map_reads ...; the .stats files of two jobs, concatenated
# as pjstat -S prints several jobs), trimmed of nothing.
PJM_STATS = """Job Statistical Information
 JOB ID                          : 2
 JOB NAME                        : smk-identify_mutations
 JOB TYPE                        : BATCH
 JOB MODEL                       : NM
 RETRY NUM                       : 0
 SUB JOB NUM                     : -
 USER                            : root
 GROUP                           : root
 RESOURCE UNIT                   : fakepjm
 RESOURCE GROUP                  : small
 ACCEPT DATE                     : 2026/11/27 21:19:31
 JOB START DATE                  : 2026/11/27 21:19:31
 JOB END DATE                    : 2026/11/27 21:19:33
 LAST STATE                      : RNO
 STATE                           : EXT
 REASON                          : -
 PJM CODE                        : 0
 EXIT CODE                       : 0
 SIGNAL NO                       : -
 ELAPSE TIME LIMIT               : 01:00:00 (3600)
 ELAPSE TIME (USE)               : 00:00:02 (2)
 NODE NUM (REQUIRE)              : 1
 NODE NUM (USE)                  : 1
 LLIO LOCALTMP MAX USE (BYTE)    : 0
 LLIO SHAREDTMP MAX USE (BYTE)   : 0
 MPI                             : -
Job Statistical Information
 JOB ID                          : 1
 JOB NAME                        : smk-map_reads
 JOB TYPE                        : BATCH
 JOB MODEL                       : NM
 RETRY NUM                       : 0
 SUB JOB NUM                     : -
 USER                            : root
 GROUP                           : root
 RESOURCE UNIT                   : fakepjm
 RESOURCE GROUP                  : small
 ACCEPT DATE                     : 2026/11/27 21:19:30
 JOB START DATE                  : 2026/11/27 21:19:30
 JOB END DATE                    : 2026/11/27 21:29:30
 LAST STATE                      : RNO
 STATE                           : EXT
 REASON                          : -
 PJM CODE                        : 0
 EXIT CODE                       : 0
 SIGNAL NO                       : -
 ELAPSE TIME LIMIT               : 00:15:00 (900)
 ELAPSE TIME (USE)               : 00:10:00 (600)
 NODE NUM (REQUIRE)              : 2
 NODE NUM (USE)                  : 2
 LLIO LOCALTMP MAX USE (BYTE)    : 0
 LLIO SHAREDTMP MAX USE (BYTE)   : 0
 MPI                             : -
"""

# Captured from .test/pjm's pjstat -H -v (job 3 still queued: no elapsed time yet).
PJSTAT_HISTORY = """\
JOB_ID  JOB_NAME                MD  ST   USER  GROUP  START_DATE      ELAPSE_TIM  ELAPSE_LIM  NODE_REQUIRE  VNODE  CORE  V_MEM  V_POL  E_POL  RANK  LST  EC  PC  SN  PRI  ACCEPT          RSC_GRP  REASON
1       smk-map_reads           NM  EXT  root  root   11/27 21:19:30  0000:30:00  0000:05:00  1             -      -     -      -      -      -     RNO  0   0   -   127  11/27 21:19:30  small    -
2       smk-identify_mutations  NM  EXT  root  root   11/27 21:19:31  0001:00:00  0001:00:00  4             -      -     -      -      -      -     RNO  0   0   -   127  11/27 21:19:31  small    -
3       smk-markdup             NM  CCL  root  root   -               -           0001:00:00  1             -      -     -      -      -      -     QUE  -   1   -   127  11/27 21:19:32  small    -
"""

# sacct --allocations --parsable2 --format=JobIDRaw,JobName,Comment,State,ElapsedRaw,NNodes,AllocCPUS
# as Slurm 22.05 prints it (the plugin names a run's jobs by its run id and comments each with its
# rule); a step line, as without --allocations, is left out.
SACCT = """\
JobIDRaw|JobName|Comment|State|ElapsedRaw|NNodes|AllocCPUS
101|3f2a9c1e-run|rule_map_reads_wildcards_chunk=0001,sample=tumor|COMPLETED|1800|1|2
101.batch|batch||COMPLETED|1800|1|2
102|3f2a9c1e-run|rule_map_reads_wildcards_chunk=0002,sample=tumor|COMPLETED|3600|1|2
103|3f2a9c1e-run|rule_map_bundle|CANCELLED by 0|360|2|8
104|3f2a9c1e-run||PENDING|0|1|1
"""


def test_pjm_statistics_give_each_jobs_rule_seconds_and_nodes():
    charges = accounting.parse_pjm_statistics(PJM_STATS)
    assert [(c.job_id, c.rule, c.seconds, c.nodes, c.state) for c in charges] == [
        ("2", "identify_mutations", 2.0, 1, "EXT"), ("1", "map_reads", 600.0, 2, "EXT")]
    assert charges[1].node_hours == pytest.approx(2 * 600 / 3600)


def test_pjstat_history_columns_are_cut_where_the_header_names_start():
    charges = accounting.parse_pjstat_history(PJSTAT_HISTORY)
    assert [(c.job_id, c.rule, c.seconds, c.nodes) for c in charges] == [
        ("1", "map_reads", 1800.0, 1), ("2", "identify_mutations", 3600.0, 4)]
    assert accounting.parse_pjstat_history("no jobs\n") == []


def test_sacct_gives_allocations_by_rule_and_leaves_out_steps():
    charges = accounting.parse_sacct(SACCT)
    assert [(c.job_id, c.rule, c.seconds, c.nodes, c.cpus, c.state) for c in charges] == [
        ("101", "map_reads", 1800.0, 1, 2, "COMPLETED"), ("102", "map_reads", 3600.0, 1, 2, "COMPLETED"),
        ("103", "map_bundle", 360.0, 2, 8, "CANCELLED"), ("104", "?", 0.0, 1, 1, "PENDING")]


@pytest.mark.parametrize("text, seconds", [
    ("00:10:00 (600)", 600.0), ("0001:00:05", 3605.0), ("1-02:00:00", 93600.0), ("05:30", 330.0),
    ("42", 42.0), ("-", None), ("", None)])
def test_clock_seconds(text, seconds):
    assert accounting.clock_seconds(text) == seconds


def test_by_rule_puts_the_charges_beside_the_timeline():
    timeline = [
        {"rule": "map_reads", "seconds": "1800", "threads": "2"},
        {"rule": "map_reads", "seconds": "1800", "threads": "2"},
        {"rule": "merge_bam", "seconds": "360", "threads": "1"},
    ]
    figures = {f.rule: f for f in accounting.by_rule(timeline, accounting.parse_sacct(SACCT))}
    assert figures["map_reads"].timeline_jobs == 2 and figures["map_reads"].core_hours == pytest.approx(2.0)
    assert figures["map_reads"].charged_jobs == 2 and figures["map_reads"].node_hours == pytest.approx(1.5)
    assert figures["map_reads"].cpu_hours == pytest.approx(3.0)
    assert figures["merge_bam"].charged_jobs == 0 and figures["merge_bam"].cpu_hours is None
    assert figures["map_bundle"].node_hours == pytest.approx(0.2)
    table = accounting.format_table(list(figures.values()))
    total = table.splitlines()[-1].split()
    assert total[0] == "total" and float(total[4]) == pytest.approx(1.7)


def test_the_command_line_reads_captured_files(tmp_path, capsys):
    stats, timeline, out = tmp_path / "all.stats", tmp_path / "timeline.jobs.tsv", tmp_path / "charged.tsv"
    stats.write_text(PJM_STATS)
    timeline.write_text("rule\tname\tstage\tstart\tend\tseconds\tthreads\tlines\n"
                        "map_reads\ttumor/0001\tmap\t0\t600\t600.000\t12\t0\n")
    assert accounting.main(["--timeline", str(timeline), "--pjm-stats", str(stats), "--out", str(out)]) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0] == list(accounting.COLUMNS)
    assert rows[1] == ["map_reads", "1", "2.0000", "1", "0.3333", "-"]
    assert "map_reads" in capsys.readouterr().out


def test_a_slurm_without_accounting_is_said_and_the_timeline_stands_alone(monkeypatch, capsys, tmp_path):
    def no_accounting(command, **_):
        return subprocess.CompletedProcess(command, 1, "", "sacct: error: Slurm accounting storage is disabled\n")

    monkeypatch.setattr(accounting.subprocess, "run", no_accounting)
    charges, note = accounting.query("slurm", "run-1")
    assert charges == [] and "accounting storage is disabled" in note and "no accounting" in note
    timeline = tmp_path / "timeline.jobs.tsv"
    timeline.write_text("rule\tname\tstage\tstart\tend\tseconds\tthreads\tlines\nmerge_bam\ttumor\tmerge bam\t0\t36\t36\t1\t0\n")
    assert accounting.main(["--timeline", str(timeline), "--query", "slurm"]) == 0
    captured = capsys.readouterr()
    assert "no accounting on this cluster" in captured.err and "merge_bam" in captured.out
    assert accounting.sacct_command("run-1")[-2:] == ["--name", "run-1"]
