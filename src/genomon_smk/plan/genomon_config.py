"""Genomon v2.6's DNA pipeline config (`dna_genomon.cfg`, INI) read as it is: the config key
`genomon_config` names it, and its [REFERENCE] paths, interval list, databases and every analysis
parameter that has a counterpart here become this workflow's config keys, under whatever the
YAML config files and --config set (they override it key by key).

What has no counterpart (qsub_option, image, singularity_option, java_memory, [SOFTWARE] and
[ENV] paths, ...) is listed once, with what replaces it here, so a Genomon site moving sees
every key it tuned accounted for. The map is written once, in GENOMON_KEYS and NO_COUNTERPART;
docs/from-genomon.md shows it to users.

Genomon reads its flags as the literal string `True` (its shell templates compare
`_{flag} = "_True"`); so does this reader, and it names a flag written otherwise (`true`,
`yes`), which Genomon would silently have taken as off.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field

#: (section, key) -> (config key path, kind): path (resolved against the cfg's directory),
#: options (a Genomon option string), int, text, flag (Genomon's `True`).
GENOMON_KEYS: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    ("reference", "ref_fasta"): (("reference",), "path"),
    ("reference", "interval_list"): (("regions", "file"), "path"),
    ("reference", "simple_repeat_tabix_db"): (("simple_repeat_db",), "path"),
    ("reference", "hotspot_db"): (("hotspot_db",), "path"),
    ("bwa_mem", "bwa_params"): (("map", "bwa_params"), "options"),
    ("fisher_mutation_call", "pair_params"): (("fisher_mutation_call", "pair_params"), "options"),
    ("fisher_mutation_call", "single_params"): (("fisher_mutation_call", "single_params"), "options"),
    ("realignment_filter", "params"): (("realignment_filter", "params"), "options"),
    ("indel_filter", "params"): (("indel_filter", "params"), "options"),
    ("breakpoint_filter", "params"): (("breakpoint_filter", "params"), "options"),
    ("eb_filter", "map_quality"): (("eb_filter", "map_quality"), "int"),
    ("eb_filter", "base_quality"): (("eb_filter", "base_quality"), "int"),
    ("eb_filter", "filter_flags"): (("eb_filter", "filter_flags"), "text"),
    ("hotspot", "params"): (("hotspot_call", "params"), "options"),
    ("mutation_util", "pair_params"): (("mutation_util", "pair_params"), "options"),
    ("mutation_util", "single_params"): (("mutation_util", "single_params"), "options"),
    ("sv_parse", "params"): (("sv_parse", "params"), "options"),
    ("sv_merge", "params"): (("sv_merge", "params"), "options"),
    ("sv_filt", "params"): (("sv_filt", "params"), "options"),
    ("sv_filt", "sv_utils_params"): (("sv_filt", "sv_utils_params"), "options"),
    ("paplot", "title"): (("paplot", "title"), "text"),
    ("paplot", "include_unpair"): (("paplot", "include_unpair"), "flag"),
    ("paplot", "include_unpanel"): (("paplot", "include_unpanel"), "flag"),
    **{
        (mode, key): ((mode, key), kind)
        for mode in ("pmsignature_ind", "pmsignature_full")
        for key, kind in (("enable", "flag"), ("signum_min", "int"), ("signum_max", "int"), ("trialnum", "int"))
    },
    # ANNOVAR (read only when [annotation] active_annovar_flag is True, as Genomon does).
    ("software", "annovar"): (("annotation", "annovar_dir"), "path"),
    ("annotation", "annovar_database"): (("annotation", "annovar_database"), "path"),
    ("annotation", "annovar_buildver"): (("annotation", "annovar_buildver"), "text"),
    ("annotation", "table_annovar_params"): (("annotation", "table_annovar_params"), "options"),
}
ANNOVAR_KEYS = frozenset({("software", "annovar"), ("annotation", "annovar_database"),
                          ("annotation", "annovar_buildver"), ("annotation", "table_annovar_params")})
#: flags that choose what the keys above do (not keys of their own here)
FLAGS = frozenset({("hotspot", "active_hotspot_flag"), ("annotation", "active_annovar_flag")})

RESOURCES = "the profile's resources (memory and time per rule: src/genomon_smk/plan/rules.py, profiles/)"
TOOLS = "the tools of envs/*.yaml (bin/install; conda: or envmodules: per rule)"
MUTANNO = "not added: Genomon's mutanno columns (HGVD, ExAC, HGMD, in-house) have no counterpart (docs/differences.md)"
QC = "QC here is mosdepth over the whole genome at 2,10,20,30,40,50,100x (docs/differences.md)"
SV_ANNOTATION = "sv_filt.genome_id and sv_filt.grc (GenomonSV's own annotation files)"
#: (section or "*", key or "*") -> what replaces it here; the first match counts
NO_COUNTERPART: list[tuple[str, str, str]] = [
    ("*", "qsub_option", RESOURCES),
    ("*", "image", TOOLS),
    ("*", "singularity_option", TOOLS),
    ("software", "*", TOOLS),
    ("env", "*", TOOLS),
    ("markduplicates", "java_memory", "nothing: biobambam2's bammarkduplicates runs without Java"),
    ("bam2fastq", "params", "Genomon's bamtofastq options, fixed ([bam_tofastq] samples)"),
    ("split_fastq", "split_fastq_line_number", "split.chunks: a fixed number of chunks per sample"),
    ("split_fastq", "fastq_filter", "nothing: reads are mapped as they are"),
    ("reference", "genome_size", QC),
    ("reference", "gaptxt", QC),
    ("reference", "bait_file", QC),
    ("qc_coverage", "*", QC),
    ("reference", "hgvd_2013_tabix_db", MUTANNO),
    ("reference", "hgvd_2016_tabix_db", MUTANNO),
    ("reference", "exac_tabix_db", MUTANNO),
    ("reference", "hgmd_tabix_db", MUTANNO),
    ("reference", "inhouse_normal_tabix_db", MUTANNO),
    ("reference", "inhouse_tumor_tabix_db", MUTANNO),
    ("annotation", "active_hgvd_2013_flag", MUTANNO),
    ("annotation", "active_hgvd_2016_flag", MUTANNO),
    ("annotation", "active_exac_flag", MUTANNO),
    ("annotation", "active_hgmd_flag", MUTANNO),
    ("annotation", "active_inhouse_normal_flag", MUTANNO),
    ("annotation", "active_inhouse_tumor_flag", MUTANNO),
    ("sv_filt", "annotation_dir", SV_ANNOTATION),
    ("sv_filt", "sv_utils_annotation_dir", SV_ANNOTATION),
    ("paplot", "enable", "always on when there is something to show"),
    ("paplot", "remarks", "paplot's report names the tools and versions of this workflow"),
    ("paplot", "software", "paplot's report names the tools and versions of this workflow"),
    ("paplot", "config_file", "the bundled paplot settings"),
    ("post_analysis", "enable", "always on"),
    ("post_analysis", "config_file", "the bundled genomon_pa settings"),
    ("develop", "debug", "each job's log under output_dir/logs"),
]
#: keys Genomon v2.6 allows in every section (each job's settings)
EVERY_SECTION = ("qsub_option", "image", "singularity_option")
#: Genomon v2.6's DNA config's sections (those holding qsub_option only included); a section or
#: key outside them is a typo that Genomon would have silently ignored: refused, with the name meant.
GENOMON_SECTIONS = frozenset(
    {section for section, _ in (*GENOMON_KEYS, *FLAGS)}
    | {section for section, _, _ in NO_COUNTERPART if section != "*"}
    | {"qc_bamstats", "qc_merge", "mutation_call", "mutation_merge"}
)


def unknown_key_problem(section: str, key: str) -> str | None:
    """What is wrong with a (section, key) Genomon v2.6's DNA config does not have, with the name
    meant when one is close (difflib), or None for a key it has."""
    if section not in GENOMON_SECTIONS:
        close = difflib.get_close_matches(section, sorted(GENOMON_SECTIONS), n=1, cutoff=0.6)
        hint = f" (did you mean [{close[0]}]?)" if close else ""
        return f"not a section of Genomon v2.6's DNA config{hint}"
    if (section, key) in GENOMON_KEYS or (section, key) in FLAGS or replacement(section, key):
        return None
    known = sorted({k for s, k in (*GENOMON_KEYS, *FLAGS) if s == section}
                   | {k for s, k, _ in NO_COUNTERPART if s == section} | set(EVERY_SECTION))
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"not a key of [{section}] in Genomon v2.6's DNA config{hint}; its keys: {', '.join(known)}"


@dataclass
class GenomonConfig:
    """What a dna_genomon.cfg gives: config keys (nested, as a YAML config would hold them), where
    each came from (`FILE:LINE: [section] key`), what has no counterpart (place, what replaces
    it) and problems (`FILE:LINE: [section] key: message`)."""

    path: str
    config: dict = field(default_factory=dict)
    origins: dict[tuple[str, ...], str] = field(default_factory=dict)
    unused: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def read_ini(path: str) -> list[tuple[str, str, str, int, str]]:
    """(section, key, value, line, `[Section] key` as written) of every key of an INI file as Python's ConfigParser (which
    Genomon uses) reads it: section and key lower-cased, the value stripped; a value that is only
    a comment (Genomon's template's `ref_fasta = # the path to ...`) is empty."""
    entries = []
    section = written = ""
    with open(path) as handle:
        for number, line in enumerate(handle, start=1):
            text = line.strip()
            if not text or text.startswith(("#", ";")):
                continue
            header = re.fullmatch(r"\[([^\]]+)\]", text)
            if header:
                written = header.group(1).strip()
                section = written.lower()
                continue
            positions = [p for p in (text.find("="), text.find(":")) if p > 0]
            if not positions or line[0].isspace():
                raise ValueError(f"{path}:{number}: not `key = value` nor a [section]: {text!r}")
            cut = min(positions)
            value = text[cut + 1:].strip()
            key = text[:cut].strip()
            entries.append((section, key.lower(), "" if value.startswith("#") else value, number, f"[{written}] {key}"))
    return entries


def replacement(section: str, key: str) -> str | None:
    """What replaces a Genomon key without a counterpart here, or None."""
    for known_section, known_key, what in NO_COUNTERPART:
        if known_section in ("*", section) and known_key in ("*", key):
            return what
    return None


def flag(value: str) -> bool | None:
    """Genomon's flag: True only for the literal `True`; None for a value Genomon would take as
    off although it probably means on (true, yes, 1)."""
    if value == "True":
        return True
    return None if value.lower() in ("true", "yes", "on", "1") else False


def set_at(config: dict, path: tuple[str, ...], value: object) -> None:
    for key in path[:-1]:
        config = config.setdefault(key, {})
    config[path[-1]] = value


def read_genomon_config(path: str) -> GenomonConfig:
    """The config keys a dna_genomon.cfg sets, their origins, what is not used and problems
    (raises OSError when it cannot be read, ValueError when it is not an INI file)."""
    result = GenomonConfig(path)
    entries = read_ini(path)
    base = os.path.dirname(os.path.abspath(path))
    flags = {}
    for section, key, value, line, written in entries:
        if (section, key) in FLAGS:
            on = flag(value)
            if on is None:
                result.problems.append(
                    f"{path}:{line}: {written}: {value!r}: Genomon reads only `True` as on "
                    "(and this as off); write True or False"
                )
            flags[(section, key)] = bool(on)
    hotspot = flags.get(("hotspot", "active_hotspot_flag"), True)  # Genomon's default cfg: True
    annovar = flags.get(("annotation", "active_annovar_flag"), False)
    refused_sections: set[str] = set()
    if annovar:
        for key, value in (("enable", True), ("tool", "annovar")):
            set_at(result.config, ("annotation", key), value)
            result.origins[("annotation", key)] = f"{path}: [annotation] active_annovar_flag"
    for section, key, value, line, written in entries:
        where = f"{path}:{line}: {written}"
        if (section, key) in FLAGS:
            continue
        unknown = unknown_key_problem(section, key)
        if unknown:
            if section in GENOMON_SECTIONS or section not in refused_sections:  # a section once
                result.problems.append(f"{where}: {unknown}")
            refused_sections.add(section)
            continue
        if (section, key) not in GENOMON_KEYS:
            result.unused.append((written, replacement(section, key)))
            continue
        target, kind = GENOMON_KEYS[(section, key)]
        if (section, key) in ANNOVAR_KEYS and not annovar:
            result.unused.append((written, "nothing: [annotation] active_annovar_flag is not True"))
            continue
        if (section, key) == ("reference", "hotspot_db") and not hotspot:
            result.unused.append((written, "nothing: [hotspot] active_hotspot_flag is not True"))
            continue
        if kind == "path":
            if not value:
                continue  # the template's placeholder: not set
            converted: object = os.path.normpath(os.path.join(base, os.path.expanduser(os.path.expandvars(value))))
        elif kind == "int":
            try:
                converted = int(value)
            except ValueError:
                result.problems.append(f"{where}: {value!r}: not a whole number")
                continue
        elif kind == "flag":
            on = flag(value)
            if on is None:
                result.problems.append(f"{where}: {value!r}: Genomon reads only `True` as on; write True or False")
                continue
            converted = on
        else:
            converted = value
        set_at(result.config, target, converted)
        result.origins[target] = where
    # Genomon's default cfg turns the hotspot call on: without a database there is nothing to call.
    if not hotspot:
        set_at(result.config, ("hotspot_db",), None)
        result.origins[("hotspot_db",)] = f"{path}: [hotspot] active_hotspot_flag"
    return result


def known_paths(schema: dict, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every key path a config schema declares."""
    paths = set()
    for name, sub in schema.get("properties", {}).items():
        paths.add(prefix + (name,))
        paths |= known_paths(sub, prefix + (name,))
    return paths


