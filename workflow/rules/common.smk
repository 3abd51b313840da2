"""Config, cohort and regions: read and checked here, once, before any job is planned."""

import os
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

from genomon_smk.reference import reference_files, reference_problems
from genomon_smk.regions import make_regions
from genomon_smk.samplesheet import InputError, load_cohort

min_version("9.0")

SCHEMAS = Path(workflow.basedir) / "schemas"

# Jobs run the project's tools from the interpreter that runs Snakemake (the .venv), also when
# the shell's PATH does not have it.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")

if not workflow.overwrite_configfiles:
    raise WorkflowError(
        "no config file given: run with --configfile FILE (config/config.yaml is a documented example)"
    )
CONFIG_FILE = Path(workflow.overwrite_configfiles[-1]).resolve()
CONFIG_DIR = CONFIG_FILE.parent

validate(config, SCHEMAS / "config.schema.yaml", set_default=True)


def config_path(value):
    """A path from the config: $VARs and ~ expanded, relative ones resolved against the config file's directory."""
    return str((CONFIG_DIR / os.path.expanduser(os.path.expandvars(value))).resolve())


REFERENCE = config_path(config["reference"])
OUTPUT_DIR = config_path(config["output_dir"])
LOG_DIR = f"{OUTPUT_DIR}/logs"
BENCH_DIR = f"{OUTPUT_DIR}/benchmarks"

try:
    problems = reference_problems(REFERENCE)
    if problems:
        raise InputError("\n".join(problems))
    COHORT = load_cohort(
        str(SCHEMAS),
        samples=config_path(config["samples"]) if "samples" in config else None,
        pairs=config_path(config["pairs"]) if "pairs" in config else None,
        control_panels=config["control_panels"],
        genomon_sample_sheet=(
            config_path(config["genomon_sample_sheet"]) if "genomon_sample_sheet" in config else None
        ),
    )
    REGIONS = make_regions(
        REFERENCE + ".fai",
        config_path(config["regions"]["file"]) if config["regions"]["file"] else None,
        config["regions"]["max_length"],
        config["regions"]["pack_bp"],
    )
except (InputError, ValueError) as error:
    raise WorkflowError(f"invalid input ({CONFIG_FILE}):\n{error}") from None

SAMPLES = COHORT.samples
REGION_NAMES = [region.name for region in REGIONS]
CHUNKS = [f"{i:04d}" for i in range(config["split"]["chunks"])]


# Storage tiers. Files that pass between jobs live on a tier with a path known when the
# workflow is planned (shared_tmp, cache, global); node_local exists only inside one job, so
# its path is handed to the job's shell and expanded there ($TMPDIR, $PJM_LOCALTMP, ...).
def tier_paths():
    paths = config["storage"]["paths"]
    under_run = f"{OUTPUT_DIR}/.tiers"
    return {
        "global": OUTPUT_DIR,
        "shared_tmp": config_path(paths["shared_tmp"]) if paths["shared_tmp"] else f"{under_run}/shared_tmp",
        "cache": config_path(paths["cache"]) if paths["cache"] else f"{under_run}/cache",
        "node_local": paths["node_local"] or f"{under_run}/node_local",
    }


TIER_PATHS = tier_paths()
RULE_TIERS = config["storage"]["rules"]
for rule_name, roles in RULE_TIERS.items():
    if roles["output"] == "node_local":
        raise WorkflowError(
            f"config storage.rules.{rule_name}.output: node_local cannot hold files that another job reads "
            "(it exists on one node for one job); use shared_tmp, cache or global"
        )


def tier_dir(rule_name, role="output"):
    """Where a rule's files of a role (output or temp) go, by the tier the config assigns."""
    return TIER_PATHS[RULE_TIERS[rule_name][role]]


def log_path(rule_name, pattern):
    return f"{LOG_DIR}/{rule_name}/{pattern}.log"


def bench_path(rule_name, pattern):
    return f"{BENCH_DIR}/{rule_name}/{pattern}.tsv"


def sample_lanes(sample):
    return COHORT.lanes[sample]


def read_group(wildcards):
    """bwa's -R argument; tabs written as \\t for bwa to expand."""
    fields = COHORT.read_group(wildcards.sample)
    return "@RG\\t" + "\\t".join(f"{key}:{value}" for key, value in fields.items())


def final_bam(sample):
    return f"{OUTPUT_DIR}/bam/{sample}/{sample}.markdup.bam"


wildcard_constraints:
    sample="|".join(map(re.escape, SAMPLES)),
    chunk=r"\d{4}",
    region="|".join(map(re.escape, REGION_NAMES)),
