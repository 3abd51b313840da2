"""Config is not code (issue 24, item 5): every free-text options key reaches its tool as quoted
words, the same way in every rule; shell syntax in a value runs nothing, and a value that cannot
be split into words is refused before any job, naming the key. Shell syntax in a value (or in an
options string nested in one, `-S '...'`) is refused before any job too, quoting the user's own
words (issue 34): quoted, it ran nothing but failed every job of its tool."""

import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from snakemake.exceptions import WorkflowError

from conftest import parse_workflow, run_snakemake, write_config
from genomon_smk.plan.config_check import (
    config_problems,
    leaf_paths,
    option_keys,
    quoted_options,
    typed_command_line,
    value_at,
)
from genomon_smk.plan import snakemake_adapter as adapter
from genomon_smk.plan.tool_options import CHECKED, tool_option_problems
from genomon_smk.plan.path_limits import path_problems
from genomon_smk.plan.samplesheet import load_schema

SCHEMA = load_schema(str(Path(__file__).resolve().parents[1] / "workflow" / "schemas"), "config")
# Every free-text key of the schema: a tool's options as one string.
OPTION_KEYS = [
    ("map", "bwa_params"),
    ("annotation", "table_annovar_params"),
    ("hotspot_call", "params"),
    ("fisher_mutation_call", "pair_params"),
    ("fisher_mutation_call", "single_params"),
    ("realignment_filter", "params"),
    ("indel_filter", "params"),
    ("breakpoint_filter", "params"),
    ("mutation_util", "pair_params"),
    ("mutation_util", "single_params"),
    ("sv_parse", "params"),
    ("sv_merge", "params"),
    ("sv_filt", "params"),
    ("sv_filt", "sv_utils_params"),
]


def payload(directory, name):
    """Shell syntax that would create files in `directory` if it ran: command substitution, a
    command separator, backquotes and a pipe."""
    return f"$(touch {directory}/{name}.sub) ; touch {directory}/{name}.semi `touch {directory}/{name}.back` | touch {directory}/{name}.pipe"


def nested(path, value):
    """{'a': {'b': value}} for the key path ('a', 'b')."""
    for key in reversed(path):
        value = {key: value}
    return value


def merged(*configs):
    result = {}
    for config in configs:
        for section, values in config.items():
            result.setdefault(section, {}).update(values)
    return result


def test_every_free_text_key_of_the_schema_is_an_options_key():
    """The schema marks them ($defs/options), so the config check finds every one; no other key
    ending in params is left a plain string."""
    assert option_keys(SCHEMA) == OPTION_KEYS
    params_keys = [name for name in yaml.safe_dump(SCHEMA).split() if name.endswith("params:")]
    assert len(params_keys) == len(OPTION_KEYS)


@pytest.mark.parametrize("key", OPTION_KEYS, ids=".".join)
def test_shell_syntax_in_an_options_value_is_passed_as_text(tmp_path, key):
    value = payload(tmp_path, "x")
    printed = subprocess.run(["bash", "-c", f"printf '%s\\n' {quoted_options(value)}"],
                             capture_output=True, text=True, check=True).stdout
    assert printed.splitlines() == shlex.split(value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("key", OPTION_KEYS, ids=".".join)
@pytest.mark.parametrize("value, word", [
    ("-t 0.1 ; rm -rf X", ";"), ("-T 0 $(touch x)", "$(touch"), ("-a `id`", "`id`"), ("-a 1 | tee y", "|"),
    ("-a 1 >out", ">out"), ("-a 1 2>err", "2>err"), ("-a 1&&", "1&&"), ("-a $HOME", "$HOME"), ("-a 1;", "1;"),
])
def test_shell_syntax_in_an_options_value_is_refused_quoting_the_user_s_words(tmp_path, key, value, word):
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(nested(key, value)))
    problems = config_problems(yaml.safe_load(config_file.read_text()) | {"reference": "ref.fa"}, SCHEMA,
                               [str(config_file)])
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{config_file}:{len(key)}: key '{'.'.join(key)}': {word!r} in {value!r} "
                                  "is shell syntax"), problems