def leaves(config: dict, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    found = []
    for key, value in config.items():
        path = prefix + (key,)
        found += leaves(value, path) if isinstance(value, dict) and value else [(path, value)]
    return found


def within_schema(genomon: GenomonConfig, schema: dict) -> dict:
    """The cfg's keys that this workflow's schema knows (the others, e.g. the annotation keys of
    a version without that stage, are moved to the unused list)."""
    known = known_paths(schema)
    kept: dict = {}
    for path, value in leaves(genomon.config):
        if path in known:
            set_at(kept, path, value)
        else:
            genomon.unused.append((genomon.origins.get(path, ".".join(path)).split(": ", 1)[-1],
                                   f"nothing yet: this version has no config key {'.'.join(path)}"))
    return kept


def unused_summary(genomon: GenomonConfig) -> list[str]:
    """The plan's lines on the cfg's keys without a counterpart, grouped by what replaces them."""
    groups: dict[str, list[str]] = {}
    for place, what in genomon.unused:
        groups.setdefault(what, [])
        if place not in groups[what]:
            groups[what].append(place)
    lines = [f"genomon_config {genomon.path}: {len(genomon.origins)} keys taken; not used here:"]
    for what, places in groups.items():
        shown = ", ".join(places[:6]) + (f" and {len(places) - 6} more" if len(places) > 6 else "")
        lines.append(f"  {shown}: {what}")
    return lines if groups else lines[:1]
