"""Environment modules: every rule's `envmodules:` comes from config key `envmodules` by tool group,
and the install check (genomon_smk.plan.tool_check) finds tools on PATH or after a real
`module load` (Debian's Lmod, bin/install), naming a missing tool and how to get it."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO, parse_workflow, write_config
from genomon_smk.plan import tool_check

LMOD_INIT = Path("/usr/share/lmod/lmod/init/bash")
needs_lmod = pytest.mark.skipif(not LMOD_INIT.is_file(), reason="Lmod not installed (bin/install installs it)")


def test_every_rule_with_a_conda_env_loads_that_groups_modules():
    """Each `conda:` line has an `envmodules:` beside it naming the same tool group."""
    for path in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        text = path.read_text()
        condas = re.findall(r'conda:\n\s+"\.\./\.\./envs/(\w+)\.yaml"\n\s+envmodules:\n\s+\*env_modules\("(\w+)"\),',
                            text)
        assert len(condas) == len(re.findall(r"^\s+conda:$", text, re.M)), path.name
        assert all(env == group for env, group in condas), (path.name, condas)


def test_the_check_knows_every_tool_group_that_runs_external_tools():
    groups = {path.stem for path in (REPO / "envs").glob("*.yaml")}
    assert set(tool_check.TOOL_GROUPS) <= groups
    for tools in tool_check.TOOL_GROUPS.values():
        assert all(tool in tool_check.SOURCES for tool in tools)


def test_rules_load_the_configs_modules_by_group(tmp_path, testdata):
    config = write_config(tmp_path, testdata, envmodules={"map": ["bwa/0.7.17", "samtools/1.16.1"],
                                                          "markdup": "biobambam2/2.0.185"})
    workflow = parse_workflow(config)
    rules = {rule.name: rule for rule in workflow.rules}
    assert rules["map_reads"].env_modules.names == ("bwa/0.7.17", "samtools/1.16.1")
    assert rules["markdup"].env_modules.names == ("biobambam2/2.0.185",)
    # A group given nothing loads nothing: its tools come from PATH.
    assert rules["identify_mutations"].env_modules is None


def test_a_module_list_of_a_group_that_does_not_exist_is_refused(tmp_path, testdata):
    config = write_config(tmp_path, testdata, envmodules={"bwa": ["bwa/0.7.17"]})
    with pytest.raises(Exception, match="bwa"):
        parse_workflow(config)


def test_probe_output_is_parsed():
    probe = tool_check.parse_probe("found bwa /opt/bwa/bin/bwa\nmissing samtools\n")
    assert probe.found == {"bwa": "/opt/bwa/bin/bwa"} and probe.missing == ["samtools"]
    assert not probe.module_failed
    assert tool_check.parse_probe(f"{tool_check.MODULE_FAILED}\nmissing bwa\n").module_failed


def test_a_missing_tool_is_named_with_its_group_rules_and_sources():
    def probe(script):
        # Everything found except bwa.
        tools = re.findall(r"command -v (\S+)\)", script)
        return "\n".join(f"missing {t}" if t == "bwa" else f"found {t} /x/{t}" for t in tools)

    found, problems = tool_check.check({"map": "bwa/0.7.17 samtools"}, probe=probe)
    assert len(problems) == 1
    message = problems[0]
    assert message.startswith("missing: bwa (tool group 'map'")
    assert "map_reads" in message and "module load bwa/0.7.17 samtools" in message
    assert "module avail bwa" in message and "spack install bwa@0.7.17" in message
    assert "apt-get install bwa" in message
    assert "map: samtools = /x/samtools (module load bwa/0.7.17 samtools)" in found


def test_a_failed_load_is_reported_with_what_it_said_and_tools_found_anyway_come_from_path():
    def probe(script):
        if "module load biobambam2/9.9" not in script:  # the other groups: found on PATH
            return "\n".join(f"found {t} /usr/bin/{t}" for t in re.findall(r"command -v (\S+)\)", script))
        return (f"{tool_check.MODULE_ERROR} Lmod has detected the following error:\n{tool_check.MODULE_ERROR} \n"
                f"{tool_check.MODULE_ERROR}   \"biobambam2/9.9\" is unknown\n{tool_check.MODULE_FAILED}\n"
                "found bammerge /usr/bin/bammerge\nfound bammarkduplicates /usr/bin/bammarkduplicates\n"
                "found samtools /usr/bin/samtools\n")

    found, problems = tool_check.check({"markdup": ["biobambam2/9.9"]}, probe=probe)
    assert "markdup: samtools = /usr/bin/samtools (from PATH: the module load failed)" in found
    assert not any("(module load biobambam2/9.9)" in line for line in found)
    failed = [p for p in problems if "`module load biobambam2/9.9` failed" in p]
    assert failed and 'saying: Lmod has detected the following error:; "biobambam2/9.9" is unknown.' in failed[0]


def test_the_probe_loads_the_modules_before_looking():
    script = tool_check.probe_script(("bwa",), ["bwa/0.7.17"])
    assert script.index("module load bwa/0.7.17") < script.index("command -v bwa")
    assert "module load" not in tool_check.probe_script(("bwa",), [])


def test_config_envmodules_later_files_override_per_group(tmp_path):
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(yaml.safe_dump({"envmodules": {"map": ["bwa/1"], "qc": ["mosdepth/1"]}}))
    second.write_text(yaml.safe_dump({"envmodules": {"map": ["bwa/2"]}}))
    assert tool_check.config_envmodules([str(first), str(second)]) == {"map": ["bwa/2"], "qc": ["mosdepth/1"]}


def modulefiles(root: Path, tools: dict[str, list[str]]) -> Path:
    """Lmod modulefiles NAME/VERSION.lua, each putting a directory of links to Debian's binaries
    (outside PATH) first on PATH: modules as a site's, for tools that are not on PATH."""
    for module, binaries in tools.items():
        name, version = module.split("/")
        bindir = root / "software" / name / version / "bin"
        bindir.mkdir(parents=True)
        for binary in binaries:
            (bindir / binary).symlink_to(shutil.which(binary) or f"/usr/bin/{binary}")
        (root / "modulefiles" / name).mkdir(parents=True, exist_ok=True)
        (root / "modulefiles" / name / f"{version}.lua").write_text(f'prepend_path("PATH", "{bindir}")\n')
    return root / "modulefiles"


