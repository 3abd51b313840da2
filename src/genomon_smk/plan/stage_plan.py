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


def stage_table(shape: CohortShape, storage_rules: dict, priorities: dict[str, int]) -> str:
    """The stage plan as text: per stage its jobs, then per rule what it has one job per, its
    jobs, its Snakemake priority (0, Snakemake's default, where the config sets none) and the
    tiers it writes."""
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
