"""The rule table (genomon_smk.plan.rules) is the one place for facts about rules: the config's
priorities and storage keys, the documentation and the readers of the table agree with it."""

import re
from pathlib import Path

import yaml

from genomon_smk.plan import rules
from genomon_smk.plan.planner import RULE_OF_STAGE, STAGE_PRIORITY
from genomon_smk.plan.stage_plan import STAGES, STORAGE_ROLES
from genomon_smk.plan.timeline import STAGE_COLOURS, STAGE_OF_RULE

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())


def test_the_configs_priority_and_storage_keys_are_the_tables():
    assert set(SCHEMA["properties"]["priorities"]["properties"]) == set(rules.PRIORITIES)
    assert set(SCHEMA["properties"]["storage"]["properties"]["rules"]["properties"]) == set(rules.TIER_KEYS)


def test_every_rule_that_sets_a_priority_reads_its_configured_one():
    text = "".join(path.read_text() for path in (REPO / "workflow" / "rules").glob("*.smk"))
    configured = set(re.findall(r'priority: config\["priorities"\]\["(\w+)"\]', text))
    assert configured == set(rules.PRIORITIES)


def test_config_readme_states_the_tables_default_priorities():
    row = next(line for line in (REPO / "config" / "README.md").read_text().splitlines()
               if line.startswith("| `priorities.<rule>`"))
    stated = {}
    for group in row.split(" | ")[1].split("; "):
        names, value = group.rsplit(" ", 1)
        stated.update({name: int(value) for name in names.split(", ")})
    assert stated == rules.PRIORITIES


def test_readers_take_stages_priorities_and_tiers_from_the_table():
    assert [stage for stage, _ in STAGES] == list(rules.STAGES)
    assert {name for _, members in STAGES for name, _ in members} == set(rules.FACTS)
    assert all(STAGE_OF_RULE[rule.name] == rule.stage for rule in rules.RULES)
    assert set(STAGE_COLOURS) == {*rules.STAGES, "other"}
    assert STAGE_PRIORITY == {stage: rules.PRIORITIES[rule] for stage, rule in RULE_OF_STAGE.items()}
    assert STAGE_PRIORITY["map"] < min(p for s, p in STAGE_PRIORITY.items() if s != "map")  # the paper's queue
    assert {key for key, _ in STORAGE_ROLES.values()} == set(rules.TIER_KEYS)
