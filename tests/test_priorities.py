"""Stage priorities reorder jobs: a sample's markdup overtakes another pair's map jobs that are
already waiting (the Fugaku paper's low-priority map queue), and flipping the priorities undoes it.

Two small runs on one core (local executor, --cores 1: one job at a time, so the log's order is
the start order), two samples from two pairs, up to their final BAMs (no mutation calling).
"""

import re

import pytest

from conftest import run_snakemake, write_config

# One sample of each of two pairs; two chunks and two regions keep each run to 16 short jobs.
SAMPLES = ("normal", "pon1")
PAIRS = "tumor\tnormal\tpanel\ntumor\tnormal\t\npon1\tpon2\t\n"
SMALL = dict(
    control_panels={},
    split={"chunks": 2},
    regions={"max_length": 1_000_000, "pack_bp": 1_000_000},  # all contigs in one region + unmapped
    map={"threads": 1},
    markdup={"threads": 1},
)
# map_reads' inputs other than its sample's split: ready once these have finished.
SHARED_INPUTS = ("stage_reference", "region_table")


def job_events(log: str) -> list[tuple]:
    """('start', jobid, rule, wildcards) and ('finish', jobid, rule) in log order."""
    events = []
    pattern = re.compile(
        r"^(?:local)?rule (?P<rule>\w+):\n(?P<body>(?:    .*\n)+)|^Finished jobid: (?P<done>\d+) \(Rule: (?P<drule>\w+)\)",
        flags=re.M,
    )
    for match in pattern.finditer(log):
        if match.group("rule"):
            body = match.group("body")
            jobid = int(re.search(r"^    jobid: (\d+)$", body, flags=re.M).group(1))
            found = re.search(r"^    wildcards: (.*)$", body, flags=re.M)
            wildcards = dict(item.split("=", 1) for item in found.group(1).split(", ")) if found else {}
            events.append(("start", jobid, match.group("rule"), wildcards))
        else:
            events.append(("finish", int(match.group("done")), match.group("drule")))
    return events


def overtakes(events: list[tuple]) -> list[tuple[str, str]]:
    """(markdup job, map job) pairs where a markdup of one sample started while a map job of
    another sample was ready (its sample's split and the shared inputs finished) but not started."""
    finished_rules: dict[str, int] = {}
    finished_splits: set[str] = set()
    started_maps: set[tuple[str, str]] = set()
    maps = {(e[3]["sample"], e[3]["chunk"]) for e in events if e[0] == "start" and e[2] == "map_reads"}
    rule_of = {e[1]: (e[2], e[3]) for e in events if e[0] == "start"}
    found = []
    for event in events:
        if event[0] == "finish":
            rule, wildcards = rule_of[event[1]]
            finished_rules[rule] = finished_rules.get(rule, 0) + 1
            if rule == "split_fastq":
                finished_splits.add(wildcards["sample"])
            continue
        _, _, rule, wildcards = event
        if rule == "map_reads":
            started_maps.add((wildcards["sample"], wildcards["chunk"]))
        elif rule == "markdup" and all(finished_rules.get(name) for name in SHARED_INPUTS):
            found += [
                (f"markdup {wildcards['sample']}/{wildcards['region']}", f"map_reads {sample}/{chunk}")
                for sample, chunk in sorted(maps - started_maps)
                if sample != wildcards["sample"] and sample in finished_splits
            ]
    return found


def run_two_samples(tmp_path, testdata, name, priorities=None):
    """Run the two samples up to their final BAMs on one core; return the job events."""
    directory = tmp_path / name
    directory.mkdir()
    (directory / "pairs.tsv").write_text(PAIRS)
    overrides = dict(SMALL, pairs=str(directory / "pairs.tsv"))
    if priorities:
        overrides["priorities"] = priorities
    config = write_config(directory, testdata, **overrides)
    targets = [str(directory / "results" / "bam" / s / f"{s}.markdup.bam") for s in SAMPLES]
    result = run_snakemake(config, "--cores", "1", "-p", *targets)  # the last --cores wins; -p: job blocks
    events = job_events(result.stdout + result.stderr)
    assert sum(1 for e in events if e[0] == "start" and e[2] == "map_reads") == 2 * SMALL["split"]["chunks"]
    assert sum(1 for e in events if e[0] == "start" and e[2] == "markdup") == 2 * 2
    return events


