"""The rule table (genomon_smk.plan.rules) is the one place for facts about rules: the config's
priorities and storage keys, the documentation and the readers of the table agree with it."""

import re
from pathlib import Path

import pytest
import yaml

from genomon_smk.plan import rules
from genomon_smk.plan.planner import paper_pipeline
from genomon_smk.plan.timeline import STAGE_COLOURS

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())


def test_the_configs_priority_and_storage_keys_are_the_tables():
    assert set(SCHEMA["properties"]["priorities"]["properties"]) == set(rules.PRIORITIES)
    assert set(SCHEMA["properties"]["storage"]["properties"]["rules"]["properties"]) == set(rules.TIER_KEYS)


def test_every_rule_that_sets_a_priority_reads_its_configured_one():
    text = "".join(path.read_text() for path in (REPO / "workflow" / "rules").glob("*.smk"))
    configured = set(re.findall(r'priority: (?:in_pair_order\()?config\["priorities"\]\["(\w+)"\]', text))
    assert configured == set(rules.PRIORITIES)


def test_config_readme_states_the_tables_default_priorities():
    row = next(line for line in (REPO / "config" / "README.md").read_text().splitlines()
               if line.startswith("| `priorities.<rule>`"))
    stated = {}
    for group in row.split(" | ")[1].split("; "):
        names, value = group.rsplit(" ", 1)
        stated.update({name: int(value) for name in names.split(", ")})
    assert stated == rules.PRIORITIES


def test_every_rule_of_the_workflow_is_in_the_table_and_nothing_else():
    text = "".join(path.read_text() for path in (REPO / "workflow").rglob("*.smk"))
    text += (REPO / "workflow" / "Snakefile").read_text()
    defined = re.findall(r"^ *rule (\w+):", text, flags=re.M)
    assert len(defined) == len(set(defined))
    assert set(defined) == set(rules.FACTS) | {rules.TARGET_RULE, rules.SETUP_TARGET} | rules.BATCH_RULES


def test_the_tables_tier_roles_are_the_configs_storage_keys():
    """A rule's storage.rules key and roles (`output`, `temp`) are the ones the config can set."""
    roles = {}
    for rule in rules.RULES:
        if rule.tier_key:
            roles.setdefault(rule.tier_key, set()).update(rule.tier_roles)
    schema = SCHEMA["properties"]["storage"]["properties"]["rules"]["properties"]
    assert roles == {key: set(value["properties"]) for key, value in schema.items()}


def test_map_jobs_wait_behind_every_other_prioritised_rule():
    """The Fugaku paper's low-priority queue: a pair's later stages overtake the next pair's map jobs."""
    assert rules.PRIORITIES["map_reads"] < min(p for rule, p in rules.PRIORITIES.items() if rule != "map_reads")


def test_the_planner_and_the_timeline_name_the_tables_rules_and_stages():
    """The planner's paper-shaped pipeline is made of the workflow's rules (so the config's
    priorities and the table's stages apply to it), and the timeline has a colour of its own for
    every stage of the table."""
    jobs = paper_pipeline()
    assert {job.rule for job in jobs} <= set(rules.FACTS)
    assert {job.stage for job in jobs} == {"split files", "map", "markdup", "merge bam", "identify mutations",
                                           "merge mutation"}
    assert set(STAGE_COLOURS) == {*rules.STAGES, "other"}
    assert len(set(STAGE_COLOURS.values())) == len(STAGE_COLOURS)


def test_a_rule_is_counted_by_a_function_of_the_cohort():
    """Each rule's jobs come from the cohort's shape: nothing (a rule with 0 jobs in an empty
    cohort but the run-wide ones) or a count that grows with the cohort."""
    empty = rules.CohortShape(samples=0, pairs=0, chunks=4, regions=5, mutation_regions=4, qc_samples=0)
    assert {rule.name for rule in rules.RULES if rule.jobs(empty)} == {"utilisation_timeline"}
    with pytest.raises(TypeError, match="per` is a Per"):
        rules.Rule("new_rule", "qc", "sample")


PAIR = rules.CohortShape(samples=2, pairs=1, chunks=8, regions=2, mutation_regions=4)  # the bench preset
HUMAN_PAIR = rules.CohortShape(samples=2, pairs=1, chunks=8, regions=75, mutation_regions=74)


@pytest.mark.parametrize("shape, cores, expected", [
    # Two cores and a pair: a map job on both (one bwa, one copy of its index), markdup jobs
    # one thread each, side by side.
    (PAIR, 2, {"map_reads": 2, "markdup": 1}),
    (PAIR, 8, {"map_reads": 8, "markdup": 2}),
    # A 48-core workstation and a human pair: map jobs at map's most (8), 6 side by side;
    # 150 markdup jobs x 1.
    (HUMAN_PAIR, 48, {"map_reads": 8, "markdup": 1}),
    (PAIR, 1, {"map_reads": 1, "markdup": 1}),
    # More cores than the jobs use: each rule's most.
    (PAIR, 1000, {"map_reads": 8, "markdup": 4}),
    # A cluster (no local cores): Genomon's 2 per job, whatever the node.
    (PAIR, None, {"map_reads": 2, "markdup": 2}),
    (HUMAN_PAIR, None, {"map_reads": 2, "markdup": 2}),
])
def test_auto_threads_give_map_jobs_a_local_runs_cores_and_share_them_among_markdup_jobs(shape, cores, expected):
    config = {"map": {"threads": "auto"}, "markdup": {"threads": "auto"}}
    assert {name: rules.FACTS[name].job_threads(config, shape, cores) for name in expected} == expected


@pytest.mark.parametrize("cores", [2, 48, None])
def test_a_configured_thread_count_is_every_jobs_everywhere(cores):
    config = {"map": {"threads": 6}, "markdup": {"threads": 3}}
    assert rules.FACTS["map_reads"].job_threads(config, HUMAN_PAIR, cores) == 6
    assert rules.FACTS["markdup"].job_threads(config, HUMAN_PAIR, cores) == 3
    with pytest.raises(ValueError, match="its own"):
        rules.FACTS["merge_bam"].job_threads(config, HUMAN_PAIR, cores)


def test_every_rule_with_configured_threads_reads_them_from_the_table():
    """A rule the table gives Threads takes `threads: job_threads(<rule>)`, and its config key
    accepts a number or auto, auto by default (documented in config/README.md)."""
    text = "".join(path.read_text() for path in (REPO / "workflow" / "rules").glob("*.smk"))
    assert set(re.findall(r'threads: job_threads\("(\w+)"\)', text)) == {
        rule.name for rule in rules.RULES if rule.threads}
    readme = (REPO / "config" / "README.md").read_text()
    for rule in rules.RULES:
        if rule.threads:
            key = SCHEMA["properties"][rule.threads.config_key]["properties"]["threads"]
            assert key["$ref"] == "#/$defs/threads" and key["default"] == rules.AUTO
            assert f"| `{rule.threads.config_key}.threads` | auto |" in readme

