"""Environment modules: with `--sdm env-modules` every rule loads the modules that config key
`envmodules` names for its tool group (the envs/*.yaml file its `conda:` names: map, markdup,
python, qc, sv, plot, paplot), for clusters whose tools come from Lmod, Environment Modules or
Spack-generated modulefiles instead of conda. A group given no modules runs its tools from PATH.
"""


def env_modules(group):
    """The module names the jobs of tool group `group` load (a list; empty = from PATH)."""
    if not (WORKFLOW_DIR.parent / "envs" / f"{group}.yaml").is_file():
        raise WorkflowError(f"env_modules: no tool group {group!r} (envs/{group}.yaml)")
    names = config["envmodules"].get(group) or []
    return names.split() if isinstance(names, str) else list(names)
