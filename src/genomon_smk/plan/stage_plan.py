"""The stage plan: the workflow's jobs grouped into Genomon's stages, counted from the config.

A Genomon user thinks of a run as split files -> map -> markdup -> merge bam -> identify
mutations -> merge mutation, sv detection -> qc, with so many jobs of each. The rule table
(genomon_smk.plan.rules) knows which rules make up each stage and how many jobs each rule has
for a cohort of a given shape (one per sample, per sample and chunk, per pair and region, ...),
so the count of a cohort of any size follows from a few numbers, without building Snakemake's
DAG. The workflow prints the table when it is parsed (after the storage plan), and the benchmark
of cohort-scale dry runs uses the counts to predict the size of a DAG.
"""

from __future__ import annotations

import math

from genomon_smk.plan.rules import FACTS, FUGAKU_NODE, RULES, SETUP_RULES, TARGET_RULE, CohortShape, Node
from genomon_smk.plan.rules import STAGES as STAGE_NAMES

# Genomon's stages in pipeline order, each with its rules and what a rule has one job per
# (from the rule table). `run` = one job for the whole run; `qc run` = one if any sample gets QC.
STAGES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = tuple(
    (stage, tuple((rule.name, rule.per.label) for rule in RULES if rule.stage == stage)) for stage in STAGE_NAMES
)
# The tiers a rule writes on, as the config's storage.rules key and roles; rules not listed write
# to output_dir (global). stage_reference copies the reference to the cache tier; the set-up
# rules write resources_dir, on the global file system.
STORAGE_ROLES: dict[str, tuple[str, tuple[str, ...]]] = {
    rule.name: (rule.tier_key, rule.tier_roles) for rule in RULES if rule.tier_key
}


def stagger_delays(pairs: list[tuple[str, str | None]], minutes: float) -> dict[str, int]:
    """Seconds each sample's split waits after the run starts: the n-th pair's (tumor, normal)
    n x minutes (a sample in several pairs: its first); samples that wait 0 s are left out."""
    delays: dict[str, int] = {}
    for index, pair in enumerate(pairs):
        for sample in pair:
            if sample and sample not in delays:
                delays[sample] = round(index * minutes * 60)
    return {sample: seconds for sample, seconds in delays.items() if seconds > 0}


def stage_of_rule() -> dict[str, str]:
    """Every rule's stage."""
    return {rule: stage for stage, rules in STAGES for rule, _ in rules}


def rule_jobs(shape: CohortShape) -> dict[str, int]:
    """Jobs per rule of a full run (every target, nothing done yet), `all` included, as
    Snakemake's "Job stats" table of a dry run in an empty output directory counts them (rules
    without jobs left out)."""
    counts = {rule.name: jobs for rule in RULES if (jobs := rule.jobs(shape))}
    counts[TARGET_RULE] = 1
    return counts


def stage_jobs(counts: dict[str, int]) -> dict[str, int]:
    """Jobs per stage, summed over the stage's rules (rules of no stage, like `all`, left out)."""
    stages = stage_of_rule()
    totals = {stage: 0 for stage, _ in STAGES}
    for rule, count in counts.items():
        if rule in stages:
            totals[stages[rule]] += count
    return totals


def total_jobs(shape: CohortShape) -> int:
    return sum(rule_jobs(shape).values())


def rule_tiers(rule: str, storage_rules: dict) -> str:
    """Where a rule's files go, e.g. 'shared_tmp, temp node_local', from the config's
    storage.rules."""
    if rule == "stage_reference":
        return "cache"
    if rule in SETUP_RULES:
        return "global (resources_dir)"
    if rule not in STORAGE_ROLES:
        return "global"
    key, roles = STORAGE_ROLES[rule]
    return ", ".join(("temp " if role == "temp" else "") + storage_rules[key][role] for role in roles)


def threads_line(threads: dict[str, int], cores: int | None) -> str:
    """The threads of a job of each rule whose threads the config sets (`<rule>.threads`), and
    where they were chosen for: a local run's cores, or a cluster's jobs."""
    where = f"a local run on {cores} core(s)" if cores else "cluster jobs"
    return f"Threads per job ({where}): " + ", ".join(f"{rule} {count}" for rule, count in threads.items())