@pytest.mark.workflow
@pytest.mark.timeout(300)
def test_markdup_overtakes_ready_map_jobs_of_another_pair_and_flipped_priorities_undo_it(tmp_path, testdata):
    default = overtakes(run_two_samples(tmp_path, testdata, "default"))
    assert default, "no markdup job started before an already-ready map job of the other sample"
    # Map jobs above everything else: every map job starts before any markdup.
    flipped = overtakes(run_two_samples(
        tmp_path, testdata, "flipped",
        priorities={"map_reads": 50, "split_fastq": 60, "gather_map": 0, "markdup": 0, "merge_bam": 0},
    ))
    assert flipped == [], flipped


def test_overtakes_reads_the_order_of_a_log():
    """The log reader on a hand-made log: markdup of A after B's split, before B's map."""
    log = "".join([
        "localrule stage_reference:\n    jobid: 1\n", "Finished jobid: 1 (Rule: stage_reference)\n",
        "localrule region_table:\n    jobid: 2\n", "Finished jobid: 2 (Rule: region_table)\n",
        *(f"localrule split_fastq:\n    jobid: {i}\n    wildcards: sample={s}\n"
          f"Finished jobid: {i} (Rule: split_fastq)\n" for i, s in ((3, "A"), (4, "B"))),
        "localrule map_reads:\n    jobid: 5\n    wildcards: sample=A, chunk=0000\n", "Finished jobid: 5 (Rule: map_reads)\n",
        "localrule markdup:\n    jobid: 6\n    wildcards: sample=A, region=r0000\n", "Finished jobid: 6 (Rule: markdup)\n",
        "localrule map_reads:\n    jobid: 7\n    wildcards: sample=B, chunk=0000\n", "Finished jobid: 7 (Rule: map_reads)\n",
    ])
    events = job_events(log)
    assert overtakes(events) == [("markdup A/r0000", "map_reads B/0000")]
    # B's map before A's markdup: no overtaking.
    swapped = events[:10] + [events[12], events[13], events[10], events[11]]
    assert overtakes(swapped) == []


@pytest.mark.workflow
@pytest.mark.timeout(180)
def test_staggered_pair_waits_without_holding_the_core(tmp_path, testdata):
    """stagger_minutes 0.1: the second pair's split waits 6 s; on one core the first pair's split
    runs during the wait, so the timer holds no core."""
    directory = tmp_path / "stagger"
    directory.mkdir()
    (directory / "pairs.tsv").write_text(PAIRS)
    config = write_config(directory, testdata, **dict(SMALL, pairs=str(directory / "pairs.tsv"), stagger_minutes=0.1))
    results = directory / "results"
    targets = [str(results / "qc" / s / f"{s}.fastq_counts.json") for s in SAMPLES]
    result = run_snakemake(config, "--cores", "1", "-p", *targets)
    events = job_events(result.stdout + result.stderr)
    starts = [(e[2], e[3].get("sample")) for e in events if e[0] == "start"]
    assert starts.count(("stagger_start", "pon1")) == 1 and ("stagger_start", "normal") not in starts
    # Where each job starts and finishes in the log.
    start = {(e[2], e[3].get("sample")): events.index(e) for e in events if e[0] == "start"}
    jobid = {(e[2], e[3].get("sample")): e[1] for e in events if e[0] == "start"}
    finish = {key: events.index(("finish", jobid[key], key[0])) for key in jobid}
    timer, first, second = ("stagger_start", "pon1"), ("split_fastq", "normal"), ("split_fastq", "pon1")
    # On one core, two jobs that each held it could not overlap: the timer and the first pair's split do.
    assert start[timer] < finish[first] and start[first] < finish[timer], events
    assert finish[timer] < start[second]
    waited = float((results / "benchmarks" / "stagger_start" / "pon1.tsv").read_text().splitlines()[1].split("\t")[0])
    assert waited >= 6