@needs_lmod
def test_the_check_loads_real_lmod_modules(tmp_path):
    """With Lmod's `module` and a MODULEPATH of site-like modulefiles, the check finds bwa only
    after loading its module, from a PATH that has no bwa; a bad module name is a problem."""
    path_dir = tmp_path / "path"
    path_dir.mkdir()
    for tool in ("bash", "env", "lua", "lua5.3", "dirname", "basename", "readlink", "expr", "ps", "cat", "tr", "sed"):
        if shutil.which(tool):
            (path_dir / tool).symlink_to(shutil.which(tool))
    modulepath = modulefiles(tmp_path, {"bwa/0.7.17": ["bwa"]})
    env = {"HOME": str(tmp_path), "PATH": str(path_dir), "MODULEPATH": str(modulepath), "LMOD_ALLOW_ROOT_USE": "yes"}

    def probe(script):
        return subprocess.run(["bash", "-c", f"source {LMOD_INIT} >/dev/null 2>&1\n{script}"],
                              capture_output=True, text=True, env=env).stdout

    found, problems = tool_check.check({"map": ["bwa/0.7.17"]}, probe=probe)
    assert f"map: bwa = {modulepath.parent}/software/bwa/0.7.17/bin/bwa (module load bwa/0.7.17)" in found
    assert any(p.startswith("missing: samtools (tool group 'map'") for p in problems)
    assert not any("bwa" in p.split("(")[0] for p in problems)

    _, problems = tool_check.check({"map": ["bwa/9.9"]}, probe=probe)
    # Lmod's own words come with the message.
    assert any("`module load bwa/9.9` failed" in p and "unknown" in p and "bwa/9.9" in p.split("saying:")[1]
               for p in problems if "saying:" in p), problems
    assert os.environ.get("MODULEPATH") != str(modulepath)  # the host's own environment untouched
