"""MkDocs hook: the relative links of the repository's front-page documents
(README.md, CHANGELOG.md, bench/README.md, examples/README.md) point at files
that exist, and their links into docs/ at headings that exist.

MkDocs checks the links inside docs/ itself; these files live outside it, so
without this hook a renamed page or heading would break the README silently.
"""
import re
from pathlib import Path

from mkdocs.exceptions import PluginError

_DOCUMENTS = ["README.md", "CHANGELOG.md", "bench/README.md", "examples/README.md"]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_anchors = {}  # docs-relative page path -> its heading ids


def _ids(toc):
    for item in toc:
        yield item.id
        yield from _ids(item.children)


def on_page_context(context, page, config, nav):
    _anchors[page.file.src_uri] = set(_ids(page.toc))
    return context


def on_post_build(config):
    root = Path(config["config_file_path"]).parent
    docs = Path(config["docs_dir"]).resolve()
    problems = []
    for name in _DOCUMENTS:
        document = root / name
        if not document.exists():
            continue
        for target in _LINK.findall(document.read_text()):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # a URL, or an anchor within the document
            path, _, anchor = target.partition("#")
            resolved = (document.parent / path).resolve()
            if not resolved.exists():
                problems.append(f"{name}: {target}: no such file")
                continue
            if anchor and resolved.is_relative_to(docs):
                page = resolved.relative_to(docs).as_posix()
                if anchor not in _anchors.get(page, set()):
                    problems.append(f"{name}: {target}: no heading #{anchor} in docs/{page}")
    if problems:
        raise PluginError("broken links outside docs/:\n  " + "\n  ".join(problems))
