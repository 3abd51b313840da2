"""What the console shows: one line per job, and the summary a run and a dry run end with
(genomon_smk.runtime.console, workflow/rules/console.smk)."""

import json
import re
import subprocess

import pytest

from conftest import REPO, SNAKEMAKE, run_snakemake, write_config
from genomon_smk.runtime.console import PairFiles, PlanWarning, failure_summary, replaced_input_note, summary

HEADER = "Chr\tStart\tEnd\tRef\tAlt\n"


def result_file(path, calls, meta="#meta\n"):
    path.write_text(meta + HEADER + "".join(f"chr1\t{i}\t{i}\tA\tC\n" for i in range(1, calls + 1)))
    return str(path)


def test_summary_counts_kept_and_removed_calls_and_names_an_empty_pair_that_was_warned_about(tmp_path):
    out = tmp_path / "out"
    (out / "m").mkdir(parents=True)
    pairs = [
        PairFiles("t1", result_file(out / "m" / "t1.txt", 7), result_file(out / "m" / "t1.filt.txt", 3)),
        PairFiles("t2", result_file(out / "m" / "t2.txt", 5), result_file(out / "m" / "t2.filt.txt", 0)),
        PairFiles("t3", str(out / "m" / "missing.txt"), str(out / "m" / "missing.filt.txt")),
    ]
    warnings = [PlanWarning("warning: pair t2: panel too small\nsecond line", frozenset(["t2"])),
                PlanWarning("warning: something else")]
    (out / "qc").mkdir()
    (out / "qc" / "multiqc_report.html").write_text("")
    places = {"MultiQC": str(out / "qc" / "multiqc_report.html"), "report": "a command",
              "paplot": str(out / "paplot" / "index.html")}  # not made by this run: not listed
    text = summary(str(out), pairs, places, warnings, dry_run=False).splitlines()
    assert text[0] == f"genomon-smk: the results are in {out}"
    rows = {line.split()[0]: line.split()[1:] for line in text[2:4]}
    assert rows == {"t1": ["3", "4", "-", "m/t1.filt.txt"], "t2": ["0", "5", "-", "m/t2.filt.txt"]}
    # A pair this run did not reach is counted, not listed; Snakemake's report would need its files.
    assert text[4] == "  1 other pair(s) without a result yet (not among this run's targets): t3"
    assert "  MultiQC: qc/multiqc_report.html" in text and not any("report: " in line for line in text)
    complete = summary(str(out), pairs[:2], places, [], dry_run=False).splitlines()
    assert "  report:  a command" in complete and not any("other pair" in line for line in complete)
    assert not any("paplot" in line for line in text)
    assert text.index("genomon-smk: 2 warning(s) of the plan, repeated:") < text.index("  second line")
    assert text[-1] == "  t2: no call kept by the final filter, as a warning above foresaw"


def test_a_dry_run_summary_says_where_the_results_will_be_and_repeats_the_warnings(tmp_path):
    text = summary("/o", [PairFiles("t", "/o/t.txt", "/o/t.filt.txt", "/o/sv.filt.txt")], {},
                   [PlanWarning("warning: w", frozenset(["t"]))], dry_run=True)
    assert text.splitlines() == [
        "genomon-smk: the results will be written to /o",
        "  1 pair(s): mutation/<tumor>/<tumor>.genomon_mutation.result.filt.txt, "
        "sv/<tumor>/<tumor>.genomonSV.result.filt.txt",
        "genomon-smk: 1 warning(s) of the plan, repeated:",
        "  warning: w",
    ]


@pytest.mark.workflow
def test_a_dry_run_shows_the_plan_and_job_stats_once_and_ends_with_the_summary_and_warnings(tmp_path, testdata):
    """No block per job (-p brings them back); the small-panel warning, printed with the plan,
    is repeated after Snakemake's last line."""
    config = write_config(tmp_path, testdata, output_dir=str(tmp_path / "out"), mutation_util={
        "pair_params": "--fish_pval 1.0 --realign_pval 1.0 --eb_pval 4.0 --tcount 4 --ncount 2"})
    output = run_snakemake(config, "-n").stdout  # Snakemake's (and so the summary's) stream in a dry run
    assert output.count("Job stats:") == 1 and not re.search(r"^\s+(input|output|jobid):", output, flags=re.M)
    assert "Would remove temporary output" not in output  # one line per temporary: thousands in a cohort
    tail = output[output.index("This was a dry-run"):]
    assert f"genomon-smk: the results will be written to {tmp_path / 'out'}" in tail
    assert "warning(s) of the plan, repeated:" in tail and "below --eb_pval 4" in tail
    verbose = run_snakemake(config, "-n", "-p").stdout
    assert re.search(r"^    jobid: \d+$", verbose, flags=re.M) and "Would remove temporary output" in verbose


@pytest.mark.workflow
def test_a_run_shows_one_line_per_job(tmp_path, testdata):
    config = write_config(tmp_path, testdata, output_dir=str(tmp_path / "out"))
    output = run_snakemake(config, str(tmp_path / "out" / "regions.tsv")).stderr
    assert re.search(r"^localrule region_table started, jobid \d+$", output, flags=re.M)
    assert re.search(r"^\[.+\] Finished jobid: \d+ \(Rule: region_table\)$", output, flags=re.M)
    assert not re.search(r"^\s+(input|output|jobid):", output, flags=re.M)
    assert "Select jobs to execute" not in output and "Execute 1 jobs" not in output


