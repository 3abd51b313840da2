"""The config checked against its schema, with one short message per problem naming the config
file, the line and the key (and, for a misspelled key, the key it probably meant), instead of
jsonschema's dump of the whole schema; and the one way a free-text options key reaches a tool.

Config is not code: an options key (the schema's `$defs/options`, e.g. map.bwa_params) is split
into words as a shell would split it and every word is quoted again (`quoted_options`), so
`$(...)`, `;` and backquotes reach the tool as text and never run. A value that cannot be split
(an unbalanced quote) is refused before any job, naming the key.

Deliberate difference from upstream Genomon (docs/differences.md): Genomon writes its params
into each job's shell script as they are.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex

import jsonschema
import yaml


def mapping_keys(path: str) -> list[tuple[tuple[str, ...], int, int]]:
    """Every mapping key of a YAML file in file order, repeats included: (its path of keys, its
    line (1-based), the number of the mapping it is in)."""
    with open(path) as handle:
        root = yaml.compose(handle)
    keys: list[tuple[tuple[str, ...], int, int]] = []
    mappings = 0

    def walk(node, prefix: tuple[str, ...]) -> None:
        nonlocal mappings
        if isinstance(node, yaml.MappingNode):
            mapping, mappings = mappings, mappings + 1
            for key, value in node.value:
                keys.append((prefix + (str(key.value),), key.start_mark.line + 1, mapping))
                walk(value, prefix + (str(key.value),))

    if root is not None:
        walk(root, ())
    return keys


def key_lines(path: str, keys=None) -> dict[tuple[str, ...], int]:
    """Line (1-based) of every mapping key in a YAML file, by its path of keys (the last line of a
    repeated key, the one YAML keeps); keys: the file's mapping_keys, when already read."""
    return {key: line for key, line, _ in (mapping_keys(path) if keys is None else keys)}


def duplicate_keys(path: str, keys=None) -> list[str]:
    """`FILE:LINE: key 'a.b': set twice ...` for each key a mapping of a YAML file repeats: YAML
    keeps the last one silently, dropping the whole first block (its other keys too); keys: the
    file's mapping_keys, when already read."""
    first: dict[tuple[int, str], int] = {}
    problems = []
    for key, line, mapping in mapping_keys(path) if keys is None else keys:
        seen = first.setdefault((mapping, key[-1]), line)
        if seen != line:
            problems.append(
                f"{path}:{line}: key '{'.'.join(key)}': set twice (first on line {seen}):"
                " only this one would count; merge the two"
            )
    return problems


def describe(error: jsonschema.ValidationError) -> tuple[tuple[str, ...], str]:
    """(path of the offending key, message) for one schema error."""
    path = tuple(str(part) for part in error.absolute_path)
    if error.validator == "additionalProperties":
        # The failing subschema is the object's: its properties are the keys allowed here.
        known = sorted(error.schema.get("properties", {}))
        messages = []
        for key in sorted(set(error.instance) - set(known)):
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.5)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            messages.append((path + (key,), f"unknown key{hint}; known keys here: {', '.join(known)}"))
        return messages[0] if len(messages) == 1 else (path, "; ".join(f"'{p[-1]}': {m}" for p, m in messages))
    if isinstance(error.schema, dict) and "x-message" in error.schema:  # the schema's own words
        return path, f"{error.instance!r}: {error.schema['x-message']}"
    return path, error.message


OPTIONS_REF = "#/$defs/options"


