"""MkDocs hook: every public class and function of ffcv_go has a page in the
API reference.

The reference pages (docs/reference/*.md) are written by hand, grouped the way
a reader looks for things; each renders objects with mkdocstrings'
``::: identifier`` blocks. This hook lists the public classes and functions of
every public module of python/ffcv_go (griffe's notion of public: named in
``__all__`` where a module has one, otherwise not underscored and not
imported) and fails the build when one of them is rendered by no block, so a
new public name cannot ship without its page.
"""
import re
from pathlib import Path

import griffe
from mkdocs.exceptions import PluginError

# A ::: block and its indented options; a members: [...] option limits what
# a module's block renders.
_BLOCK = re.compile(r"^:::\s+([\w.]+)[ \t]*\n((?:[ \t]+\S.*\n?)*)", re.MULTILINE)
_MEMBERS = re.compile(r"^\s*members:\s*\[([^\]]*)\]", re.MULTILINE)


def _public(obj, only=None):
    """The public classes and functions among obj's members (those named in
    only, if given), by the path where each is defined (re-exports resolved)."""
    found = set()
    for member in obj.members.values():
        if member.name.startswith("_") or not member.is_public:
            continue
        if only is not None and member.name not in only:
            continue
        try:
            target = member.final_target if member.is_alias else member
        except griffe.AliasResolutionError:
            continue  # imported from outside ffcv_go
        if (target.is_class or target.is_function) and target.path.startswith("ffcv_go."):
            found.add(target.path)
    return found


def _modules(module):
    yield module
    for name, sub in module.modules.items():
        if not name.startswith("_") and not sub.is_alias:
            yield from _modules(sub)


def on_pre_build(config):
    root = Path(config["config_file_path"]).parent
    package = griffe.load("ffcv_go", search_paths=[str(root / "python")])
    wanted = set()
    for module in _modules(package):
        wanted |= _public(module)

    shown = set()
    for page in sorted((Path(config["docs_dir"]) / "reference").glob("*.md")):
        for ident, options in _BLOCK.findall(page.read_text()):
            obj = package if ident == "ffcv_go" else package[ident.removeprefix("ffcv_go.")]
            obj = obj.final_target if obj.is_alias else obj
            members = _MEMBERS.search(options)
            only = None if members is None else {m.strip() for m in members.group(1).split(",") if m.strip()}
            shown |= _public(obj, only) if obj.is_module else {obj.path}

    missing = sorted(wanted - shown)
    if missing:
        raise PluginError("public names with no page in docs/reference/ (add a ::: block for each):\n  "
                          + "\n  ".join(missing))