def stage_table(shape: CohortShape, storage_rules: dict, priorities: dict[str, int],
                threads: dict[str, int] | None = None, cores: int | None = None) -> str:
    """The stage plan as text: per stage its jobs, then per rule what it has one job per, its
    jobs, its Snakemake priority (0, Snakemake's default, where the config sets none) and the
    tiers it writes; with `threads` (rule -> a job's threads, for `cores`: a local run's, None on
    a cluster), a line of them after the table."""
    counts = rule_jobs(shape)
    per_stage = stage_jobs(counts)
    lines = [
        f"Stage plan: {shape.samples + shape.imported} samples ({shape.samples} mapped, {shape.imported} imported), "
        f"pairs: {shape.pairs} for mutation calls, {shape.sv_pairs} for SV detection; "
        f"{shape.chunks} chunks per mapped sample, "
        f"{shape.regions} regions" + (f" ({shape.mutation_regions} for mutations)" if shape.pairs else ""),
        f"  {'stage / rule':<26}{'one job per':<24}{'jobs':>8}{'priority':>10}  tiers",
    ]
    for stage, rules in STAGES:
        lines.append(f"  {stage:<50}{per_stage[stage]:>8}")
        for rule, unit in rules:
            if rule not in counts:
                continue
            lines.append(
                f"    {rule:<24}{unit:<24}{counts[rule]:>8}{priorities.get(rule, 0):>10}  "
                f"{rule_tiers(rule, storage_rules)}"
            )
    lines.append(
        f"  {'total (with rule ' + TARGET_RULE + ')':<50}{sum(counts.values()):>8}"
        "  (Snakemake's Job stats count only the jobs still to run)"
    )
    if threads:
        lines.append(threads_line({rule: count for rule, count in threads.items() if rule in counts}, cores))
    return "\n".join(lines)


# --- node-hours on whole nodes (PJM, Fugaku)

# What the rules' work is per sample or per pair, as the Fugaku paper measured it on 30x WGS
# (genomon_smk.plan.planner's genomon-smk design): a job's seconds are its share of that work in
# this cohort's cut (chunks, regions, mutation regions). Rules the paper has no figure for are
# left out of the node-hours.
def paper_work_seconds() -> dict[str, tuple[str, float]]:
    """rule -> ("sample" or "pair", seconds of the rule's work per sample or pair)."""
    from genomon_smk.plan.planner import GENOMON_SMK_SECONDS, paper_pipeline

    totals: dict[str, float] = {}
    for job in paper_pipeline(seconds=GENOMON_SMK_SECONDS):
        totals[job.rule] = totals.get(job.rule, 0.0) + job.duration
    per_pair = {"identify_mutations", "merge_mutation"}
    return {rule: ("pair", seconds) if rule in per_pair else ("sample", seconds / 2) for rule, seconds in totals.items()}


def seconds_per_job(shape: CohortShape) -> dict[str, float]:
    """A job's seconds for each rule with a paper figure and jobs in this cohort."""
    seconds = {}
    for rule, (unit, work) in paper_work_seconds().items():
        jobs = FACTS[rule].jobs(shape)
        units = shape.pairs if unit == "pair" else shape.samples
        if jobs and units:
            seconds[rule] = work * units / jobs
    return seconds


def node_hours(shape: CohortShape, node: Node = FUGAKU_NODE) -> dict[str, dict[str, float]]:
    """Per rule with a paper figure: its node-hours for the cohort three ways.
    `per_job`: one PJM job per rule job, each holding a whole node (profiles/pjm without its
    groups); `packed`: profiles/pjm, node_share.per_node jobs to a node (full groups); `allocation`:
    one allocation whose cores the jobs fill completely (profiles/pjm-allocation at 100 % use, the
    least it can be charged)."""
    hours = {}
    for rule, seconds in seconds_per_job(shape).items():
        fact, jobs = FACTS[rule], FACTS[rule].jobs(shape)
        share = fact.node_share
        per_node = share.per_node(node) if share else 1
        threads = share.threads if share else 1
        hours[rule] = {
            "jobs": jobs,
            "per_job": jobs * seconds / 3600,
            "packed": math.ceil(jobs / per_node) * seconds / 3600,
            "allocation": jobs * seconds * threads / node.cores / 3600,
        }
    return hours


def node_hours_table(shape: CohortShape, node: Node = FUGAKU_NODE) -> str:
    """The node-hours per stage, the three ways side by side, and their totals."""
    hours = node_hours(shape, node)
    stages = stage_of_rule()
    per_stage: dict[str, dict[str, float]] = {}
    for rule, figures in hours.items():
        entry = per_stage.setdefault(stages[rule], {"jobs": 0, "per_job": 0.0, "packed": 0.0, "allocation": 0.0})
        for key, value in figures.items():
            entry[key] += value
    lines = [
        f"Node-hours on {node.cores}-core nodes (what Fugaku charges), per-job seconds from the Fugaku paper's "
        "30x WGS work (genomon_smk.plan.planner) cut as this cohort is; stages it has no figure for left out:",
        f"  {'stage':<26}{'jobs':>8}{'job per node':>14}{'packed (pjm)':>14}{'allocation':>12}",
    ]
    for stage, _ in STAGES:
        if stage in per_stage:
            e = per_stage[stage]
            lines.append(f"  {stage:<26}{e['jobs']:>8}{e['per_job']:>14.1f}{e['packed']:>14.1f}{e['allocation']:>12.1f}")
    total = {key: sum(e[key] for e in per_stage.values()) for key in ("jobs", "per_job", "packed", "allocation")}
    lines.append(f"  {'total':<26}{total['jobs']:>8}{total['per_job']:>14.1f}{total['packed']:>14.1f}"
                 f"{total['allocation']:>12.1f}")
    lines.append("  job per node: one PJM job per rule job; packed: profiles/pjm's job groups, full nodes; "
                 "allocation: profiles/pjm-allocation with every core busy (its least)")
    return "\n".join(lines)


