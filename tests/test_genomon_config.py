"""genomon_config: Genomon v2.6's dna_genomon.cfg read as it is (plan/genomon_config.py), with the
public layout's copy in .test/config-genomon-cfg/; single options of an option string changed by
a mapping (config_check.merged_options)."""

from pathlib import Path

import jsonschema
import pytest

from genomon_smk.plan import genomon_config
from genomon_smk.plan.config_check import merge_option_mappings, merged_options, key_problem
from genomon_smk.plan.samplesheet import load_schema

REPO = Path(__file__).resolve().parents[1]
CFG = REPO / ".test" / "config-genomon-cfg" / "dna_genomon.cfg"
SCHEMA = load_schema(str(REPO / "workflow" / "schemas"), "config")


def test_the_public_layouts_reference_databases_and_parameters_become_config_keys():
    read = genomon_config.read_genomon_config(str(CFG))
    assert read.problems == []
    config = read.config
    here = CFG.parent
    assert config["reference"] == str(here.parent / "data" / "ref" / "genome.fa")  # against the cfg's directory
    assert config["regions"] == {"file": str(here / "test.interval_list")}
    assert config["simple_repeat_db"].endswith("config-genomon-cfg/simpleRepeat.bed.gz")
    assert config["hotspot_db"].endswith("data/hotspot_database.txt")
    assert config["fisher_mutation_call"]["pair_params"].startswith("--min_depth 10 ")
    assert config["mutation_util"]["pair_params"] == "--fish_pval 1.0 --realign_pval 1.0 --eb_pval 0.8 --tcount 4 --ncount 2"
    assert config["eb_filter"] == {"map_quality": 20, "base_quality": 15, "filter_flags": "UNMAP,SECONDARY,QCFAIL,DUP"}
    assert config["hotspot_call"]["params"] == '-t 0.1 -c 0.1 -R 0.1 -m 8.0 -S "-B -q 20 -Q2 -d 10000000"'
    assert config["sv_parse"] == {"params": ""} and config["paplot"]["include_unpair"] is True
    assert config["pmsignature_ind"] == {"enable": False, "signum_min": 2, "signum_max": 6, "trialnum": 10}
    assert "annotation" not in config  # active_annovar_flag = False: ANNOVAR's keys not taken
    # Every key is the cfg's own line.
    line = next(n for n, text in enumerate(CFG.read_text().splitlines(), 1) if text.startswith("[mutation_util]")) + 1
    assert read.origins[("mutation_util", "pair_params")] == f"{CFG}:{line}: [mutation_util] pair_params"
    # Each key without a counterpart is listed once, with what replaces it.
    unused = dict(read.unused)
    assert "profile's resources" in unused["[bwa_mem] qsub_option"]
    assert "envs/" in unused["[SOFTWARE] bwa"] and "envs/" in unused["[ENV] PERL5LIB"]
    assert "Java" in unused["[markduplicates] java_memory"]
    assert "split.chunks" in unused["[split_fastq] split_fastq_line_number"]
    assert len(read.unused) == len(set(place for place, _ in read.unused))
    summary = "\n".join(genomon_config.unused_summary(read))
    assert "[bwa_mem] qsub_option" in summary and len(summary.splitlines()) == 1 + len(set(unused.values()))


def test_flags_are_genomons_literal_true_and_annovar_keys_follow_its_flag(tmp_path):
    cfg = tmp_path / "dna_genomon.cfg"
    cfg.write_text("[REFERENCE]\nref_fasta = /ref/GRCh37.fa\nhotspot_db = /db/hotspot.txt\n"
                   "[SOFTWARE]\nannovar = /opt/annovar\n"
                   "[hotspot]\nactive_hotspot_flag = False\n"
                   "[annotation]\nactive_annovar_flag = True\nannovar_buildver = hg19\n"
                   "annovar_database = humandb\ntable_annovar_params = -buildver hg19 -remove\n"
                   "[paplot]\ninclude_unpair = true\n")
    read = genomon_config.read_genomon_config(str(cfg))
    assert read.config["hotspot_db"] is None  # the hotspot call off, as Genomon's flag says
    assert read.config["annotation"] == {"enable": True, "tool": "annovar", "annovar_dir": "/opt/annovar", "annovar_buildver": "hg19",
                                         "annovar_database": str(tmp_path / "humandb"),
                                         "table_annovar_params": "-buildver hg19 -remove"}
    assert read.problems == [f"{cfg}:14: [paplot] include_unpair: 'true': Genomon reads only `True` as on; write True or False"]
    # Keys this version's schema lacks are listed, not passed on.
    kept = genomon_config.within_schema(read, {"properties": {"reference": {}, "hotspot_db": {}}})
    assert kept == {"reference": "/ref/GRCh37.fa", "hotspot_db": None}
    assert any("annotation.tool" in what for _, what in read.unused)


def test_a_cfg_that_is_not_ini_is_refused_with_its_line(tmp_path):
    cfg = tmp_path / "bad.cfg"
    cfg.write_text("[REFERENCE]\njust words\n")
    with pytest.raises(ValueError, match=r"bad.cfg:2: not `key = value`"):
        genomon_config.read_genomon_config(str(cfg))