def option_keys(schema: dict, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The key paths of every free-text options key (schema `$ref: #/$defs/options`)."""
    keys = []
    for name, sub in schema.get("properties", {}).items():
        if sub.get("$ref") == OPTIONS_REF:
            keys.append(prefix + (name,))
        else:
            keys += option_keys(sub, prefix + (name,))
    return keys


def quoted_options(text: str) -> str:
    """An options value as shell words: split as a shell splits it, each word quoted again, so
    that a word is passed as text and nothing in it runs (raises ValueError: unbalanced quote)."""
    return shlex.join(shlex.split(text))


# Shell syntax in an options value: the words are passed to the tool quoted, so none of it would
# run; it would reach the tool as a stray argument and fail every job of the cohort instead.
SHELL_OPERATORS = re.compile(r"^(?:[;|&<>]|\d?>|&>)|[;|&]$|\$[({A-Za-z_]|`")


def shell_syntax(words: list[str]) -> str | None:
    """The first word that a shell would read as an operator, a redirection or an expansion."""
    return next((word for word in words if SHELL_OPERATORS.search(word)), None)


def option_problem(text: object) -> str | None:
    """Why an options value cannot be passed as words, or None."""
    if not isinstance(text, str):
        return None  # the schema reports the type
    try:
        words = shlex.split(text)
    except ValueError as error:
        return f"cannot be split into options as a shell would ({error}): {text!r}; balance its quotes"
    if (word := shell_syntax(words)) is not None:
        return shell_syntax_message(word, text)
    return None


def shell_syntax_message(word: str, text: str) -> str:
    return (f"{word!r} in {text!r} is shell syntax (a command, a pipe, a redirection or an "
            "expansion): the options are given to the tool as words and no shell reads them; "
            "write only the tool's own options and values")


def value_at(config: dict, path: tuple[str, ...]) -> object:
    """The value at a key path, or None when a key on the way is not set."""
    for key in path:
        if not isinstance(config, dict) or key not in config:
            return None
        config = config[key]
    return config


def underlay(base: dict, config: dict) -> dict:
    """`config` on top of `base`: mappings merged key by key, any other value of `config` wins."""
    merged = dict(base)
    for key, value in config.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            value = underlay(merged[key], value)
        merged[key] = value
    return merged


def cluster_fragment(cluster: object, profiles_dir: str) -> str | None:
    """The storage fragment of a cluster profile (profiles/CLUSTER/storage.yaml) named by the
    config key `cluster`, when there is one."""
    if not isinstance(cluster, str) or not cluster or "/" in cluster or cluster.startswith("."):
        return None
    path = os.path.join(profiles_dir, cluster, "storage.yaml")
    return path if os.path.isfile(path) else None


def leaf_paths(mapping: dict, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The key paths of a nested mapping's leaves."""
    paths = []
    for key, value in mapping.items():
        path = prefix + (str(key),)
        paths += leaf_paths(value, path) if isinstance(value, dict) and value else [path]
    return paths


def typed_command_line(config: dict, command_line: dict) -> None:
    """A nested --config value reaches the config as text (`--config 'split={chunks: 3}'`: '3';
    Snakemake reads inside braces with YAML's base loader): each such value that YAML reads as a
    number, true/false or null gets that type, as in a config file. Top-level values are typed
    already."""
    for path in leaf_paths(command_line):
        if len(path) < 2:
            continue
        node = value_at(config, path[:-1])
        last = path[-1]
        value = node.get(last) if isinstance(node, dict) else None
        if isinstance(value, str):
            try:
                typed = yaml.safe_load(value)
            except yaml.YAMLError:
                continue
            if typed is None or isinstance(typed, (bool, int, float)):
                node[last] = typed


def config_problems(config: dict, schema: dict, config_files: list[str],
                    command_line: frozenset[tuple[str, ...]] = frozenset()) -> list[str]:
    """Every schema problem of `config` and every options value that cannot be split, as
    `FILE:LINE: key 'a.b': message`; the line is looked up in the last config file that sets the
    key (later files override earlier ones); a key given with --config (command_line: its key
    paths) is blamed on --config, which overrides every file."""
    keys = {path: mapping_keys(path) for path in config_files}  # each file read once
    lines = [(path, key_lines(path, keys[path])) for path in reversed(config_files)]
    validator = jsonschema.validators.validator_for(schema)(schema)
    problems = [
        describe(error)
        for error in sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    ]
    problems += [
        (path, problem)
        for path in option_keys(schema)
        if (problem := option_problem(value_at(config, path)))
    ]
    return [key_problem(path, message, config_files, lines, command_line) for path, message in problems] + [
        problem for name in config_files for problem in duplicate_keys(name, keys[name])
    ]


def key_problem(path: tuple[str, ...], message: str, config_files: list[str], lines=None,
                command_line: frozenset[tuple[str, ...]] = frozenset()) -> str:
    """`FILE:LINE: key 'a.b': message`, the line of the last config file that sets the key (the
    last file without a line when none sets it: the schema's default); lines: key_lines of the
    files, last first, when already read; `--config: key 'a.b': message` for a key given with
    --config (command_line: its key paths; it overrides every file)."""
    key = ".".join(path) or "(top level)"
    if path and any(path[: len(given)] == given or given[: len(path)] == path for given in command_line):
        return f"--config: key '{key}': {message}"
    if lines is None:
        lines = [(name, key_lines(name)) for name in reversed(config_files)]
    where = next(((name, found[path]) for name, found in lines if path in found), None)
    place = f"{where[0]}:{where[1]}" if where else (config_files[-1] if config_files else "config")
    return f"{place}: key '{key}': {message}"
