"""Genomon's pmsignature stages, planned at parse time (workflow/rules/pmsignature.smk).

Which modes run (Genomon's [pmsignature_ind], [pmsignature_full]) and with which K, the gene
annotation they read, and the background signature: built once per reference, annotation, seed
and number of random positions into resources/pmsignature/<reference>-<key>/ (the tool's
`background` command, genomon_smk.tools.pmsignature), and reused by every later run and cohort.

Deliberate differences from upstream Genomon (docs/differences.md): the annotation is a config key
(default annot_utils' refGene of hg19, refused for a reference of another genome) where Genomon
names hg19 Bioconductor packages; the background is built per reference and annotation.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

from genomon_smk.plan.gene_annotation import check_gene_annotation
from genomon_smk.plan.rules import FACTS
from genomon_smk.plan.setup_build import ReferencePlan, input_key, stem
from genomon_smk.tools.annotate.genes import CHROMOSOME_1, builtin_table, chromosome_1

MODES = ("ind", "full")
# The tables the tool's `background` command writes (genomon_smk.tools.pmsignature Mode.table_name):
# ind with strand (Genomon's ind), ind without, full (Genomon's full).
BACKGROUND_TABLES = ("bg.ind5_dir.txt", "bg.ind5.txt", "bg.full3.txt")
# Names of annot_utils' refGene tables, and the length of their genome's first chromosome: the
# default annotation is refused for a reference of another genome.
BUILT_IN_ANNOTATIONS = CHROMOSOME_1
# The post-analysis cases whose filtered tables paplot draws (and pmsignature reads), by Genomon's
# [paplot] include flags.
DRAWN = {
    "pair_controlpanel": lambda unpanel, unpair: True,
    "pair": lambda unpanel, unpair: unpanel,
    "unpair_controlpanel": lambda unpanel, unpair: unpair,
    "unpair": lambda unpanel, unpair: unpanel and unpair,
}


def drawn_cases(paplot: dict) -> set[str]:
    """The cases whose `filt_` tables Genomon's paplot and pre_pmsignature use."""
    return {case for case, on in DRAWN.items() if on(paplot["include_unpanel"], paplot["include_unpair"])}


@dataclass(frozen=True)
class Background:
    """The background tables' directory and what it is built from."""

    directory: str
    reference: str
    annotation: str
    seed: int
    positions: int

    @property
    def files(self) -> list[str]:
        return [f"{self.directory}/{name}" for name in BACKGROUND_TABLES]


@dataclass(frozen=True)
class Plan:
    """K values per mode that runs ({} when none), the annotation's path, the background."""

    ks: dict[str, list[int]] = field(default_factory=dict)
    annotation: str | None = None
    background: Background | None = None

    def jobs(self, mode: str) -> int:
        return len(self.ks.get(mode, []))


def background_directory(reference: ReferencePlan, annotation: str, seed: int, positions: int,
                         resources_dir: str) -> str:
    """resources/pmsignature/<reference's name>-<key>: the key digests the reference's and the
    annotation's paths, sizes and dates (as the reference's build is keyed), the seed and the count."""
    digest = hashlib.sha256(json.dumps([input_key([*reference.sources, annotation]), seed, positions]).encode())
    return f"{resources_dir}/pmsignature/{stem(reference.sources[0])}-{digest.hexdigest()[:12]}"


def skipped_warning(config: dict, cases: list[str]) -> str | None:
    """A warning when an enabled mode runs for no tumor because paplot draws none of the cohort's
    cases (Genomon skips it silently), or None."""
    enabled = [f"pmsignature_{mode}" for mode in MODES if config[f"pmsignature_{mode}"]["enable"]]
    if not enabled or not cases or set(cases) & drawn_cases(config["paplot"]):
        return None
    return (
        f"genomon-smk: warning: {' and '.join(enabled)} enabled, but no tumor's mutations are fitted:"
        f" pmsignature reads the tables paplot draws, and this cohort's tumors are"
        f" {', '.join(sorted(set(cases)))}, which paplot.include_unpanel: {config['paplot']['include_unpanel']}"
        f" and include_unpair: {config['paplot']['include_unpair']} leave out"
    )


# Above this many signatures a fit is asked for more than pmsignature finds in a cohort (Genomon's
# default K is 2-6; published cancer cohorts resolve a handful to a dozen).
SENSIBLE_K = 10