def test_option_values_without_shell_syntax_pass():
    for value in ("--ff UNMAP,SECONDARY,QCFAIL,DUP", "-R '@RG\\tID:x'", "--name 'two words' --x=a&b", "-t 0.1"):
        assert config_problems(nested(("map", "bwa_params"), value) | {"reference": "ref.fa"}, SCHEMA, []) == [], value


@pytest.mark.parametrize("key", OPTION_KEYS, ids=".".join)
def test_an_options_value_with_an_unbalanced_quote_is_refused_naming_the_key(tmp_path, key):
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(nested(key, "--name 'open")))
    problems = config_problems(yaml.safe_load(config_file.read_text()) | {"reference": "ref.fa"}, SCHEMA,
                               [str(config_file)])
    assert len(problems) == 1
    assert problems[0].startswith(f"{config_file}:{len(key)}: key '{'.'.join(key)}': cannot be split into options")
    assert "No closing quotation" in problems[0] and "balance its quotes" in problems[0]


def test_every_rule_passes_the_options_quoted(tmp_path, testdata, no_slurm_probe):
    """A dry run of every stage (a tumor-only pair too, for the single_params keys) with words in
    every options key that a shell would change (a glob, spaces, a quote): each rule's command
    holds the value as quoted words (or, for the steps that take one options string, that
    string quoted, alone or as the start of the string), never bare. With Genomon's own mutation tools (stand-ins on PATH that never
    run), whose options are not parsed beforehand as the project's own tools' are."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text((testdata / "pairs.tsv").read_text() + "pon1\t\t\n")
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    for tool in ("fisher", "mutfilter", "EBFilter", "mutil", "hotspotCall"):
        (upstream / tool).write_text("#!/bin/sh\nexit 1\n")
        (upstream / tool).chmod(0o755)
    # Not ANNOVAR's: its options are read before any job for its protocols' files, and reach
    # table_annovar.pl as one quoted string split without a shell (tests/test_annotation_stage.py).
    values = {key: f"--{'.'.join(key)} 'two words' '{tmp_path}/*' \"it's\"" for key in OPTION_KEYS
              if key != ("annotation", "table_annovar_params")}
    config = write_config(tmp_path, testdata, pairs=str(pairs), split={"chunks": 1}, mutation_tools="upstream",
                          hotspot_db=str(testdata / "hotspot_database.txt"),  # hotspot_call.params is used
                          **merged(*(nested(key, value) for key, value in values.items())))
    env = {**no_slurm_probe, "PATH": f"{upstream}:{no_slurm_probe['PATH']}"}
    output = run_snakemake(config, "-n", "-p", env=env).stdout
    for key, value in values.items():
        quoted = quoted_options(value)
        # As words; or quoted as one string, alone or first of a longer options string
        # (filter_mutation's --mutil-options: the key's value, then the hotspot database).
        assert quoted in output or shlex.quote(quoted)[:-1] in output, ".".join(key)
    assert f" {tmp_path}/* " not in output


def test_shell_syntax_in_an_options_value_stops_the_plan_with_its_file_and_line(tmp_path, testdata):
    config = write_config(tmp_path, testdata, map={"bwa_params": "-T 0 " + payload(tmp_path, "bwa")})
    with pytest.raises(WorkflowError) as refused:
        parse_workflow(config)
    line = next(n for n, text in enumerate(Path(config).read_text().splitlines(), 1) if "bwa_params" in text)
    assert f"config.yaml:{line}: key 'map.bwa_params': '$(touch' in " in str(refused.value)
    assert list(tmp_path.glob("bwa.*")) == []


@pytest.mark.parametrize("place", ["$TMPDIR/$(touch x)", "$TMPDIR/`touch x`", '$TMPDIR/" ; touch x ; "',
                                   "$TMPDIR\\"])
def test_a_tier_place_the_job_shell_expands_may_not_run_a_command(place):
    problems = path_problems("storage.paths.node_local", place, expanded_by_job=True)
    assert len(problems) == 1 and "run no command" in problems[0]


def test_a_tier_place_may_name_variables():
    assert path_problems("storage.paths.cache", "${TMPDIR:-/tmp}/genomon-cache", expanded_by_job=True) == []


@pytest.mark.parametrize(
    "key, value, complaint",
    [
        (("fisher_mutation_call", "pair_params"), "--min_dpeth 8", "unrecognized arguments: --min_dpeth 8"),
        (("fisher_mutation_call", "single_params"), "--min_depth eight", "argument -d/--min_depth: invalid int value"),
        (("indel_filter", "params"), "--search_length", "argument -l/--search_length: expected one argument"),
        (("mutation_util", "pair_params"), "--fish_pval 1.0 --eb_pvalue 4", "unrecognized arguments: --eb_pvalue 4"),
        (("hotspot_call", "params"), "-t 0.1 --bogus", "unrecognized arguments: --bogus"),
    ],
    ids=lambda item: ".".join(item) if isinstance(item, tuple) else None,
)
def test_a_mutation_tool_option_its_tool_does_not_take_is_refused_naming_the_key(tmp_path, key, value, complaint):
    values = {key: value}
    problems = tool_option_problems(values)
    assert [path for path, _ in problems] == [key]
    assert complaint in problems[0][1], problems


@pytest.mark.parametrize("key, value, complaint", [
    (("hotspot_call", "params"), "-t 0.1 -S '-B $(rm -rf x)'", "'$(rm' in '-B $(rm -rf x)' is shell syntax"),
    (("hotspot_call", "params"), "-S '-B -q 20 ; id'", "';' in '-B -q 20 ; id' is shell syntax"),
    (("fisher_mutation_call", "pair_params"), "--samtools_params '-q 20 \"open'", "cannot be split into samtools"),
    (("indel_filter", "params"), "--samtools_params '-q 20 extra words'", "'extra' is not a samtools mpileup option"),
])
def test_a_nested_samtools_options_string_is_checked_too(key, value, complaint):
    problems = tool_option_problems({key: value})
    assert [path for path, _ in problems] == [key] and complaint in problems[0][1], problems


def test_a_refused_tool_option_names_the_user_s_words_not_the_checker_s_placeholders():
    """Issue 34: `unrecognized arguments: N.bam out db` named the files the check adds."""
    problems = tool_option_problems({("hotspot_call", "params"): "-t 0.1 rm X"})
    assert len(problems) == 1 and "unrecognized arguments: rm X" in problems[0][1], problems
    assert "N.bam" not in problems[0][1] and "'-t 0.1 rm X'" in problems[0][1]


def test_the_default_config_s_tool_options_all_parse():
    defaults = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())
    values = {path: value_at(defaults, path) for path in CHECKED}
    assert all(isinstance(value, str) for value in values.values()), values
    assert tool_option_problems(values) == []


def test_a_bad_tool_option_stops_the_plan_with_its_file_and_line(tmp_path, testdata):
    config = write_config(tmp_path, testdata, indel_filter={"params": "--search_length 40 --neighbour 5"})
    with pytest.raises(WorkflowError) as refused:
        parse_workflow(config)
    line = next(n for n, text in enumerate(Path(config).read_text().splitlines(), 1) if "--neighbour" in text)
    assert f"config.yaml:{line}: key 'indel_filter.params': " in str(refused.value)
    assert "unrecognized arguments: --neighbour 5" in str(refused.value)


def test_a_key_set_twice_in_a_config_file_is_refused_with_both_lines(tmp_path):
    """YAML keeps the last of two `split:` blocks silently; the check names both."""
    config_file = tmp_path / "config.yaml"
    config_file.write_text("reference: ref.fa\nsplit:\n  chunks: 3\nsplit:\n  chunks: 5\n"
                           "paplot:\n  include_unpair: true\n  include_unpair: false\n")
    problems = config_problems(yaml.safe_load(config_file.read_text()), SCHEMA, [str(config_file)])
    assert problems == [
        f"{config_file}:4: key 'split': set twice (first on line 2): only this one would count; merge the two",
        f"{config_file}:8: key 'paplot.include_unpair': set twice (first on line 7): only this one would count;"
        " merge the two",
    ]


def test_nested_command_line_values_get_the_types_a_config_file_gives():
    """Snakemake reads `--config 'split={chunks: 3}'` inside the braces as text."""
    config = {"split": {"chunks": "3"}, "map": {"threads": "auto", "bwa_params": "-T 0"},
              "paplot": {"include_unpair": "false"}, "storage": {"paths": {"cache": "null"}}, "cluster": "slurm"}
    given = {key: config[key] for key in ("split", "map", "paplot", "storage", "cluster")}
    assert sorted(leaf_paths(given)) == [("cluster",), ("map", "bwa_params"), ("map", "threads"),
                                         ("paplot", "include_unpair"), ("split", "chunks"),
                                         ("storage", "paths", "cache")]
    typed_command_line(config, given)
    assert config == {"split": {"chunks": 3}, "map": {"threads": "auto", "bwa_params": "-T 0"},
                      "paplot": {"include_unpair": False}, "storage": {"paths": {"cache": None}},
                      "cluster": "slurm"}


@pytest.mark.parametrize(("given", "typed"), [("false", False), ("true", True), ("null", None), ("auto", "auto")])
def test_top_level_command_line_values_get_the_types_a_config_file_gives(given, typed):
    """`--config snakemake_patches=false`: Snakemake types only `True`/`False` and numbers."""
    config = {"snakemake_patches": given, "cluster": "slurm"}
    typed_command_line(config, {"snakemake_patches": given})
    assert config == {"snakemake_patches": typed, "cluster": "slurm"}


def test_a_bad_command_line_value_is_blamed_on_the_command_line_in_plain_words(tmp_path):
    config_file = tmp_path / "config.yaml"
    config_file.write_text("reference: ref.fa\nmap:\n  threads: 2\nmarkdup:\n  threads: fast\n")
    config = yaml.safe_load(config_file.read_text()) | {"split": {"chunks": "x"}}
    problems = config_problems(config, SCHEMA, [str(config_file)], frozenset({("split", "chunks")}))
    assert problems == [
        f"{config_file}:5: key 'markdup.threads': 'fast': not a thread count: give a whole number, 1 or more,"
        " or auto",
        "--config: key 'split.chunks': 'x' is not of type 'integer'",
    ]


def test_a_nested_command_line_number_is_taken_as_a_number(tmp_path, testdata):
    config = write_config(tmp_path, testdata)
    workflow = parse_workflow(config, command_line={"split": {"chunks": "3"}, "map": {"threads": "1"}})
    assert workflow.config["split"]["chunks"] == 3 and workflow.config["map"]["threads"] == 1
    # Only --config's values: a file's quoted text stays text, and its problems stay the file's.
    assert adapter.command_line_config(workflow) == {"split": {"chunks": "3"}, "map": {"threads": "1"}}
    with pytest.raises(WorkflowError) as refused:
        parse_workflow(config, command_line={"markdup": {"threads": "0"}})
    assert "--config: key 'markdup.threads': 0: not a thread count" in str(refused.value)


def test_a_bad_tool_option_given_with_config_is_blamed_on_config(tmp_path, testdata):
    """Every config check names where the key was set (config_check.key_problem), not only the schema's."""
    config = write_config(tmp_path, testdata)
    with pytest.raises(WorkflowError) as refused:
        parse_workflow(config, command_line={"indel_filter": {"params": "--search_length 40 --neighbour 5"}})
    assert "--config: key 'indel_filter.params': " in str(refused.value)
    assert "unrecognized arguments: --neighbour 5" in str(refused.value)