def test_single_options_change_a_genomon_option_string():
    base = "--min_depth 8 --base_quality 15 --samtools_params '-q 20 -BQ0 -d 10000000'"
    assert merged_options(base, {"--min_depth": 10}) == "--min_depth 10 --base_quality 15 --samtools_params '-q 20 -BQ0 -d 10000000'"
    assert merged_options(base, {"--base_quality": None, "--new": True}) == \
        "--min_depth 8 --samtools_params '-q 20 -BQ0 -d 10000000' --new"
    assert merged_options("-t 0.1 -m -1.5", {"-t": 0.2}) == "-t 0.2 -m -1.5"  # a negative number is a value
    with pytest.raises(ValueError, match="'min_depth' is not an option"):
        merged_options(base, {"min_depth": 10})


def test_an_options_mapping_is_merged_into_the_cfgs_string_or_the_default():
    config = {"mutation_util": {"pair_params": {"--eb_pval": 1.2}, "single_params": {"--count": 5}},
              "fisher_mutation_call": {"pair_params": {"min_depth": 1}}}
    base = {"mutation_util": {"pair_params": "--fish_pval 1.0 --eb_pval 0.8"}}
    problems = merge_option_mappings(config, SCHEMA, base)
    assert config["mutation_util"]["pair_params"] == "--fish_pval 1.0 --eb_pval 1.2"  # the cfg's string
    assert config["mutation_util"]["single_params"] == "--post10q 0.1 --r_post10q 0.1 --count 5"  # the default
    assert problems == [(("fisher_mutation_call", "pair_params"),
                         "'min_depth' is not an option: write it as the tool does, e.g. --min_depth")]
    # The mapping that cannot be merged is dropped: no schema type complaint beside the hint.
    assert "pair_params" not in config["fisher_mutation_call"]
    errors = jsonschema.validators.validator_for(SCHEMA)(SCHEMA).iter_errors(config)
    assert [e.message for e in errors if e.validator == "type"] == []


def test_a_problem_of_a_key_only_the_cfg_sets_names_the_cfgs_line(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("genomon_config: dna_genomon.cfg\n")
    origins = {("mutation_util", "pair_params"): "dna_genomon.cfg:120: [mutation_util] pair_params"}
    assert key_problem(("mutation_util", "pair_params"), "bad", [str(config)], origins=origins) == \
        "dna_genomon.cfg:120: [mutation_util] pair_params (config key 'mutation_util.pair_params'): bad"
    assert key_problem(("sv_filt", "grc"), "bad", [str(config)]).startswith(
        f"{config}: key 'sv_filt.grc' (not in this file: its default; add the key here to change it)")


def test_a_typo_in_a_section_or_key_is_refused_with_its_line_and_the_name_meant(tmp_path):
    cfg = tmp_path / "dna_genomon.cfg"
    cfg.write_text("[fisher_mutation_cal]\npair_params = --min_depth 4\nsingle_params = --min_depth 4\n"
                   "[indel_filter]\nparms = --min_depth 4\nqsub_option = -l s_vmem=2G\n"
                   "[mystery]\nkey = 1\n[bwa_mem]\nimage = /x.simg\n")
    read = genomon_config.read_genomon_config(str(cfg))
    assert read.problems[0] == (f"{cfg}:2: [fisher_mutation_cal] pair_params: not a section of Genomon v2.6's DNA "
                                "config (did you mean [fisher_mutation_call]?)")  # once per section
    assert read.problems[1].startswith(f"{cfg}:5: [indel_filter] parms: not a key of [indel_filter] in Genomon "
                                       "v2.6's DNA config (did you mean 'params'?)")
    assert read.problems[2] == f"{cfg}:8: [mystery] key: not a section of Genomon v2.6's DNA config"
    assert len(read.problems) == 3 and "indel_filter" not in read.config and "fisher_mutation_call" not in read.config
    # Genomon's keys without a counterpart stay listed, not refused.
    assert {"[indel_filter] qsub_option", "[bwa_mem] image"} <= set(dict(read.unused))


def test_the_annovar_keys_reach_this_versions_annotation_keys(tmp_path):
    """With active_annovar_flag = True the cfg's ANNOVAR keys pass the schema filter (the
    gene-annotation stage's keys), none listed as unused."""
    cfg = tmp_path / "dna_genomon.cfg"
    cfg.write_text("[SOFTWARE]\nannovar = /opt/annovar\n[annotation]\nactive_annovar_flag = True\n"
                   "annovar_buildver = hg19\nannovar_database = humandb\ntable_annovar_params = -remove\n")
    read = genomon_config.read_genomon_config(str(cfg))
    kept = genomon_config.within_schema(read, SCHEMA)
    assert kept["annotation"] == {"enable": True, "tool": "annovar", "annovar_dir": "/opt/annovar", "annovar_buildver": "hg19",
                                  "annovar_database": str(tmp_path / "humandb"), "table_annovar_params": "-remove"}
    assert not any("annotation" in what for _, what in read.unused), read.unused