def signum_warnings(plan: Plan, fitted_tumors: int) -> list[tuple[tuple[str, ...], str]]:
    """(config key, warning) for each mode whose signum_max is above SENSIBLE_K: what the fits
    cost (one job per K, each with the rule table's memory and run time) and why the large K are not worth
    it (each signature is a distribution over pmsignature's mutation features, estimated from
    the cohort's mutations: many more signatures than tumors, or than a few per hundred
    mutations, fit noise and give degenerate, repeated signatures)."""
    warnings = []
    for mode, ks in plan.ks.items():
        if not ks or max(ks) <= SENSIBLE_K:
            continue
        jobs = len(ks)
        mem_mb, runtime_min = FACTS[f"pmsignature_{mode}"].mem_mb, FACTS[f"pmsignature_{mode}"].runtime
        warnings.append(((f"pmsignature_{mode}", "signum_max"), (
            f"{max(ks)} signatures is far above what pmsignature resolves (Genomon fits K = 2-6; above "
            f"{SENSIBLE_K} the extra signatures of a cohort split or repeat others, and each needs hundreds of "
            f"the cohort's mutations; this cohort fits {fitted_tumors} tumor(s)): {jobs} fits (K = {min(ks)}-"
            f"{max(ks)}), each a job of {mem_mb / 1000:g} GB for up to {runtime_min / 60:g} h "
            f"({jobs * mem_mb / 1000 * runtime_min / 60:,.0f} GB-hours asked of the cluster), the largest K "
            f"slowest; set signum_max to {SENSIBLE_K} or less")))
    return warnings


def plan_pmsignature(config: dict, cases: list[str], reference: ReferencePlan, resources_dir: str,
                     resolve_path) -> Plan:
    """The stages of this cohort (`cases`: each mutation-call tumor's post-analysis case): a mode
    runs when enabled and some tumor's filtered table is drawn (Genomon's condition). `resolve_path`
    resolves a configured path (relative to the config file)."""
    if not set(cases) & drawn_cases(config["paplot"]):
        return Plan()
    ks = {mode: list(range(config[f"pmsignature_{mode}"]["signum_min"],
                           config[f"pmsignature_{mode}"]["signum_max"] + 1))
          for mode in MODES if config[f"pmsignature_{mode}"]["enable"]}
    ks = {mode: values for mode, values in ks.items() if values}
    if not ks:
        return Plan()
    settings = config["pmsignature"]
    value = settings["annotation"]
    if value in BUILT_IN_ANNOTATIONS:
        try:
            annotation = str(builtin_table(value))
        except FileNotFoundError:
            annotation = value  # refused by annotation_problems
    else:
        annotation = resolve_path(value)
    directory = background_directory(reference, annotation, settings["seed"], settings["background_positions"],
                                     resources_dir)
    background = Background(directory, reference.fasta, annotation, settings["seed"], settings["background_positions"])
    return Plan(ks, annotation, background)


def problems(config: dict, plan: Plan, contigs: list[tuple[str, int]]) -> list[tuple[tuple[str, ...], str]]:
    """(config key, problem) of the stages: a K range that is empty, an annotation file that is
    missing, or a built-in annotation of another genome than the reference's (its first
    chromosome, `1` or `chr1`, of another length)."""
    found = [((f"pmsignature_{mode}", "signum_max"), f"{config[f'pmsignature_{mode}']['signum_max']} is below "
              f"signum_min ({config[f'pmsignature_{mode}']['signum_min']})")
             for mode in MODES if config[f"pmsignature_{mode}"]["enable"]
             and config[f"pmsignature_{mode}"]["signum_max"] < config[f"pmsignature_{mode}"]["signum_min"]]
    return found + [(("pmsignature", "annotation"), problem)
                    for problem in annotation_problems(plan, config["pmsignature"]["annotation"], contigs)]


def annotation_problems(plan: Plan, value: str, contigs: list[tuple[str, int]]) -> list[str]:
    if plan.annotation is None:
        return []
    if value in BUILT_IN_ANNOTATIONS:
        if not os.path.isfile(plan.annotation):
            return [f"{value} names annot_utils' refGene table, which is not installed (bin/install puts it "
                    f"into .venv-sv/); or give a genePred or GTF file"]
        first = chromosome_1(contigs)
        if first != BUILT_IN_ANNOTATIONS[value]:
            found = f"its chromosome 1 is {first:,} bp" if first else "it has no chromosome 1 (or chr1)"
            return [f"{value} is the refGene table of a genome whose chromosome 1 is "
                    f"{BUILT_IN_ANNOTATIONS[value]:,} bp, but {found}: give this reference's gene annotation "
                    f"(a GTF or genePred file), or set pmsignature_ind.enable (and pmsignature_full.enable) false"]
        return background_annotation_problems(plan, contigs)
    if not os.path.isfile(plan.annotation):
        return [f"file not found: {plan.annotation}"]
    return background_annotation_problems(plan, contigs)


def background_annotation_problems(plan: Plan, contigs: list[tuple[str, int]]) -> list[str]:
    """The annotation read whole (plan.gene_annotation) while its background is still to be
    built: once built, the background is what the fits read."""
    if plan.background is None or all(os.path.exists(path) for path in plan.background.files):
        return []
    return check_gene_annotation(plan.annotation, contigs)
