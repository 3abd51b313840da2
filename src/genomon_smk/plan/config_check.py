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
    """A --config value that YAML would type reaches the config as text: nested ones
    (`--config 'split={chunks: 3}'`: '3'; Snakemake reads inside braces with YAML's base loader)
    and top-level true/false/null (`--config snakemake_patches=false`: Snakemake types numbers
    and only `True`/`False`). Each such value that YAML reads as a number, true/false or null
    gets that type, as in a config file."""
    for path in leaf_paths(command_line):
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
                    command_line: frozenset[tuple[str, ...]] = frozenset(),
                    origins: dict[tuple[str, ...], str] | None = None) -> list[str]:
    """Every schema problem of `config` and every options value that cannot be split, as
    `FILE:LINE: key 'a.b': message`; the line is looked up in the last config file that sets the
    key (later files override earlier ones); a key given with --config (command_line: its key
    paths) is blamed on --config, which overrides every file; a key that only genomon_config
    sets (origins: its `FILE:LINE: [section] key`) on that line."""
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
    return [key_problem(path, message, config_files, lines, command_line, origins) for path, message in problems] + [
        problem for name in config_files for problem in duplicate_keys(name, keys[name])
    ]


def key_problem(path: tuple[str, ...], message: str, config_files: list[str], lines=None,
                command_line: frozenset[tuple[str, ...]] = frozenset(),
                origins: dict[tuple[str, ...], str] | None = None) -> str:
    """`FILE:LINE: key 'a.b': message`, the line of the last config file that sets the key;
    lines: key_lines of the files, last first, when already read; `--config: key 'a.b': message`
    for a key given with --config (command_line: its key paths; it overrides every file); for a
    key no file sets, the genomon_config line that gives it (origins), else the last file, saying
    the key is to be added there (its value is the default)."""
    key = ".".join(path) or "(top level)"
    if path and any(path[: len(given)] == given or given[: len(path)] == path for given in command_line):
        return f"--config: key '{key}': {message}"
    if lines is None:
        lines = [(name, key_lines(name)) for name in reversed(config_files)]
    where = next(((name, found[path]) for name, found in lines if path in found), None)
    if where:
        return f"{where[0]}:{where[1]}: key '{key}': {message}"
    # An item of a list the file sets (reference.1): the line of the list's key.
    where = next(((name, found[path[:n]]) for n in range(len(path) - 1, 0, -1)
                  for name, found in lines if path[:n] in found and path[n].isdigit()), None)
    if where:
        return f"{where[0]}:{where[1]}: key '{key}': {message}"
    origin = next((origins[path[:n]] for n in range(len(path), 0, -1) if origins and path[:n] in origins), None)
    if origin:
        return f"{origin} (config key '{key}'): {message}"
    if not path or not config_files:
        return f"{config_files[-1] if config_files else 'config'}: key '{key}': {message}"
    return f"{config_files[-1]}: key '{key}' (not in this file: its default; add the key here to change it): {message}"


def option_default(schema: dict, path: tuple[str, ...]) -> object:
    """The schema's default of a key path, or None."""
    for key in path:
        schema = schema.get("properties", {}).get(key, {})
    return schema.get("default")


def option_words(text: str) -> list[list[str]]:
    """An option string as [option, value] and [option] (a flag) items, and [word] for a word
    before any option: a word that starts with '-' is an option unless it holds a space or is a
    number (`--samtools_params '-q 20 -BQ0'` and `-m -1` are an option and its value)."""
    items: list[list[str]] = []
    for word in shlex.split(text):
        is_value = not word.startswith("-") or " " in word or _is_number(word)
        if is_value and items and items[-1][0].startswith("-") and len(items[-1]) == 1:
            items[-1].append(word)
        else:
            items.append([word])
    return items


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def merged_options(base: str, changes: dict) -> str:
    """`base` (a Genomon option string) with single options changed: {option: value} replaces the
    option's value or adds it at the end; true: the option as a flag without value; null or false:
    the option left out (raises ValueError for a key that is not an option)."""
    items = option_words(base or "")
    for option, value in changes.items():
        option = str(option)
        if not option.startswith("-"):
            raise ValueError(f"'{option}' is not an option: write it as the tool does, e.g. --{option}")
        items = [item for item in items if item[0] != option] if value is None or value is False else items
        if value is None or value is False:
            continue
        new = [option] if value is True else [option, str(value)]
        for index, item in enumerate(items):
            if item[0] == option:
                items[index] = new
                break
        else:
            items.append(new)
    return shlex.join(word for item in items for word in item)


def merge_option_mappings(config: dict, schema: dict, base: dict) -> list[tuple[tuple[str, ...], str]]:
    """Every options key given as a mapping of option -> value (`mutation_util: {pair_params:
    {--eb_pval: 1.2}}`) made the option string it means: the base's string (base: what
    genomon_config gave, else the schema's default) with those options changed (merged_options).
    Returns (key path, problem) for each mapping that cannot be merged."""
    problems = []
    for path in option_keys(schema):
        changes = value_at(config, path)
        if not isinstance(changes, dict):
            continue
        given = value_at(base, path)
        start = given if isinstance(given, str) else option_default(schema, path)
        try:
            merged = merged_options(start if isinstance(start, str) else "", changes)
        except ValueError as error:
            problems.append((path, str(error)))
            # The problem says it: the schema's "is not of type 'string'" would only mislead.
            del value_at(config, path[:-1])[path[-1]]
            continue
        value_at(config, path[:-1])[path[-1]] = merged
    return problems


class ConfigRefused(SystemExit):
    """A config refused with every problem found, printed as a list (refusal_text) without
    Snakemake's traceback-style header: the process exits with status 1. (An in-process parse,
    as tests make, sees it as this exception; str() is the text.)"""

    def __init__(self, problems: list[str], warnings: list[str] = ()):
        super().__init__(1)
        self.problems = list(problems)
        self.warnings = list(warnings)

    def __str__(self) -> str:
        return refusal_text(self.problems, self.warnings)


def refusal_text(problems: list[str], warnings: list[str] = ()) -> str:
    """The refusal as the user reads it: every problem, one a line (each names its file, line and
    key, and its fix), then the warnings found in the same pass."""
    count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    lines = [f"genomon-smk: invalid config or input, refused before any job ({count}; fix each, then run again):"]
    lines += [f"  {problem}" for problem in problems]
    if warnings:
        lines.append("and in the same pass:")
        lines += [f"  {warning}" for warning in warnings]
    return "\n".join(lines)