def test_a_failed_run_ends_with_each_failed_job_and_its_logs_and_how_to_go_on(tmp_path):
    out = str(tmp_path / "results")
    text = failure_summary(
        out,
        {"map_reads #7": [f"{out}/logs/map_reads/T1/0003.log"], "markdup #9": []},
        {"job logs": f"{out}/logs"},
    )
    lines = text.splitlines()
    assert lines[0] == "genomon-smk: the run failed: 2 job(s) failed"
    assert lines[1] == "  map_reads #7: logs/map_reads/T1/0003.log"
    assert lines[2] == "  markdup #9: no log"
    assert "run the same command again" in lines[3]
    assert lines[-1] == "  job logs: logs"


def test_an_empty_pmsignature_result_is_named_at_the_end_of_the_run(tmp_path):
    out = tmp_path / "out"
    (out / "pmsignature" / "c").mkdir(parents=True)
    empty = out / "pmsignature" / "c" / "pmsignature.ind.result.2.json"
    empty.write_text('{"id":[],"ref":[],"alt":[],"strand":[],"mutation":[]}')
    fitted = out / "pmsignature" / "c" / "pmsignature.ind.result.3.json"
    fitted.write_text('{"id":["t1"],"ref":[],"alt":[],"strand":[],"mutation":[]}')
    paths = (str(empty), str(fitted), str(out / "pmsignature" / "c" / "missing.json"))
    text = summary(str(out), [], {}, [], dry_run=False, signatures=paths).splitlines()
    assert text[-2:] == ["genomon-smk: 1 pmsignature result(s) empty, too few mutations for their K (the job logs"
                         " say how many were left):", "  pmsignature/c/pmsignature.ind.result.2.json"]
    assert "result(s) empty" not in summary(str(out), [], {}, [], dry_run=True, signatures=paths)


FLAGSTAT = ("{total} + 0 in total (QC-passed reads + QC-failed reads)\n{total} + 0 primary\n0 + 0 secondary\n"
            "{mapped} + 0 mapped ({share} : N/A)\n{mapped} + 0 primary mapped ({share} : N/A)\n"
            "{total} + 0 paired in sequencing\n")


def test_a_sample_whose_reads_mostly_did_not_map_is_named_at_the_end_of_the_run(tmp_path):
    """A sample of another genome or build (or the wrong files) runs through every stage and looks
    like a clean sample: the closing lines name it with its share of reads mapped."""
    out = tmp_path / "results"
    flagstats = {}
    for sample, total, mapped in (("PT-001_T", 10000, 9950), ("PT-002_T", 10000, 812), ("PT-002_N", 0, 0)):
        flagstats[sample] = str(out / "qc" / sample / f"{sample}.flagstat.txt")
        (out / "qc" / sample).mkdir(parents=True)
        share = f"{100 * mapped / total:.2f}%" if total else "N/A"
        (out / "qc" / sample / f"{sample}.flagstat.txt").write_text(FLAGSTAT.format(total=total, mapped=mapped, share=share))
    flagstats["not_yet"] = str(out / "qc" / "not_yet" / "not_yet.flagstat.txt")  # QC not run: nothing said
    text = summary(str(out), [], {}, [], dry_run=False, flagstats=flagstats).splitlines()
    assert text[-2:] == ["genomon-smk: 1 sample(s) with under 80% of their reads mapped (reads of another genome or "
                         "build, or the wrong files?):",
                         "  PT-002_T: 8.1% mapped (qc/PT-002_T/PT-002_T.flagstat.txt)"], text
    assert "mapped" not in summary(str(out), [], {}, [], dry_run=True, flagstats=flagstats)


def test_the_replaced_input_note_counters_snakemakes_mtime_hint():
    assert replaced_input_note([], dry_run=False) == []
    lines = replaced_input_note(["t1", "n1", "t1"], dry_run=True)
    assert lines[0] == ("genomon-smk: 2 sample(s) will rerun from their first step because their input files were "
                        "replaced: n1, t1.")
    assert "'--rerun-triggers mtime', would turn off the check" in lines[1] and "--cleanup-metadata" in lines[3]
    assert replaced_input_note(["t1"], dry_run=False)[0].startswith("genomon-smk: 1 sample(s) reran")


@pytest.mark.workflow
def test_a_logger_plugin_beside_ours_sees_every_job_and_the_log_file_keeps_snakemakes_blocks(tmp_path, testdata):
    """`--logger genomon snakesee` (a monitoring plugin from PyPI that writes its events to a
    file): the console shows our line per job, the snakesee plugin gets every job's events, and
    Snakemake's log file has its full block per job (rule, output, jobid, reason)."""
    config = write_config(tmp_path, testdata, output_dir=str(tmp_path / "out"))
    ran = subprocess.run(
        [SNAKEMAKE, "--snakefile", str(REPO / "workflow" / "Snakefile"), "--profile", str(REPO / "profiles" / "local"),
         "--configfile", str(config), "--cores", "2", str(tmp_path / "out" / "regions.tsv"),
         "--logger", "genomon", "snakesee"],
        cwd=tmp_path, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-3000:]
    started = re.findall(r"^localrule (\w+) started.*, jobid (\d+)$", ran.stderr, flags=re.M)
    assert started and ("region_table" in dict(started))
    assert not re.search(r"^\s+(input|output|jobid):", ran.stderr, flags=re.M)
    events = [json.loads(line) for line in (tmp_path / ".snakesee_events.jsonl").read_text().splitlines()]
    for kind in ("job_submitted", "job_finished"):
        assert sorted((e["rule_name"], str(e["job_id"])) for e in events if e["event_type"] == kind) == sorted(started)
    (log,) = (tmp_path / ".snakemake" / "log").glob("*.snakemake.log")
    text = log.read_text()
    for rule, jobid in started:
        block = text[text.index(f"localrule {rule}:"):]
        assert re.search(rf"^    jobid: {jobid}$", block, flags=re.M) and "    output: " in block and "    reason: " in block
    assert "genomon-smk: the results are in" in ran.stderr.split("Complete log(s)")[-1]