# GRCh37's 25 primary contigs: the regions of a hypothetical cohort's stage plan (`main`).
GRCH37: tuple[tuple[str, int], ...] = (
    ("1", 249250621), ("2", 243199373), ("3", 198022430), ("4", 191154276), ("5", 180915260),
    ("6", 171115067), ("7", 159138663), ("8", 146364022), ("9", 141213431), ("10", 135534747),
    ("11", 135006516), ("12", 133851895), ("13", 115169878), ("14", 107349540), ("15", 102531392),
    ("16", 90354753), ("17", 81195210), ("18", 78077248), ("19", 59128983), ("20", 63025520),
    ("21", 48129895), ("22", 51304566), ("X", 155270560), ("Y", 59373566), ("MT", 16569),
)


def schema_defaults(schema: dict) -> tuple[dict, dict]:
    """The storage.rules tiers and the `split`/`regions` values the config schema defaults to."""
    properties = schema["properties"]
    tiers = {
        key: {role: spec["default"] for role, spec in rule["properties"].items()}
        for key, rule in properties["storage"]["properties"]["rules"]["properties"].items()
    }
    counts = {
        "chunks": properties["split"]["properties"]["chunks"]["default"],
        **{key: spec.get("default") for key, spec in properties["regions"]["properties"].items()},
    }
    return tiers, counts


def cohort_shape(pairs: int, chunks: int, regions: int, mutation_regions: int) -> CohortShape:
    """A cohort of `pairs` tumor/normal pairs (every sample in one pair, mapped from FASTQ) as the
    default config plans it: SV detection for every pair (its tumor parsed), pmsignature's ind
    mode (K = 2..6), QC of every sample; the reference already set up."""
    return CohortShape(2 * pairs, pairs, chunks, regions, mutation_regions, sv_samples=pairs, sv_pairs=pairs,
                       pmsignature_ind=5)


def main(argv: list[str] | None = None) -> int:
    """`python -m genomon_smk.plan.stage_plan`: the stage plan without Snakemake's DAG."""
    import argparse
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    from genomon_smk.plan.regions import derive_regions
    from genomon_smk.plan.rules import PRIORITIES

    repo = Path(__file__).resolve().parents[3]
    parser = argparse.ArgumentParser(
        prog="python -m genomon_smk.plan.stage_plan",
        description="Print the stage plan (jobs per Genomon stage and rule) without building Snakemake's DAG: "
        "of your config and sample sheet (--configfile: the workflow's own parse, as "
        "`snakemake --list-rules` runs it), or of a hypothetical cohort of --pairs tumor/normal pairs.",
        epilog="Arguments after -- go to Snakemake with --configfile (e.g. -- --config split='{chunks: 64}').",
    )
    parser.add_argument("--configfile", nargs="+", help="your config file(s), as for snakemake")
    parser.add_argument("--pairs", type=int, help="a hypothetical cohort: this many tumor/normal pairs")
    parser.add_argument("--chunks", type=int, help="with --pairs: chunks per sample (default: the config schema's)")
    parser.add_argument("--regions", type=int,
                        help="with --pairs: regions, the unmapped one included (default: GRCh37 at the schema's "
                        "regions.max_length and pack_bp)")
    args, snakemake_args = parser.parse_known_args(argv)
    snakemake_args = [arg for arg in snakemake_args if arg != "--"]
    if bool(args.configfile) == (args.pairs is not None):
        parser.error("give either --configfile or --pairs")
    if args.configfile:
        # The workflow prints its plans when it is parsed; --list-rules parses it and stops before any DAG.
        command = [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "workflow" / "Snakefile"),
                   "--configfile", *args.configfile, "--list-rules", *snakemake_args]
        result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        sys.stderr.write(result.stderr)
        return result.returncode
    schema = yaml.safe_load((repo / "workflow" / "schemas" / "config.schema.yaml").read_text())
    tiers, defaults = schema_defaults(schema)
    if args.regions:
        regions, mutation = args.regions, args.regions - 1
    else:
        derived = derive_regions(list(GRCH37), defaults["max_length"], defaults["pack_bp"])
        regions, mutation = len(derived), sum(not region.is_unmapped for region in derived)
    shape = cohort_shape(args.pairs, args.chunks or defaults["chunks"], regions, mutation)
    print(stage_table(shape, tiers, PRIORITIES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
