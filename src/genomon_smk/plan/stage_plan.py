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

from genomon_smk.plan.rules import RULES, SETUP_RULES, TARGET_RULE, CohortShape
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
