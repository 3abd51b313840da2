"""Genomon's gene annotation, planned at parse time (workflow/rules/annotation.smk).

One config key, `gene_annotation`, names the genes of every stage that reads them (the
annotation stage, pmsignature's strand and background when `pmsignature.annotation` is not
given): a built-in name (annot_utils' UCSC refGene tables, installed by bin/install into .venv-sv),
a UCSC genePred table or a GTF, or `auto` (the default): the built-in table of the reference's
genome, told by the length of its chromosome 1 (as pmsignature's check does), else none.

The annotation stage (`annotation.enable`: auto, true, false) adds ANNOVAR's five refGene columns
after Alt to each pair's results: by this project's clean-room annotator (`annotation.tool:
genomon`, genomon_smk.tools.annotate) or by the user's own ANNOVAR (`tool: annovar`,
genomon_smk.steps.annovar: Genomon's table_annovar.pl command line, its files checked here before
any job). With `enable: auto` the stage runs when a gene table is known (ANNOVAR: always), and a
reference no table fits runs on without it, as the plan says; `enable: true` refuses such a run.

Deliberate differences from upstream Genomon (docs/differences.md): Genomon annotates only with
ANNOVAR (`active_annovar_flag`, off by default); here the clean-room annotator is on by default
wherever genes are known, and ANNOVAR is run once per pair after the merge, not per region.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

from genomon_smk.tools.annotate.genes import CHROMOSOME_1, builtin_table, chromosome_1

# ANNOVAR's refGene columns, after Alt, in table_annovar's order.
GENE_COLUMNS = ("Func.refGene", "Gene.refGene", "GeneDetail.refGene", "ExonicFunc.refGene", "AAChange.refGene")
AUTO = "auto"
TOOLS = ("genomon", "annovar")
# Built-in tables (annot_utils' refGene) and the length of their genome's chromosome 1; `auto`
# picks the first whose length is the reference's.
BUILT_IN = CHROMOSOME_1
# Genomon v2.6's [annotation] table_annovar_params (dna_genomon.cfg): 17 protocols.
GENOMON_TABLE_ANNOVAR_PARAMS = (
    "-buildver hg19 -remove --otherinfo -protocol refGene,cytoBand,genomicSuperDups,esp6500siv2_all,"
    "1000g2010nov_all,1000g2014oct_all,1000g2014oct_afr,1000g2014oct_eas,1000g2014oct_eur,snp131,snp138,"
    "snp131NonFlagged,snp138NonFlagged,cosmic68wgs,cosmic70,clinvar_20150629,ljb26_all "
    "-operation g,r,r,f,f,f,f,f,f,f,f,f,f,f,f,f,f"
)
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


@dataclass(frozen=True)
class GeneTable:
    """The run's genes: `name` a built-in name or the configured path (None: none known), `path`
    the file read, `explicit` whether the config names it (not `auto`), and what the plan says."""

    name: str | None
    path: str | None
    explicit: bool
    note: str


@dataclass(frozen=True)
class Plan:
    """Whether the annotation stage runs, with which tool, and the genes (GeneTable)."""

    enabled: bool
    tool: str
    genes: GeneTable
    note: str


def built_in_for(contigs: list[tuple[str, int]]) -> str | None:
    """The built-in table whose genome's chromosome 1 is the reference's length, or None."""
    first = chromosome_1(contigs)
    return next((name for name, length in BUILT_IN.items() if length == first), None)


def built_in_path(name: str) -> str | None:
    """annot_utils' refGene table of a built-in name (None when it is not installed)."""
    try:
        return str(builtin_table(name))
    except FileNotFoundError:
        return None


def gene_table(value: str, contigs: list[tuple[str, int]], resolve_path) -> GeneTable:
    """The genes `gene_annotation` names for a reference of these contigs (`resolve_path`: a
    configured path resolved against the config file)."""
    if value == AUTO:
        name = built_in_for(contigs)
        if name is None:
            first = chromosome_1(contigs)
            found = f"its chromosome 1 is {first:,} bp" if first else "it has no chromosome 1 (or chr1)"
            return GeneTable(None, None, False,
                             f"no built-in gene table fits this reference ({found}; hg19/GRCh37, hg38/GRCh38 "
                             "and mm10 are built in): no gene annotation; set gene_annotation to a genePred "
                             "or GTF file of this reference for it")
        path = built_in_path(name)
        if path is None:
            return GeneTable(None, None, False,
                             f"the reference is {name}'s genome, but annot_utils' refGene table is not installed "
                             "(bin/install puts it into .venv-sv/): no gene annotation; set gene_annotation to a "
                             "genePred or GTF file for it")
        return GeneTable(name, path, False, f"{name} (annot_utils' refGene, chosen by chromosome 1's length)")
    if value in BUILT_IN:
        return GeneTable(value, built_in_path(value), True, f"{value} (annot_utils' refGene)")
    path = resolve_path(value)
    return GeneTable(path, path, True, path)


def plan_annotation(config: dict, contigs: list[tuple[str, int]], resolve_path) -> Plan:
    genes = gene_table(config["gene_annotation"], contigs, resolve_path)
    settings = config["annotation"]
    tool, enable = settings["tool"], settings["enable"]
    if enable is False or enable == "false":
        return Plan(False, tool, genes, "off (annotation.enable: false)")
    if tool == "annovar":
        return Plan(True, tool, genes, f"ANNOVAR's table_annovar.pl ({settings['annovar_dir']})")
    if genes.name is None:
        return Plan(False, tool, genes, genes.note)
    return Plan(True, tool, genes, f"genomon-smk's refGene annotator, genes: {genes.note}")


