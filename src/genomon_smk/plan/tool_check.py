"""The install check of the tools the rules run (bin/install's last step): for each tool group
(the envs/*.yaml files the rules' `conda:` and `envmodules:` name) whether its tools are found on
PATH, or after `module load` of the modules config key `envmodules` gives the group; a missing
tool is named with its group, the rules that need it and how to get it (module, Spack, apt).

`python -m genomon_smk.plan.tool_check [--configfile CONFIG]`: exit 0 when every tool is found,
1 with one line per missing tool otherwise.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from dataclasses import dataclass

import yaml

# The external programs each tool group's rules run (genomon-smk's own Python steps come from the
# venv). Keep in step with envs/*.yaml and the rules' shell commands.
TOOL_GROUPS: dict[str, tuple[str, ...]] = {
    "map": ("bwa", "samtools", "bamsort"),
    "markdup": ("bammerge", "bammarkduplicates", "samtools"),
    "python": ("samtools",),
    "qc": ("samtools", "mosdepth"),
    "sv": ("tabix", "bgzip"),
}
# The rules of each group, for the message (what fails without the tool).
GROUP_RULES = {
    "map": "map_reads, bam_to_fastq, reference_bwa_index",
    "markdup": "markdup",
    "python": "identify_mutations, merge_bam, reference_fai, and the other Python steps",
    "qc": "bam_stats, coverage, multiqc",
    "sv": "sv_parse, sv_merge_control, sv_filt, sv_utils_filter (GenomonSV, sv_utils)",
}


@dataclass(frozen=True)
class Source:
    """Where a tool comes from: its Spack spec (Fugaku's public instance has each of these), its
    Debian package and the usual name of its environment module."""

    spack: str
    apt: str
    module: str


SOURCES = {
    "bwa": Source("bwa@0.7.17", "bwa", "bwa"),
    "samtools": Source("samtools", "samtools", "samtools"),
    "bamsort": Source("biobambam2", "biobambam2", "biobambam2"),
    "bammerge": Source("biobambam2", "biobambam2", "biobambam2"),
    "bammarkduplicates": Source("biobambam2", "biobambam2", "biobambam2"),
    "mosdepth": Source("mosdepth", "mosdepth libhts-dev", "mosdepth"),
    "tabix": Source("htslib", "tabix", "htslib"),
    "bgzip": Source("htslib", "tabix", "htslib"),
}

MODULE_FAILED = "module-load-failed"
MODULE_ERROR = "module-error"  # prefix of each line the load printed


def module_names(value) -> list[str]:
    """A config `envmodules` entry (a list, or one string of names separated by spaces)."""
    if not value:
        return []
    return value.split() if isinstance(value, str) else [str(name) for name in value]


def probe_script(tools: tuple[str, ...], modules: list[str]) -> str:
    """A bash script that loads `modules` (as Snakemake's --sdm env-modules does) and prints
    `found TOOL PATH` or `missing TOOL` for each tool; MODULE_FAILED if the load failed, and
    each line the load printed after MODULE_ERROR."""
    lines = []
    if modules:
        lines.append(
            # The load runs in this shell (a command substitution's subshell would lose what it
            # sets); what it says is passed on, marked, whether or not it fails (the marking sed
            # is started before stdout goes to /dev/null, so it writes to the probe's stdout).
            f"module purge >/dev/null 2>&1; module load {' '.join(map(shlex.quote, modules))}"
            f" 2> >(sed 's/^/{MODULE_ERROR} /') >/dev/null || echo {MODULE_FAILED}"
        )
    for tool in tools:
        lines.append(
            f"if where=$(command -v {shlex.quote(tool)}); then echo \"found {tool} $where\";"
            f" else echo 'missing {tool}'; fi"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Probe:
    found: dict[str, str]
    missing: list[str]
    module_failed: bool
    module_error: tuple[str, ...] = ()  # what the load printed, blank lines left out


def parse_probe(text: str) -> Probe:
    found, missing, failed, said = {}, [], False, []
    for line in text.splitlines():
        words = line.split(maxsplit=2)
        if line.startswith(f"{MODULE_ERROR} "):
            if stripped := line[len(MODULE_ERROR) + 1 :].strip():
                said.append(stripped)
        elif words == [MODULE_FAILED]:
            failed = True
        elif len(words) == 3 and words[0] == "found":
            found[words[1]] = words[2]
        elif len(words) == 2 and words[0] == "missing":
            missing.append(words[1])
    return Probe(found, missing, failed, tuple(said))


def run_probe(script: str) -> str:
    """Run a probe in bash with the caller's environment (where `module`, if the site has it, is
    the exported shell function of Lmod or Environment Modules)."""
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True).stdout


def how_to_get(tool: str, group: str, modules: list[str]) -> str:
    source = SOURCES.get(tool, Source(tool, tool, tool))
    tried = f"not on PATH after `module load {' '.join(modules)}`" if modules else "not on PATH"
    return (
        f"missing: {tool} (tool group '{group}': {GROUP_RULES.get(group, group)}), {tried}. "
        f"Get it one of these ways: environment modules: `module avail {source.module}`, then in "
        f"your config `envmodules: {{{group}: [{source.module}/VERSION, ...]}}` and run with "
        f"--sdm env-modules; Spack: `spack install {source.spack}` and `spack load {source.spack.split('@')[0]}` "
        f"before bin/install and snakemake (or its module from `spack module lmod refresh`); "
        f"with root on Debian: `apt-get install {source.apt}`"
    )


def check(envmodules: dict, probe=run_probe) -> tuple[list[str], list[str]]:
    """(lines for found tools, problems) over every tool group. A group given modules whose load
    fails (or with no `module` command) is a problem of its own."""
    found_lines, problems = [], []
    for group, tools in TOOL_GROUPS.items():
        modules = module_names(envmodules.get(group))
        result = parse_probe(probe(probe_script(tools, modules)))
        if result.module_failed:
            said = "; ".join(result.module_error[:3])
            problems.append(
                f"tool group '{group}': `module load {' '.join(modules)}` failed (config envmodules.{group})"
                + (f", saying: {said}" if said else "")
                + ". Is the module system set up in this shell (Lmod: source its init/bash; Environment "
                "Modules: init/bash), is MODULEPATH right (`module use DIR`), and do the names match "
                "`module avail`?"
            )
        for tool in tools:
            if tool in result.found:
                if result.module_failed:
                    via = " (from PATH: the module load failed)"
                else:
                    via = f" (module load {' '.join(modules)})" if modules else ""
                found_lines.append(f"{group}: {tool} = {result.found[tool]}{via}")
            else:
                problems.append(how_to_get(tool, group, modules))
    return found_lines, problems


def config_envmodules(paths: list[str]) -> dict:
    """The `envmodules` key of the config files, later files overriding earlier ones per group."""
    merged: dict = {}
    for path in paths:
        with open(path) as handle:
            config = yaml.safe_load(handle) or {}
        merged.update(config.get("envmodules") or {})
    return merged


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", action="append", default=[],
                        help="a workflow config whose `envmodules` key names the modules to load")
    args = parser.parse_args(argv)
    found, problems = check(config_envmodules(args.configfile))
    for line in found:
        print(f"[tools] {line}")
    for line in problems:
        print(f"[tools] {line}", file=sys.stderr)
    if problems:
        print(f"[tools] {len(problems)} problem(s): the rules that need them would fail "
              "(docs/clusters.md, Install without root)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
