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