def annovar_options(params: str) -> dict[str, str]:
    """-buildver, -protocol and -operation of table_annovar_params (absent ones left out)."""
    words = shlex.split(params)
    return {word.lstrip("-"): words[index + 1] for index, word in enumerate(words[:-1])
            if word.lstrip("-") in ("buildver", "protocol", "operation")}


def humandb_files(buildver: str, protocol: str, operation: str) -> list[str]:
    """The humandb files a protocol needs, as ANNOVAR names them: `<buildver>_<protocol>.txt`
    (1000gYYYYmon_pop: `<buildver>_<POP>.sites.YYYY_MM.txt`), and for a gene protocol its
    `<buildver>_<protocol>Mrna.fa`."""
    thousand = re.fullmatch(r"1000g(\d{4})([a-z]{3})_([a-z]+)", protocol)
    if thousand and thousand.group(2) in MONTHS:
        year, month, population = thousand.groups()
        files = [f"{buildver}_{population.upper()}.sites.{year}_{MONTHS.index(month) + 1:02d}.txt"]
    else:
        files = [f"{buildver}_{protocol}.txt"]
    if operation == "g":
        files.append(f"{buildver}_{protocol}Mrna.fa")
    return files


def annovar_problems(settings: dict, resolve_path) -> list[tuple[tuple[str, ...], str]]:
    """What keeps ANNOVAR from running, by config key: table_annovar.pl in annovar_dir, the
    protocols and operations of table_annovar_params, its -buildver against annovar_buildver (the
    multianno file is named by it), every humandb file the protocols need."""
    section = "annotation"
    if not settings["annovar_dir"]:
        return [((section, "annovar_dir"), "annotation.tool: annovar needs the ANNOVAR directory (table_annovar.pl)")]
    found = []
    script = os.path.join(resolve_path(settings["annovar_dir"]), "table_annovar.pl")
    if not os.path.isfile(script):
        found.append(((section, "annovar_dir"), f"no table_annovar.pl in {os.path.dirname(script)} (ANNOVAR is "
                                                f"installed by the user: annovar.openbioinformatics.org)"))
    elif not os.access(script, os.X_OK):
        found.append(((section, "annovar_dir"), f"{script} is not executable"))
    try:
        options = annovar_options(settings["table_annovar_params"])
    except ValueError as error:
        return found + [((section, "table_annovar_params"), str(error))]
    protocols = options.get("protocol", "").split(",") if options.get("protocol") else []
    operations = options.get("operation", "").split(",") if options.get("operation") else []
    if not protocols or len(protocols) != len(operations):
        found.append(((section, "table_annovar_params"),
                      f"-protocol names {len(protocols)} protocols and -operation {len(operations)} operations: "
                      "give one operation per protocol"))
        return found
    if "refGene" not in protocols:
        found.append(((section, "table_annovar_params"),
                      "-protocol has no refGene: the results' gene columns (and paplot's mutation matrix) need it"))
    buildver = options.get("buildver", "hg18")
    if buildver != settings["annovar_buildver"]:
        found.append(((section, "annovar_buildver"),
                      f"{settings['annovar_buildver']}, but table_annovar_params says -buildver {buildver} "
                      "(the multianno file is named by it)"))
    if not settings["annovar_database"]:
        return found + [((section, "annovar_database"), "annotation.tool: annovar needs ANNOVAR's humandb directory")]
    humandb = resolve_path(settings["annovar_database"])
    if not os.path.isdir(humandb):
        return found + [((section, "annovar_database"), f"directory not found: {humandb}")]
    missing = [name for protocol, operation in zip(protocols, operations)
               for name in humandb_files(buildver, protocol, operation)
               if not os.path.isfile(os.path.join(humandb, name))]
    if missing:
        found.append(((section, "annovar_database"),
                      f"{humandb} lacks {', '.join(missing)} (table_annovar_params' protocols; "
                      "annotate_variation.pl -downdb fetches them)"))
    return found


def problems(config: dict, plan: Plan, contigs: list[tuple[str, int]], resolve_path) -> list[tuple[tuple[str, ...], str]]:
    """(config key, problem) before any job: a gene table the config names that is missing or of
    another genome, `enable: true` with no genes known, ANNOVAR's files."""
    found = []
    genes = plan.genes
    if genes.explicit:
        if genes.path is None:
            found.append((("gene_annotation",), f"{genes.name} names annot_utils' refGene table, which is not "
                                                "installed (bin/install puts it into .venv-sv/); or give a genePred or GTF file"))
        elif not os.path.isfile(genes.path):
            found.append((("gene_annotation",), f"file not found: {genes.path}"))
        elif genes.name in BUILT_IN and chromosome_1(contigs) != BUILT_IN[genes.name]:
            first = chromosome_1(contigs)
            have = f"its chromosome 1 is {first:,} bp" if first else "it has no chromosome 1 (or chr1)"
            found.append((("gene_annotation",), f"{genes.name} is the refGene table of a genome whose chromosome 1 "
                                                f"is {BUILT_IN[genes.name]:,} bp, but {have}: give this reference's "
                                                "genes (a genePred or GTF file), or leave the key out (auto)"))
    settings = config["annotation"]
    if settings["enable"] is True and plan.tool == "genomon" and genes.name is None:
        found.append((("annotation", "enable"), f"true, but {genes.note}"))
    if plan.enabled and plan.tool == "annovar":
        found += annovar_problems(settings, resolve_path)
    return found
